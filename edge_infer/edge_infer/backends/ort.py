# Copyright 2026 edge_infer contributors. Apache-2.0.
"""ONNX Runtime execution providers as backend candidates.

Every provider the installed onnxruntime build lists becomes a candidate
(the CPU EP once per thread setting), except remote ones (Azure). The trap
this guards against, measured on these machines: onnxruntime-gpu lists CUDA
and TensorRT, then quietly runs everything on the CPU when libcublas / the
driver is missing; asking a CPU-only build for CUDA does the same with a
warning. So a non-CPU session is created with CPU fallback DISABLED for the
probe model (any node it cannot take fails the session), and every session
is checked afterwards: the requested provider must be the first one the
session actually uses, or the load fails with that reason.
"""

from typing import List, Optional

from ..core.backend import OrtBackend, PROVIDERS, REMOTE  # noqa: F401 (re-exported)


def listed_providers() -> List[str]:
    """Return the providers the installed onnxruntime build lists ([] if not importable)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return []
    return list(ort.get_available_providers())


def ort_candidates(thread_options=(1, 2), cache_dir: Optional[str] = None,
                   include_unlisted=('CUDAExecutionProvider', 'TensorrtExecutionProvider',
                                     'OpenVINOExecutionProvider')) -> List[OrtBackend]:
    """Return one candidate per listed provider (CPU: one per thread setting).

    ``include_unlisted``: providers worth naming even when this build lacks
    them, so the report says why they are unavailable.
    """
    listed = listed_providers()
    out: List[OrtBackend] = []
    for threads in thread_options:
        out.append(OrtBackend('CPUExecutionProvider', intra_op_threads=threads))
    names = [p for p in listed if p not in REMOTE and p != 'CPUExecutionProvider']
    names += [p for p in include_unlisted if p not in names]
    for p in names:
        out.append(OrtBackend(p, cache_dir=cache_dir))
    return out
