# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A Triton Inference Server on the network as candidates: ``triton/<host>/<model>``.

One candidate per server of the manager's ``remote_servers`` (``grpc://host:port``)
and model. It is measured like every candidate, as the node sees it: the
input written out, the network, the server's queue and compute, the outputs
read back. The accuracy check judges it like any other library.

- **Transport.** On the same host (loopback address) the tensors go through
  Triton's system shared memory (``tritonclient.utils.shared_memory``): the
  input is copied into a region the server reads, the outputs land in a
  region read in place; only the request's header travels over gRPC. Where
  registering the regions fails (a server in another container that does not
  share ``/dev/shm``) it uses plain gRPC, and says so. Elsewhere: gRPC.
- **Never stalled by a slow answer.** Each request is sent asynchronously and
  waited for at most ``remote_timeout_ms``; a late answer fails that frame
  (the caller's fallback serves it) and lands, unread, in its own regions:
  the next frame takes another pair (at most :data:`MAX_REGIONS`).
- **Refusals.** ``available()`` asks the server (a short timeout): down or
  unreachable, the model not served, or the server's copy of the file
  differs from the robot's (``edge_infer_sha256`` in the model's config,
  written by ``edge_infer serve``; a repository without it is refused too):
  unavailable, with that reason in one line. Nothing is cached about a
  server's availability: it is asked again at every profile.
- The server's own compute time per request, where it reports it (our
  Python backend model's ``edge_infer_compute_us`` output), is kept on the
  session (``remote_compute_ms``): bench/product/triton_overhead.py subtracts it.
"""

import itertools
import os
import pathlib
import threading
import time
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import urlsplit

import numpy as np

from . import installed
from .triton_rows import Plan, Rebuild
from ...core.backend import Backend, BackendError, first_line, Session

SHA_KEY = 'edge_infer_sha256'
COMPUTE_OUTPUT = 'edge_infer_compute_us'
DEFAULT_PORT = 8001
MAX_REGIONS = 4         # region pairs one session may hold while answers are late
ASK_TIMEOUT_S = 1.0     # a server that does not answer availability within this is down
INSTALL = "pip install 'tritonclient[grpc]'"
LOOPBACK = ('localhost', '127.0.0.1', '::1', 'ip6-localhost')
_ids = itertools.count()


def parse_url(url: str) -> Tuple[str, int]:
    """Return (host, port) of ``grpc://host:port`` (ValueError for another form)."""
    parts = urlsplit(url if '://' in url else f'grpc://{url}')
    if parts.scheme != 'grpc' or not parts.hostname:
        raise ValueError(f"remote server '{url}': use grpc://host:port")
    return parts.hostname, parts.port or DEFAULT_PORT


def is_loopback(host: str) -> bool:
    """Return True for an address of this host's loopback interface."""
    return host in LOOPBACK or host.startswith('127.')


def _np_type(triton_type: str):
    return {'TYPE_FP32': np.float32, 'TYPE_FP16': np.float16, 'TYPE_INT64': np.int64,
            'TYPE_INT32': np.int32, 'TYPE_UINT8': np.uint8}.get(triton_type)


class _Model:
    """What the server says about a model: shapes of its outputs, file hash, backend."""

    def __init__(self, config: dict):
        self.config = config
        self.params = {k: v.get('string_value', '')
                       for k, v in config.get('parameters', {}).items()}
        self.sha256 = self.params.get(SHA_KEY, '')
        self.served_by = self.params.get('edge_infer_backend', '') or config.get('backend', '')
        batched = int(config.get('max_batch_size', 0) or 0) > 0
        self.input_name = config['input'][0]['name']
        # TYPE_UINT8: the resized frame, normalised on the server (edge_infer serve's
        # default); else the model's float tensor
        self.input_type = 'UINT8' if config['input'][0]['data_type'] == 'TYPE_UINT8' else 'FP32'
        self.input_kind = 'u8' if self.input_type == 'UINT8' else 'float'
        self.input_dtype = np.dtype(np.uint8 if self.input_kind == 'u8' else np.float32)
        # the cell rows that can hold a detection instead of the dense outputs
        # (edge_infer serve --rows-floor): sized for every cell, sliced per answer
        self.rows_plan = Plan.from_params(self.params)
        cells = sum(self.rows_plan.cells) if self.rows_plan else 0
        self.outputs: List[Tuple[str, List[int], np.dtype]] = []
        self.has_compute = False
        for o in config['output']:
            if o['name'] == COMPUTE_OUTPUT:
                self.has_compute = True
                continue
            dims = [int(d) if int(d) >= 0 else cells for d in o['dims']]
            self.outputs.append((o['name'], [1] + dims if batched else dims,
                                 np.dtype(_np_type(o['data_type']) or np.float32)))
        # what the session returns: the dense outputs (rebuilt from the rows where sent)
        self.output_names = ([n for n, _ in self.rows_plan.dense] if self.rows_plan
                             else [n for n, _, _ in self.outputs])


