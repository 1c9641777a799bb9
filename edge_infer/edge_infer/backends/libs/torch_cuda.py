# Copyright 2026 edge_infer contributors. Apache-2.0.
"""PyTorch on a CUDA GPU as backend candidates: the ONNX file converted by onnx2torch.

An optional candidate for machines that have PyTorch with CUDA (a Jetson with
NVIDIA's torch wheel, an x86 box with a discrete GPU) but no GPU build of
ONNX Runtime. The ONNX graph becomes a ``torch.fx`` module with
``onnx2torch`` (Apache-2.0, pure Python); PyTorch then runs it with its own
CUDA kernels (cuDNN for the convolutions). Two candidates: ``torch/cuda:0``
(fp32) and ``torch/cuda:0/fp16`` (weights and input in half precision,
outputs read back as float32). The accuracy guard judges both against ONNX
Runtime on the CPU, as every candidate.

Unavailable, with the reason, where torch is missing, was built without
CUDA, sees no device, or onnx2torch is missing. Neither package is a
dependency of edge_infer: ``pip install onnx2torch`` beside a CUDA torch.

Tensors cross by copy: the frame goes to the GPU (pinned host memory, one
host-to-device copy) and the outputs come back (one device-to-host copy).
The shared executor's torch runner (:mod:`edge_infer.executor.segment_runners`)
instead lets the kernels read mapped host memory in place.
"""

import ctypes.util
import glob
from importlib import metadata
import importlib.util
import pathlib
from typing import Any, Dict, List, Tuple

import numpy as np

from ...core.backend import Backend, BackendError, first_line, Session

PRECISIONS = ('fp32', 'fp16')
INSTALL = 'pip install onnx2torch (beside a CUDA build of torch)'


def cuda_torch() -> Tuple[Any, str]:
    """Return (torch, what was found) or (None, why not): torch with a CUDA device."""
    try:
        import torch
    except ImportError as exc:
        return None, f'torch not importable ({exc}); {INSTALL}'
    if not torch.backends.cuda.is_built():
        return None, f'torch {torch.__version__} built without CUDA'
    try:
        n = torch.cuda.device_count()
    except Exception as exc:  # a broken driver raises here, not at import
        return None, f'torch {torch.__version__}: CUDA not usable ({first_line(exc)})'
    if n <= 0 or not torch.cuda.is_available():
        return None, f'torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device'
    return torch, (f'torch {torch.__version__}, CUDA {torch.version.cuda}, '
                   f'{torch.cuda.get_device_name(0)}')


def nvidia_driver() -> bool:
    """Return whether an NVIDIA driver is installed (its library or device nodes)."""
    return bool(ctypes.util.find_library('cuda') or glob.glob('/dev/nvidia[0-9]*')
                or glob.glob('/dev/nvhost-*'))


def convert(model, who: str, what: str = 'the model'):
    """Return an ONNX ``ModelProto`` as a torch module (CPU); BackendError when it cannot."""
    try:
        import onnx2torch
    except ImportError as exc:
        raise BackendError(f'{who}: {exc}; {INSTALL}') from None
    try:
        return onnx2torch.convert(model).eval()
    except Exception as exc:  # onnx2torch raises NotImplementedError for unknown ops
        raise BackendError(f'{who}: onnx2torch cannot convert {what}: '
                           f'{type(exc).__name__}: {first_line(exc)}') from None


class TorchSession(Session):
    """A converted module on the GPU: frame in by one copy, outputs back by one copy each."""

    def __init__(self, module, torch, backend_name: str, dtype, output_names: List[str]):
        self._module, self._torch, self._dtype = module, torch, dtype
        self.backend_name = backend_name
        self.output_names = output_names

    def run(self, tensor: np.ndarray) -> List[np.ndarray]:
        """Run one float32 tensor; float32 outputs in the model's output order."""
        torch = self._torch
        with torch.inference_mode():
            x = torch.from_numpy(np.ascontiguousarray(tensor, np.float32)).to(
                'cuda', non_blocking=False).to(self._dtype)
            out = self._module(x)
            outs = list(out) if isinstance(out, (list, tuple)) else [out]
            return [o.float().cpu().numpy() if o.is_floating_point() else o.cpu().numpy()
                    for o in outs]

    def close(self) -> None:
        """Free the module and the GPU memory it held."""
        self._module = None
        self._torch.cuda.empty_cache()


