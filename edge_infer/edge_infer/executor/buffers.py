# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Where the executor's tensors live: host numpy or CUDA mapped pinned memory.

Zero-copy between CPU and accelerator segments needs memory both can
address. One interface, probed at run time, each provider reporting why it
is unavailable:

- ``host``: numpy arrays (CPU devices; ONNX Runtime binds them by pointer).
- ``cuda-mapped``: page-locked host memory mapped into the GPU's address
  space (pycuda ``pagelocked_empty(..., mem_flags=DEVICEMAP)`` +
  ``get_device_pointer``): on a Jetson (integrated GPU, unified memory) the
  CUDA execution provider reads and writes it in place; bind the device
  pointer with ``io_binding.bind_input(name, 'cuda', 0, ...)``.

No runner of the executor has an OpenCL device (ONNX Runtime's pip wheels
have no OpenCL provider; OpenVINO's GPU plugin is for Intel GPUs), so no
OpenCL buffers here: bench/exp4_zero_copy.py measures mapped OpenCL memory
on its own. Measured here (2-core x86, no GPU): only ``host`` is
available; ``cuda-mapped`` says why (no libcuda / pycuda).
"""

import ctypes
from typing import Any, Optional, Tuple

import numpy as np


class BufferProvider:
    """Allocates arrays that the named device can use without a copy."""

    name = 'host'

    def available(self) -> Tuple[bool, str]:
        """Return (usable, what was found or why not)."""
        return True, 'numpy host memory'

    def empty(self, shape, dtype=np.float32) -> np.ndarray:
        """Return an uninitialised array (host-addressable)."""
        return np.empty(shape, dtype)

    def device_pointer(self, arr: np.ndarray) -> Optional[int]:
        """Return the device-side address of ``arr`` (None: host only)."""
        return None


class CudaMappedBuffers(BufferProvider):
    """Page-locked, device-mapped host memory through pycuda (Jetson unified memory)."""

    name = 'cuda-mapped'

    def __init__(self):
        self._cuda = None
        self._ctx = None
        self._owners = {}

    def available(self) -> Tuple[bool, str]:
        """Probe libcuda, pycuda, a device, and its ability to map host memory."""
        try:
            ctypes.CDLL('libcuda.so.1')
        except OSError as exc:
            return False, f'no libcuda.so.1 (no NVIDIA driver): {exc}'
        try:
            import pycuda.driver as cuda
        except Exception as exc:  # ImportError, or a build without a working CUDA
            return False, f'pycuda not importable ({exc}); on a Jetson: pip install pycuda'
        try:
            cuda.init()
            if cuda.Device.count() == 0:
                return False, 'CUDA driver present but no device'
            dev = cuda.Device(0)
            attrs = dev.get_attributes()
            can_map = attrs.get(cuda.device_attribute.CAN_MAP_HOST_MEMORY, 0)
            integrated = attrs.get(cuda.device_attribute.INTEGRATED, 0)
            if not can_map:
                return False, f'{dev.name()} cannot map host memory'
            if self._ctx is None:
                self._ctx = dev.make_context(flags=cuda.ctx_flags.MAP_HOST)
                self._ctx.pop()
            self._cuda = cuda
        except Exception as exc:  # driver errors come as pycuda's own types
            return False, f'CUDA init failed: {exc}'
        kind = 'integrated, unified memory' if integrated else 'discrete: mapped = over PCIe'
        return True, f'{dev.name()} ({kind})'

    def empty(self, shape, dtype=np.float32) -> np.ndarray:
        """Return page-locked, device-mapped host memory."""
        cuda = self._cuda
        if cuda is None:
            raise RuntimeError('cuda-mapped buffers: call available() first')
        arr = cuda.pagelocked_empty(shape, dtype, mem_flags=cuda.host_alloc_flags.DEVICEMAP)
        self._owners[arr.ctypes.data] = arr
        return arr

    def device_pointer(self, arr: np.ndarray) -> Optional[int]:
        """Return the GPU address of a mapped array."""
        base: Any = arr.base
        return int(base.get_device_pointer()) if hasattr(base, 'get_device_pointer') else None


def providers():
    """Return every provider, host first."""
    return [BufferProvider(), CudaMappedBuffers()]
