# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The candidates config/backends.yaml lists: one entry per library, device, threads, precision.

:func:`configured_candidates` gives the model-independent ones (every library
module's own list); :func:`variant_candidates` the fp16 / int8 files of one
model (:mod:`.precision.variants`, :mod:`.precision.quantize`);
:func:`remote_candidates` one model on each Triton server of
``remote_servers`` (:mod:`.libs.triton`). The manager filters them by
``exclude`` and its thread budget.
"""

import pathlib
from typing import Callable, List, Optional

from ..core.backend import Backend

Log = Callable[[str], None]


def configured_candidates(cfg: dict, cache_dir: pathlib.Path, log: Log) -> List[Backend]:
    """Return every model-independent candidate the config names (unavailable ones too)."""
    from .libs.opencv_dnn import OpenCvDnnBackend
    from .libs.ort import ort_candidates
    out: List[Backend] = list(ort_candidates(
        thread_options=cfg['ort_threads'], cache_dir=str(cache_dir),
        include_unlisted=cfg['ort_providers_always_listed']))
    out += [OpenCvDnnBackend(t) for t in cfg['opencv_targets']]
    if cfg['blas']:
        try:
            from .libs.blas import BlasBackend
            out.append(BlasBackend())
        except ImportError as exc:  # the module is optional
            log(f'backend numpy-blas: not importable ({exc})')
    if cfg['openvino_threads']:
        from .libs.openvino import openvino_candidates
        out += openvino_candidates(cfg['openvino_threads'],
                                   native=bool(cfg['openvino_native_precision']),
                                   graph_preprocessing=bool(cfg['openvino_graph_preprocessing']))
    if cfg['ncnn_threads'] or cfg['ncnn_vulkan']:
        try:
            from .libs.ncnn import ncnn_candidates
        except ImportError as exc:  # the module is optional
            log(f'backend ncnn: not importable ({exc})')
        else:
            out += ncnn_candidates(cache_dir, threads=cfg['ncnn_threads'],
                                   fp16=bool(cfg['ncnn_fp16']), vulkan=bool(cfg['ncnn_vulkan']))
    if cfg['torch_precisions']:
        from .libs.torch_cuda import torch_candidates
        out += torch_candidates(cfg['torch_precisions'])
    return out


def variant_candidates(cfg: dict, cache_dir: pathlib.Path, thread_budget: int,
                       settings: Callable[[], tuple], log: Log,
                       model_path: Optional[pathlib.Path] = None) -> List[Backend]:
    """Return a model's fp16 / int8 candidates.

    ONNX Runtime runs each kind of ``variants`` at ``variant_threads`` (within
    the budget); OpenVINO runs its NNCF int8 file (``int8-nncf``) at each of
    ``openvino_threads``, at the device's best precision for the layers left
    in float, with a ``+pre`` twin where graph preprocessing is on.
    ``settings()`` returns what a quantizer needs (see VariantBackend).
    ``make_variants`` False: the files of ``model_path`` are used, never made.
    """
    from .libs.ort import OrtBackend
    from .precision.variants import VariantBackend
    base_threads = int(cfg['variant_threads'])
    if thread_budget:       # variants run within the budget
        base_threads = min(base_threads, thread_budget)
    make, max_mb = bool(cfg['make_variants']), float(cfg['variant_memory_mb'])
    out: List[Backend] = [VariantBackend(OrtBackend(intra_op_threads=base_threads), kind,
                                         cache_dir, settings, log, make, model_path, max_mb)
                          for kind in cfg['variants'] if kind in ('fp16', 'int8')]
    if 'int8-nncf' in cfg['variants'] and cfg['openvino_threads']:
        from .libs.openvino import openvino_candidates
        bases = openvino_candidates(cfg['openvino_threads'],
                                    native=bool(cfg['openvino_native_precision']),
                                    graph_preprocessing=bool(cfg['openvino_graph_preprocessing']))
        best = 'fp32' if all(b.precision == 'fp32' for b in bases) else next(
            b.precision for b in bases if b.precision != 'fp32')
        # one int8 twin per thread count and input kind, on the best precision
        out += [VariantBackend(b, 'int8-nncf', cache_dir, settings, log, make, model_path,
                               max_mb) for b in bases if b.precision == best]
    return out


def remote_candidates(cfg: dict, model: str, model_path: pathlib.Path) -> List[Backend]:
    """Return ``triton/<host>/<model>`` for each of ``remote_servers`` (grpc://host:port)."""
    if not cfg.get('remote_servers'):
        return []
    from .libs.triton import triton_candidates
    return list(triton_candidates(cfg['remote_servers'], model, model_path,
                                  float(cfg.get('remote_timeout_ms', 1000.0)),
                                  security=security_of(cfg)))


def security_of(cfg: dict) -> dict:
    """Return the TLS files and token of ``cfg`` as TritonBackend's ``security``."""
    return {k: str(cfg.get(k) or '') for k in ('remote_tls_ca', 'remote_tls_cert',
                                               'remote_tls_key', 'remote_token')}