class TorchCudaBackend(Backend):
    """onnx2torch + PyTorch on CUDA device 0, in fp32 or fp16."""

    library = 'torch'
    tensor_passing = 'copy (host to device in, device to host out)'

    def __init__(self, precision: str = 'fp32'):
        if precision not in PRECISIONS:
            raise ValueError(f'torch precision {precision!r}: use one of {", ".join(PRECISIONS)}')
        self.precision = precision
        self.device = 'cuda:0'
        self.name = 'torch/cuda:0' + ('' if precision == 'fp32' else f'/{precision}')

    def options(self) -> Dict[str, object]:
        """Return the precision (the only setting)."""
        return {'precision': self.precision}

    def versions(self) -> Dict[str, str]:
        """Return the versions of torch and onnx2torch (empty where absent), without importing.

        Importing torch costs hundreds of MB: a container that only lists the
        candidates must not pay it. The CUDA version is part of torch's
        (``2.11.0+cu130``); a Jetson's wheel names its JetPack.
        """
        out: Dict[str, str] = {}
        for dist in ('torch', 'onnx2torch'):
            try:
                out[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                pass
        return out

    def available(self) -> Tuple[bool, str]:
        """Check, without importing torch, that torch, onnx2torch and an NVIDIA driver exist.

        Whether torch was built with CUDA and sees the device is found when
        the probe loads a model (:func:`cuda_torch`), in the process that
        measures, so that a container which never chooses torch never imports it.
        """
        if importlib.util.find_spec('torch') is None:
            return False, f'torch not installed; {INSTALL}'
        if importlib.util.find_spec('onnx2torch') is None:
            return False, f'onnx2torch not installed: {INSTALL}'
        if not nvidia_driver():
            return False, ('no NVIDIA driver (no libcuda.so.1, no /dev/nvidia* or Jetson '
                           '/dev/nvhost-*)')
        v = self.versions()
        return True, (f'torch {v.get("torch", "?")}, onnx2torch {v.get("onnx2torch", "?")}, '
                      'NVIDIA driver present')

    def open_session(self, model_path: pathlib.Path, strict: bool = False,
                     input_spec=None) -> Session:
        """Convert the model and move it to the GPU; BackendError saying why when it cannot.

        ``strict`` changes nothing: every converted op runs in torch on the
        device named, there is no fallback to hide.
        """
        path = pathlib.Path(model_path)
        if not path.is_file():
            raise BackendError(f'model file {path} not found')
        torch, found = cuda_torch()
        if torch is None:
            raise BackendError(f'{self.name}: {found}')
        import onnx
        try:
            model = onnx.load(str(path))
        except Exception as exc:  # not an ONNX file: onnx's DecodeError and friends
            raise BackendError(f'{self.name}: cannot read {path.name}: {first_line(exc)}') \
                from None
        module = convert(model, self.name, path.name)
        dtype = torch.float16 if self.precision == 'fp16' else torch.float32
        try:
            module = module.to('cuda', dtype=dtype)
        except Exception as exc:  # out of GPU memory, a driver error
            raise BackendError(f'{self.name}: cannot move {path.name} to the GPU: '
                               f'{first_line(exc)}') from None
        outputs = [o.name for o in model.graph.output]
        return TorchSession(module, torch, self.name, dtype, outputs)


def torch_candidates(precisions=PRECISIONS) -> List[TorchCudaBackend]:
    """Return one candidate per precision (``torch_precisions`` in backends.yaml)."""
    return [TorchCudaBackend(p) for p in precisions]
