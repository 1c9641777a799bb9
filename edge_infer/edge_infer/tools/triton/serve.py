# Copyright 2026 edge_infer contributors. Apache-2.0.
"""``edge_infer serve``: a real Triton Inference Server serving the registry's models.

    edge_infer serve [--models nanodet,mobilenet_v2] [--max-batch 8] [--queue-delay-us 100]
                     [--instances 1] [--input u8|float] [--rows-floor 0.05]
                     [--address 0.0.0.0] [--grpc-port 8001] [--repo DIR]
                     [--tls-cert C --tls-key K [--tls-client-ca CA]] [--token-file F]
    edge_infer serve --write-repo DIR [--backend auto|onnxruntime|openvino]

The engine is the ``tritonserver`` binary nvidia-pytriton bundles, run from
its own venv (:mod:`.server_env`). Each model runs inside it, through the
Python backend (:mod:`.served_model`), on the library this machine's backend
manager measured best for it among those the server can run (ONNX Runtime
CPU, OpenVINO CPU: the profile cache's figures, or a measurement of those
now). gRPC only (no HTTP, no metrics port). ``--write-repo`` writes a
repository for a stock tritonserver instead (ONNX Runtime or OpenVINO
backend) and exits. docs/triton.md says what maps to what.
"""

import argparse
import os
import pathlib
import signal
import subprocess
import sys
import time
from typing import Callable, List, Optional, Sequence, Set, Tuple

from . import batch_dim, repository, server_env
from .served_model import servable
from ... import shm
from ...backends.libs.triton_rows import DEFAULT_FLOOR

Log = Callable[[str], None]
READY_LINE = 'Started GRPCInferenceService at'
PYTHON_SHM_BYTES = 16 << 20     # the Python backend's region per model instance
TOKEN_PROTOCOLS = ('health,metadata,inference,shared-memory,model-config,model-repository,'
                   'statistics,trace,logging')


def source_link(root: pathlib.Path) -> pathlib.Path:
    """Return a folder holding only a link to this edge_infer package (the server's sys.path).

    Never the package's parent itself: an installed package's parent is the
    main environment's site-packages (numpy 2), which the server's Python
    must not see.
    """
    # this file's package, not edge_infer.__file__: run from a checkout's root,
    # 'edge_infer' may resolve to the ament package folder (a namespace, no file)
    package = pathlib.Path(__file__).resolve().parents[2]
    folder = root / 'source'
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / 'edge_infer'
    if not (link.is_symlink() and link.resolve() == package):
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(package, target_is_directory=True)
    return folder


def choose_served(manager, spec, path: pathlib.Path, log: Log,
                  use_cache: bool = True) -> Tuple[str, str]:
    """Return (candidate to serve with, why): the best measured among what the server runs.

    The profile's overall choice where the server can run it; else the best
    of the servable candidates (measured now where the cache has no figures).
    """
    overall = manager.profile(spec, path, measure=False)
    best, _ = manager.select(overall.results, spec)
    names = [b.name for b in manager.candidates(spec, path) if servable(b.name)]
    _, run = manager.choose(spec, path, only=names, use_cache=use_cache)
    why = run.why
    # a +pre twin is its library with the normalisation in the graph: served as
    # that library (the server takes the u8 frame with --input u8 either way)
    if best is not None and best.backend.replace('+pre', '') != run.chosen:
        why = (f'the profile chose {best.backend}, which this server does not run '
               f'(ONNX Runtime CPU and OpenVINO CPU only): the best of those instead; {why}')
    return run.chosen, why