class TritonSession(Session):
    """A model on a Triton server: each run one asynchronous request, waited for with a limit."""

    def __init__(self, backend: 'TritonBackend', client, model: _Model):
        import tritonclient.grpc as grpcclient
        self._g = grpcclient
        self._client = client
        self._model = model
        self._backend = backend
        self.backend_name = backend.name
        self.input_name = model.input_name
        self.input_kind = model.input_kind
        self.output_names = list(model.output_names)
        self._rebuild = Rebuild(model.rows_plan) if model.rows_plan else None
        self.rows_floor = model.rows_plan.floor if model.rows_plan else 0.0
        self.remote_compute_ms = float('nan')
        self.transport = 'shm' if backend.use_shm else 'grpc'
        self._timeout_s = backend.timeout_ms / 1e3
        self._pairs: List[dict] = []        # shared-memory regions: input, outputs, views
        self._requested = [grpcclient.InferRequestedOutput(n) for n, _, _ in model.outputs]
        if model.has_compute:
            self._requested.append(grpcclient.InferRequestedOutput(COMPUTE_OUTPUT))
        self.note = ''
        self.broken = False     # a frame failed: the server died, stalls or refused

    # ------------------------------------------------------------ shared memory
    def _new_pair(self, x: np.ndarray) -> Optional[dict]:
        """Create and register one input and one output region; None when it cannot."""
        import tritonclient.utils.shared_memory as shm
        out_bytes = sum(int(np.prod(s)) * np.dtype(t).itemsize
                        for _, s, t in self._model.outputs)
        tag = f'edge_infer_{os.getpid()}_{next(_ids)}'
        ask = {'headers': self._backend.headers, 'client_timeout': ASK_TIMEOUT_S}
        handles = []
        try:
            hin = shm.create_shared_memory_region(f'{tag}_in', f'/{tag}_in', x.nbytes)
            handles.append(hin)
            hout = shm.create_shared_memory_region(f'{tag}_out', f'/{tag}_out', out_bytes)
            handles.append(hout)
            self._client.register_system_shared_memory(f'{tag}_in', f'/{tag}_in', x.nbytes, **ask)
            self._client.register_system_shared_memory(f'{tag}_out', f'/{tag}_out', out_bytes,
                                                       **ask)
        except Exception as exc:  # no /dev/shm in common with the server
            self.note = f'system shared memory refused ({first_line(exc)}): plain gRPC'
            self._drop(tag, handles)
            return None
        inp = self._g.InferInput(self.input_name, list(x.shape), self._model.input_type)
        inp.set_shared_memory(f'{tag}_in', x.nbytes)
        requested, views, offset = [], [], 0
        for name, shape, dtype in self._model.outputs:
            size = int(np.prod(shape)) * np.dtype(dtype).itemsize
            req = self._g.InferRequestedOutput(name)
            req.set_shared_memory(f'{tag}_out', size, offset)
            requested.append(req)
            views.append(shm.get_contents_as_numpy(hout, dtype, shape, offset))
            offset += size
        if self._model.has_compute:
            requested.append(self._g.InferRequestedOutput(COMPUTE_OUTPUT))
        pair = {'tag': tag, 'in': hin, 'out': hout, 'input': inp, 'requested': requested,
                'views': views, 'busy': False, 'shape': x.shape,
                'in_view': shm.get_contents_as_numpy(hin, x.dtype, x.shape)}
        self._pairs.append(pair)
        return pair

    def _drop(self, tag: str, handles) -> None:
        import tritonclient.utils.shared_memory as shm
        for suffix in ('_in', '_out'):
            for _ in range(40):     # Triton holds a region a moment after the answer
                try:
                    self._client.unregister_system_shared_memory(
                        f'{tag}{suffix}', headers=self._backend.headers,
                        client_timeout=ASK_TIMEOUT_S)
                    break
                except Exception as exc:  # in use, never registered, or the server is gone
                    if 'in use' not in str(exc):
                        break
                    time.sleep(0.005)
        for h in handles:
            try:
                shm.destroy_shared_memory_region(h)
            except Exception:  # already gone
                pass

    def _pair_for(self, x: np.ndarray) -> Optional[dict]:
        for pair in self._pairs:
            if not pair['busy'] and pair['shape'] == x.shape:
                return pair
        if len(self._pairs) >= MAX_REGIONS:
            raise BackendError(f'{self.backend_name}: {MAX_REGIONS} requests still '
                               'unanswered: the server stalls')
        return self._new_pair(x)

    # --------------------------------------------------------------------- run
    def run(self, tensor: np.ndarray) -> List[np.ndarray]:
        """Send one frame and wait for its answer (BackendError when late or refused)."""
        dtype = self._model.input_dtype
        x = tensor if tensor.dtype == dtype else tensor.astype(dtype)
        pair = self._pair_for(x) if self.transport == 'shm' else None
        if pair is None:
            self.transport = 'grpc'
            inp = self._g.InferInput(self.input_name, list(x.shape), self._model.input_type)
            inp.set_data_from_numpy(np.ascontiguousarray(x))
            inputs, requested = [inp], self._requested
        else:
            np.copyto(pair['in_view'], x)
            inputs, requested = [pair['input']], pair['requested']
            pair['busy'] = True
        done = threading.Event()
        box: Dict[str, Any] = {}

        def answered(result, error) -> None:
            box['result'], box['error'] = result, error
            if pair is not None:
                pair['busy'] = False    # a late answer frees its regions when it lands
            done.set()
        try:
            # no gRPC deadline: an expired one would free the regions while the
            # server may still write the answer into them (the next frame's)
            self._client.async_infer(self._model.config['name'], inputs, answered,
                                     outputs=requested, headers=self._backend.headers)
        except Exception as exc:  # the channel is gone
            self.broken = True
            if pair is not None:
                pair['busy'] = False
            raise BackendError(f'{self.backend_name}: {first_line(exc)}') from None
        if not done.wait(self._timeout_s):
            self.broken = True
            raise BackendError(f'{self.backend_name}: no answer within '
                               f'{self._timeout_s * 1e3:.0f} ms')
        if box.get('error') is not None:
            self.broken = True
            raise BackendError(f"{self.backend_name}: {first_line(box['error'])}")
        result = box['result']
        if self._model.has_compute:
            self.remote_compute_ms = float(result.as_numpy(COMPUTE_OUTPUT).flat[0]) / 1e3
        if pair is None:
            outs = [result.as_numpy(n) for n, _, _ in self._model.outputs]
        elif self._rebuild is None:
            return pair['views']
        else:   # the rows answered: the leading part of each region's full-size view
            outs = [v[tuple(slice(0, int(d)) for d in result.get_output(name).shape)]
                    for (name, _, _), v in zip(self._model.outputs, pair['views'])]
        return outs if self._rebuild is None else self._rebuild(*outs)

    def close(self) -> None:
        """Unregister and free the shared-memory regions; close the channel.

        After a failed frame (the server died or stalls: the fallback closes
        this session on the frame thread) that happens in a thread of its own,
        so the next frame never waits for a server that does not answer.
        """
        pairs, self._pairs = self._pairs, []

        def release() -> None:
            for pair in pairs:
                self._drop(pair['tag'], (pair['in'], pair['out']))
            try:
                self._client.close()
            except Exception:  # already closed
                pass
        if self.broken:
            threading.Thread(target=release, name='triton-close', daemon=True).start()
        else:
            release()


