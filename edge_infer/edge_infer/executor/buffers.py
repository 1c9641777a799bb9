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

- ``torch-pinned``: page-locked host memory allocated by PyTorch
  (``cudaHostAlloc``). With unified virtual addressing (every 64-bit CUDA
  platform) such memory is mapped into the GPU at the same address, so a
  CUDA kernel reads and writes it in place; the probe checks that on the
  device (a kernel sums a mapped array) rather than trusting it. The torch
  segment runner wraps it as a CUDA tensor without a copy.

No runner of the executor has an OpenCL device (ONNX Runtime's pip wheels
have no OpenCL provider; OpenVINO's GPU plugin is for Intel GPUs), so no
OpenCL buffers here: bench/papers/exp4_zero_copy.py measures mapped OpenCL memory
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

    def release(self, arr: np.ndarray) -> None:
        """Forget ``arr`` (from :meth:`empty`): its memory goes with its last reference."""


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

    def release(self, arr: np.ndarray) -> None:
        """Forget ``arr``: page-locked memory is scarce, and a runner's buffers go with it."""
        self._owners.pop(arr.ctypes.data, None)


class CudaArray:
    """A device address seen as a CUDA array (``__cuda_array_interface__``), not owned."""

    def __init__(self, ptr: int, shape, dtype=np.float32):
        self.__cuda_array_interface__ = {
            'shape': tuple(int(d) for d in shape), 'typestr': np.dtype(dtype).str,
            'data': (int(ptr), False), 'version': 3, 'strides': None}


def as_cuda_tensor(torch, ptr: int, shape, dtype=np.float32):
    """Return a CUDA tensor over device address ``ptr`` (no copy, not owned).

    Through ``__cuda_array_interface__``; where this torch refuses the
    address (it asks the driver what the pointer is), through CuPy and DLPack,
    which do not ask.
    """
    try:
        return torch.as_tensor(CudaArray(ptr, shape, dtype), device='cuda')
    except (RuntimeError, TypeError, ValueError) as first:
        try:
            import cupy
        except ImportError:
            raise first from None
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        mem = cupy.cuda.UnownedMemory(int(ptr), n, None, 0)
        arr = cupy.ndarray(tuple(shape), dtype, cupy.cuda.MemoryPointer(mem, 0))
        return torch.from_dlpack(arr)


class TorchMappedBuffers(BufferProvider):
    """Page-locked host memory from PyTorch, addressed by the GPU in place (UVA)."""

    name = 'torch-pinned'

    def __init__(self):
        self._torch = None
        self._owners = {}   # data address -> (torch tensor, nbytes): keeps the memory alive

    def available(self) -> Tuple[bool, str]:
        """Probe torch's CUDA device, then check on it that a kernel reads pinned memory."""
        from ..backends.libs.torch_cuda import cuda_torch
        torch, found = cuda_torch()
        if torch is None:
            return False, found
        try:
            host = torch.arange(1024, dtype=torch.float32).pin_memory()    # 0..1023
            seen = as_cuda_tensor(torch, host.data_ptr(), (1024,))
            total = float(seen.sum())
        except Exception as exc:  # no UVA, or the driver refuses the address
            return False, f'{found}: pinned host memory not addressable by the GPU ({exc})'
        if total != float(host.sum()):
            return False, (f'{found}: a kernel read {total} from pinned memory holding '
                           f'{float(host.sum())}')
        self._torch = torch
        return True, f'{found} (pinned host memory read in place by a kernel)'

    def empty(self, shape, dtype=np.float32) -> np.ndarray:
        """Return page-locked host memory the GPU addresses in place."""
        torch = self._torch
        if torch is None:
            raise RuntimeError('torch-pinned buffers: call available() first')
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        t = torch.empty(max(n, 1), dtype=torch.uint8, pin_memory=True)
        arr = t.numpy()[:n].view(dtype).reshape(shape)
        self._owners[arr.ctypes.data] = (t, n)
        return arr

    def device_pointer(self, arr: np.ndarray) -> Optional[int]:
        """Return the GPU address of ``arr`` if it lies in memory this provider allocated."""
        ptr = arr.ctypes.data
        owned = self._owners.get(ptr)       # a whole buffer: the usual case, no scan
        if owned is not None and arr.nbytes <= owned[1]:
            return ptr
        for start, (_, n) in self._owners.items():
            if start <= ptr and ptr + arr.nbytes <= start + n:
                return ptr      # UVA: the same address on both sides
        return None

    def release(self, arr: np.ndarray) -> None:
        """Forget ``arr``: the pinned tensor is freed with the array's last reference."""
        self._owners.pop(arr.ctypes.data, None)


def providers():
    """Return every provider, host first."""
    return [BufferProvider(), CudaMappedBuffers(), TorchMappedBuffers()]
