# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The bundled Triton server for the tests and bench/: a repository in a folder, a free port.

    with served(tmp_path, {'nanodet': 'onnxruntime/cpu/t1'}) as server:
        url = server.url

The server is the real one (``edge_infer serve``'s: nvidia-pytriton's
tritonserver in its own venv, made here where missing); :func:`skip_reason`
says why it cannot run on this machine ('' where it can).
"""

import contextlib
import pathlib
import socket
from typing import Dict, Iterator, Optional

from edge_infer.backends.libs.triton_rows import DEFAULT_FLOOR
from edge_infer.checksums import sha256_file
from edge_infer.tools.triton import repository, serve, server_env


def skip_reason() -> str:
    """Return why the bundled server cannot run here, or tritonclient is missing ('' if fine)."""
    why = server_env.unavailable_reason()
    if why:
        return why
    try:
        import tritonclient.grpc  # noqa: F401
    except (ImportError, RuntimeError) as exc:     # RuntimeError: no grpc extra
        return f"tritonclient not installed ({exc}): pip install 'tritonclient[grpc]'"
    return ''


def free_port() -> int:
    """Return a TCP port nothing listens on now."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return int(s.getsockname()[1])


def write_repo(root: pathlib.Path, models: Dict[str, str], max_batch: int = 8,
               queue_delay_us: int = 100, sha_override: Optional[Dict[str, str]] = None,
               u8: bool = True, rows_floor: float = DEFAULT_FLOOR) -> pathlib.Path:
    """Write a served repository of registry models on named backends; return it.

    ``u8``: the served input is the uint8 frame (edge_infer serve's default);
    ``rows_floor``: a detector sends only the cells scoring that much (0: dense).

    ``sha_override``: a model's recorded sha256 replaced (a server whose file
    differs from the config, which must refuse to load it).
    """
    from edge_infer import paths
    from edge_infer.core.registry import load_models
    reg = load_models()
    repo = root / 'repo'
    source = serve.source_link(root)
    for name, backend in models.items():
        path = paths.models_dir() / reg[name].file
        sha = (sha_override or {}).get(name) or sha256_file(path)
        plan = repository.rows_plan_for(reg[name], path, rows_floor) if rows_floor else None
        repository.write_served(repo, name, path, sha, backend, source, max_batch,
                                queue_delay_us, input_spec=reg[name].input_spec if u8 else None,
                                rows_plan=plan)
    return repo


class Running:
    """A started server: its url, the Server object, how long it took to be ready."""

    def __init__(self, server: serve.Server, ready_s: float):
        self.server, self.ready_s = server, ready_s
        self.url = f'grpc://127.0.0.1:{server.port}'


@contextlib.contextmanager
def served(root: pathlib.Path, models: Dict[str, str], max_batch: int = 8,
           queue_delay_us: int = 100, port: int = 0, u8: bool = True,
           rows_floor: float = DEFAULT_FLOOR, **security: str) -> Iterator[Running]:
    """Serve ``models`` ({registry name: servable backend}) on loopback; stop on exit.

    ``security``: serve.Server's tls_cert, tls_key, tls_client_ca, token.
    """
    env = server_env.ensure(log=lambda line: None)
    repo = write_repo(root, models, max_batch, queue_delay_us, u8=u8, rows_floor=rows_floor)
    server = serve.Server(env, repo, port or free_port(), '127.0.0.1',
                          tls_cert=security.get('tls_cert', ''),
                          tls_key=security.get('tls_key', ''),
                          tls_client_ca=security.get('tls_client_ca', ''),
                          token=security.get('token', '')).start()
    try:
        yield Running(server, server.wait_ready())
    finally:
        server.stop()