class Server:
    """A tritonserver process serving a repository (started, awaited, stopped)."""

    def __init__(self, env: server_env.ServerEnv, repo: pathlib.Path, grpc_port: int = 8001,
                 address: str = '0.0.0.0', log_path: Optional[pathlib.Path] = None,
                 tls_cert: str = '', tls_key: str = '', tls_client_ca: str = '',
                 token: str = ''):
        self.env, self.repo, self.port, self.address = env, repo, grpc_port, address
        self.tls_cert, self.tls_key, self.tls_client_ca = tls_cert, tls_key, tls_client_ca
        self.token = token
        self.log_path = log_path or repo.parent / f'tritonserver_{grpc_port}.log'
        self.proc: Optional[subprocess.Popen] = None
        self.regions_before: Set[pathlib.Path] = set()     # /dev/shm's regions at start

    def command(self) -> List[str]:
        """Return the server's command line."""
        return [str(self.env.server), '--model-repository', str(self.repo),
                '--backend-directory', str(self.env.backends),
                '--grpc-port', str(self.port), '--grpc-address', self.address,
                '--allow-http', 'false', '--allow-metrics', 'false',
                '--backend-config', f'python,shm-default-byte-size={PYTHON_SHM_BYTES}',
                '--backend-config', f'python,shm-growth-byte-size={PYTHON_SHM_BYTES}',
                '--exit-on-error', 'true', '--log-verbose', '0'] + self.security_args()

    def security_args(self) -> List[str]:
        """Return the TLS and token flags (none without --tls-cert or a token)."""
        out: List[str] = []
        if self.tls_cert:
            out += ['--grpc-use-ssl', 'true', '--grpc-server-cert', self.tls_cert,
                    '--grpc-server-key', self.tls_key]
            if self.tls_client_ca:      # mutual TLS: robots show a certificate it signed
                out += ['--grpc-use-ssl-mutual', 'true', '--grpc-root-cert', self.tls_client_ca]
        if self.token:      # every gRPC protocol wants 'authorization: Bearer <token>'
            out.append(f'--grpc-restricted-protocol={TOKEN_PROTOCOLS}:authorization=Bearer '
                       f'{self.token}')
        return out

    def start(self, log: Optional[Callable[[str], None]] = None) -> 'Server':
        """Start the server process (its output goes to ``log_path``).

        First, the Python backend regions dead servers of this user left in
        /dev/shm go (``log``: one line if any did).
        """
        shm.clean_triton(log=log)
        self.regions_before = shm.triton_regions()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, 'wb') as out:
            self.proc = subprocess.Popen(self.command(), env=self.env.env(), stdout=out,
                                         stderr=subprocess.STDOUT, cwd=str(self.repo.parent),
                                         start_new_session=True)
        return self

    def log_text(self) -> str:
        """Return the server's output so far."""
        try:
            return self.log_path.read_text(errors='replace')
        except OSError:
            return ''

    def wait_ready(self, timeout_s: float = 120.0) -> float:
        """Wait until the server serves gRPC; return the seconds it took (RuntimeError if not)."""
        assert self.proc is not None
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            if READY_LINE in self.log_text():
                return time.monotonic() - t0
            if self.proc.poll() is not None:
                raise RuntimeError(f'tritonserver exited ({self.proc.returncode}): '
                                   f'{failure(self.log_text())}')
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f'tritonserver not ready after {timeout_s:.0f} s: '
                           f'{failure(self.log_text())}')

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL to its group after ``timeout_s``).

        Also once it died by itself or was killed: what is left of its
        process group (the Python backend's stubs) is killed, and the regions
        it made that nobody maps any more are removed from /dev/shm.
        """
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        _end_group(self.proc.pid)
        shm.clean_triton(min_age_s=0.0, among=shm.triton_regions() - self.regions_before)


def _end_group(pgid: int, timeout_s: float = 2.0) -> None:
    """Kill what is left of group ``pgid`` once the server itself exited; wait ``timeout_s``.

    What is left are the Python backend's stub processes, which would exit
    on their own a second or two later (they poll for their parent) and map
    the regions until then. A member killed but not yet reaped (a zombie maps
    nothing) is not waited for longer.
    """
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.02)


def exposure(address: str, tls: bool, token: bool) -> str:
    """Return what a listener on ``address`` exposes ('' on loopback or with TLS)."""
    if address in ('127.0.0.1', 'localhost', '::1') or address.startswith('127.'):
        return ''
    if not tls:
        return ('without TLS: the frames and results cross the network in clear' +
                (', the token too' if token else ', and anyone on it can use the server'))
    return ''


def failure(log: str) -> str:
    """Return the lines of a server log that say why it failed (the last few)."""
    lines = [ln.strip() for ln in log.splitlines()
             if ln.startswith('E') or 'error' in ln.lower() or 'failed' in ln.lower()]
    return ' | '.join(lines[-3:]) or (log.strip().splitlines() or ['no output'])[-1]


def _models(names: Sequence[str]):
    from ... import paths
    from ...checksums import sha256_file
    from ...core.registry import load_models
    reg = load_models()
    unknown = [n for n in names if n not in reg]
    if unknown:
        raise SystemExit(f"edge_infer serve: not in the registry: {', '.join(unknown)} "
                         f"(known: {', '.join(sorted(reg))})")
    out = []
    for name in names or sorted(reg):
        path = paths.models_dir() / reg[name].file
        if not path.is_file():
            if names:
                raise SystemExit(f'edge_infer serve: {path} is missing (edge_infer prepare)')
            continue
        out.append((reg[name], path, sha256_file(path)))
    return out


def write_repo(out: pathlib.Path, models, manager, backend: str, max_batch: int,
               queue_delay_us: int, instances: int, log: Log) -> None:
    """Write a stock tritonserver repository for ``models`` into ``out``."""
    for spec, path, sha in models:
        chosen = ''
        if backend == 'auto':
            chosen, _ = choose_served(manager, spec, path, log)
        kind = repository.stock_backend(chosen) if backend == 'auto' else backend
        batched, why_not = batch_dim.batched_copy(path) if max_batch > 0 else (None, '')
        folder = repository.write_stock(out, spec.name, path, sha, kind, chosen, max_batch,
                                        queue_delay_us, instances, batched, why_not)
        log(f'[serve] {folder}: {kind} backend'
            + (f' (measured best here: {chosen})' if chosen else '')
            + ('' if batched is not None or max_batch == 0
               else f', no batching: {why_not}'))


def build_served_repo(repo: pathlib.Path, models, manager, max_batch: int,
                      queue_delay_us: int, instances: int, log: Log,
                      use_cache: bool = True, force: str = '', u8: bool = True,
                      rows_floor: float = 0.0) -> None:
    """Write the repository ``edge_infer serve`` serves (old model folders removed).

    ``u8``: the robots send the resized uint8 frame and the server normalises
    it (a quarter of the float tensor's bytes on the network). ``rows_floor``
    > 0: a detector with a sparse form sends only the cells scoring that much
    (backends/libs/triton_rows.py).
    """
    import shutil
    if repo.exists():
        shutil.rmtree(repo)
    repo.mkdir(parents=True)
    source = source_link(repo.parent)
    for spec, path, sha in models:
        if force:
            chosen, why = force, 'forced (--backend)'
        else:
            chosen, why = choose_served(manager, spec, path, log, use_cache)
        plan = repository.rows_plan_for(spec, path, rows_floor) if rows_floor > 0 else None
        repository.write_served(repo, spec.name, path, sha, chosen, source, max_batch,
                                queue_delay_us, instances, spec.input_spec if u8 else None,
                                plan)
        log(f'[serve] {spec.name}: {chosen} ({why.split(";")[0]}), '
            f"{'uint8 frame' if u8 else 'float tensor'} in, "
            f"{f'the cells scoring {rows_floor:g}+ out' if plan else 'dense outputs'}, "
            f'sha256 {sha[:12]}')


def main(argv=None) -> int:
    """Serve the registry's models with Triton, or write a stock repository."""
    ap = argparse.ArgumentParser(prog='edge_infer serve', description=__doc__.splitlines()[0])
    ap.add_argument('--models', default='', help='comma-separated registry names (default all)')
    ap.add_argument('--max-batch', type=int, default=8,
                    help='dynamic batching: most requests per batch (0 = no batching)')
    ap.add_argument('--queue-delay-us', type=int, default=100,
                    help='dynamic batching: how long a request may wait for others')
    ap.add_argument('--instances', type=int, default=1, help='model instances (processes)')
    ap.add_argument('--input', choices=('u8', 'float'), default='u8',
                    help='what robots send: u8 = the resized frame, normalised on the server '
                         "(a quarter of the bytes); float = the model's own input tensor")
    ap.add_argument('--rows-floor', type=float, default=DEFAULT_FLOOR,
                    help='detectors with a sparse form (NanoDet) send only the cells whose '
                         'best score reaches this; robots must keep scores over it '
                         '(0 = the dense outputs)')
    ap.add_argument('--address', default='0.0.0.0', help='gRPC listen address')
    ap.add_argument('--grpc-port', type=int, default=8001)
    ap.add_argument('--repo', type=pathlib.Path, default=None,
                    help='where the served repository is written '
                         '(default $EDGE_INFER_HOME/triton/repo)')
    ap.add_argument('--write-repo', type=pathlib.Path, default=None,
                    help='write a repository for a stock tritonserver here, and exit')
    ap.add_argument('--backend', default='auto',
                    help='--write-repo: auto (the measured choice) | onnxruntime | openvino; '
                         'serving: auto or a servable candidate, e.g. onnxruntime/cpu/t1')
    ap.add_argument('--no-cache', action='store_true', help='measure again')
    ap.add_argument('--tls-cert', default='', help='gRPC over TLS: the server certificate (PEM)')
    ap.add_argument('--tls-key', default='', help='gRPC over TLS: its private key (PEM)')
    ap.add_argument('--tls-client-ca', default='',
                    help='mutual TLS: robots must show a certificate this CA (PEM) signed')
    ap.add_argument('--token-file', type=pathlib.Path, default=None,
                    help="a file holding a token every request must carry as 'authorization: "
                         "Bearer <token>' (the robot's remote_token)")
    args = ap.parse_args(argv)
    if bool(args.tls_cert) != bool(args.tls_key) or (args.tls_client_ca and not args.tls_cert):
        ap.error('--tls-cert and --tls-key go together; --tls-client-ca needs them')
    token = args.token_file.read_text().strip() if args.token_file else ''
    if args.max_batch < 0 or args.queue_delay_us < 0 or args.instances < 1:
        ap.error('--max-batch and --queue-delay-us must be >= 0, --instances >= 1')
    from ...backends.config import load_config
    from ...backends.manager import BackendManager
    models = _models([n for n in args.models.split(',') if n])
    config = load_config()
    config['remote_servers'] = []       # a server never measures servers
    manager = BackendManager(config=config, log=print)
    if args.write_repo:
        if args.backend not in ('auto', 'onnxruntime', 'openvino'):
            ap.error('--write-repo --backend: auto, onnxruntime or openvino')
        write_repo(args.write_repo, models, manager, args.backend, args.max_batch,
                   args.queue_delay_us, args.instances, print)
        print(f'[serve] repository for a stock tritonserver: {args.write_repo.resolve()}')
        return 0
    force = '' if args.backend == 'auto' else args.backend
    if force and not servable(force):
        ap.error(f'--backend {force}: not servable here (onnxruntime/cpu/tN, openvino/cpu/tN'
                 '[/bf16|/fp16])')
    try:
        env = server_env.ensure(log=print)
    except RuntimeError as exc:
        print(f'edge_infer serve: {exc}', file=sys.stderr)
        return 1
    repo = args.repo or server_env.home() / 'repo'
    build_served_repo(repo, models, manager, args.max_batch, args.queue_delay_us,
                      args.instances, print, not args.no_cache, force, args.input == 'u8',
                      args.rows_floor)
    warning = exposure(args.address, bool(args.tls_cert), bool(token))
    if warning:
        print(f'[serve] WARNING: gRPC on {args.address}:{args.grpc_port} {warning} '
              '(docs/triton.md, security)')
    server = Server(env, repo, args.grpc_port, args.address, tls_cert=args.tls_cert,
                    tls_key=args.tls_key, tls_client_ca=args.tls_client_ca,
                    token=token).start(log=lambda line: print(f'[serve] {line}'))
    try:
        took = server.wait_ready()
        print(f'[serve] ready in {took:.1f} s: grpc://{args.address}:{args.grpc_port}, '
              f'{len(models)} model(s); log {server.log_path}; Ctrl-C stops', flush=True)
        assert server.proc is not None
        return server.proc.wait()
    except RuntimeError as exc:
        print(f'edge_infer serve: {exc}', file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()