class TritonBackend(Backend):
    """One model on one Triton server, reached over gRPC (shared memory on loopback)."""

    library = 'triton'
    remote = True       # the manager asks available() instead of running the probe model

    def __init__(self, url: str, model: str, model_path: Optional[pathlib.Path] = None,
                 timeout_ms: float = 1000.0, shm: bool = True,
                 security: Optional[Dict[str, str]] = None):
        self.url = url
        sec = security or {}
        self.tls = {k: str(sec.get(f'remote_tls_{k}') or '') for k in ('ca', 'cert', 'key')}
        self.use_tls = bool(self.tls['ca'] or self.tls['cert'])
        token = str(sec.get('remote_token') or '')
        # 'authorization' for a gateway in front of the server; Triton's own check
        # (--grpc-restricted-protocol, edge_infer serve --token-file) reads its key
        # with this prefix
        self.headers = {'authorization': f'Bearer {token}',
                        'triton-grpc-protocol-authorization': f'Bearer {token}'} \
            if token else None
        self.host, self.port = parse_url(url)
        self.model = model
        self.model_path = pathlib.Path(model_path) if model_path else None
        self.timeout_ms = float(timeout_ms)
        self.use_shm = is_loopback(self.host) and shm     # shm=False: gRPC on loopback too
        where = self.host if self.port == DEFAULT_PORT else f'{self.host}:{self.port}'
        self.name = f'triton/{where}/{model}'
        self.device = f'remote:{self.host}:{self.port}'
        self.tensor_passing = ('system shared memory (same host), header over gRPC'
                               if self.use_shm else 'gRPC (tensors serialized)')
        if self.use_tls:
            self.tensor_passing += ', TLS'
        elif not is_loopback(self.host):
            self.tensor_passing += ', WARNING: no TLS on a non-loopback address'
        self._sha = ''
        self.input_kind = 'float'   # 'u8' once the server says it takes the uint8 frame
        self._seen: Optional[_Model] = None
        self._asked = False
        self._server_version = ''

    def _client(self):
        import tritonclient.grpc as grpcclient
        # never through an HTTP proxy of the environment: gRPC would take
        # http_proxy for any non-local server (seen here: a 404 from the proxy)
        tls = {}
        if self.use_tls:
            tls = {'ssl': True, 'root_certificates': self.tls['ca'] or None,
                   'private_key': self.tls['key'] or None,
                   'certificate_chain': self.tls['cert'] or None}
        return grpcclient.InferenceServerClient(f'{self.host}:{self.port}',
                                                channel_args=[('grpc.enable_http_proxy', 0)],
                                                **tls)

    def _local_sha(self) -> str:
        if not self._sha and self.model_path is not None and self.model_path.is_file():
            from ...checksums import sha256_file
            self._sha = sha256_file(self.model_path)
        return self._sha

    def options(self) -> Dict[str, object]:
        """Return the server, model, transport and what the server runs it on (cache key).

        The server is asked once per candidate object: a server that is down
        (no ``served_by``) matches no cached figures, so a profile asks it
        again instead of reusing them.
        """
        if self._seen is None and not self._asked:
            self._asked = True
            self._remember(self._ask()[0])
        return {'url': f'grpc://{self.host}:{self.port}', 'model': self.model,
                'transport': 'shm' if self.use_shm else 'grpc', 'tls': self.use_tls,
                'served_by': self._seen.served_by if self._seen else '',
                'input': self.input_kind,
                'timeout_ms': self.timeout_ms}

    def versions(self) -> Dict[str, str]:
        """Return the tritonclient version and the server's, when it was asked."""
        _, version = installed.dist_version('tritonclient')
        out = {'tritonclient': version}
        if self._server_version:
            out['triton_server'] = self._server_version
        return out

    def _ask(self) -> Tuple[Optional[_Model], str]:
        """Return (the model as the server has it, '') or (None, why it is refused)."""
        try:
            import tritonclient.grpc  # noqa: F401
        except (ImportError, RuntimeError) as exc:   # RuntimeError: installed without grpc
            return None, f'tritonclient not installed ({exc}): {INSTALL}'
        where = f'grpc://{self.host}:{self.port}'
        client = self._client()
        try:
            try:
                meta = client.get_server_metadata(as_json=True, client_timeout=ASK_TIMEOUT_S,
                                                  headers=self.headers)
            except Exception as exc:  # refused, unreachable, timed out, no token
                if 'restricted' in str(exc) or 'UNAUTHENTICATED' in str(exc):
                    return None, (f'refused: {where} wants a token (remote_token), '
                                  f"{'and this one is not it' if self.headers else 'none set'}: "
                                  f'{first_line(exc)}')
                return None, f'Triton server {where} is down or unreachable: {first_line(exc)}'
            self._server_version = str(meta.get('version', ''))
            try:
                ready = client.is_model_ready(self.model, client_timeout=ASK_TIMEOUT_S,
                                              headers=self.headers)
            except Exception:  # an unknown model is an error on some versions
                ready = False
            if not ready:
                try:
                    index = client.get_model_repository_index(
                        as_json=True, client_timeout=ASK_TIMEOUT_S, headers=self.headers)
                    names = sorted(m['name'] for m in index.get('models', []))
                except Exception:  # listing may be restricted
                    names = []
                return None, (f"refused: {where} does not serve '{self.model}' (serves: "
                              f"{', '.join(names) or 'nothing it lists'})")
            got = client.get_model_config(self.model, as_json=True,
                                          client_timeout=ASK_TIMEOUT_S, headers=self.headers)
        finally:
            client.close()
        model = _Model(got.get('config', got))
        ours = self._local_sha()
        if not model.sha256:
            return None, (f"refused: {where}'s '{self.model}' has no {SHA_KEY} in its config, "
                          'so it cannot be told to be the same file (edge_infer serve writes '
                          'it)')
        if ours and model.sha256 != ours:
            return None, (f"refused: {where}'s '{self.model}' is sha256 {model.sha256[:12]}, "
                          f"this robot's file is {ours[:12]} (version mismatch)")
        return model, ''

    def _remember(self, model: Optional[_Model]) -> None:
        """Keep what the server said of the model; its input kind is this candidate's."""
        if model is not None:
            self._seen = model
            self.input_kind = model.input_kind

    def available(self) -> Tuple[bool, str]:
        """Ask the server: live, serving the model, the same file (one line why not)."""
        model, why = self._ask()
        if model is None:
            return False, why
        self._remember(model)
        sent = ('the uint8 frame sent, normalised on the server' if model.input_kind == 'u8'
                else 'the float tensor sent')
        return True, (f'Triton {self._server_version} at grpc://{self.host}:{self.port}, '
                      f"'{self.model}' on {model.served_by or 'its backend'}, same file "
                      f'(sha256 {model.sha256[:12]}), {self.tensor_passing}; {sent}')

    def open_session(self, model_path: pathlib.Path, strict: bool = False,
                     input_spec=None) -> Session:
        """Check the server again and return a session (BackendError with the reason)."""
        if model_path is not None and self.model_path is None:
            self.model_path = pathlib.Path(model_path)
        model, why = self._ask()
        if model is None:
            raise BackendError(f'{self.name}: {why}')
        self._remember(model)
        return TritonSession(self, self._client(), model)


def triton_candidates(servers, model: str, model_path: pathlib.Path,
                      timeout_ms: float = 1000.0,
                      security: Optional[Dict[str, str]] = None) -> List[TritonBackend]:
    """Return one candidate per server URL for a model (ValueError for a bad URL).

    ``security``: remote_tls_ca / remote_tls_cert / remote_tls_key (PEM file
    paths) and remote_token, as in config/backends.yaml.
    """
    return [TritonBackend(url, model, model_path, timeout_ms, security=security)
            for url in servers or ()]
