# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The shared executor's devices: which this machine really has, and their memory.

- :func:`default_devices`: the accelerator is the CUDA execution provider
  where onnxruntime lists it and mapped pinned memory works (Jetson), else
  PyTorch on CUDA (``torch-cuda``), else one CPU worker playing its part;
- :func:`device_buffers`: the memory a device's runners share with the CPU
  without a copy (:mod:`.buffers`), or why it cannot be had.
"""

from typing import Callable, List, Optional, Tuple

from .buffers import BufferProvider, CudaMappedBuffers, TorchMappedBuffers


def default_devices(log: Callable[[str], None] = print) -> List[tuple]:
    """Return (name, role, provider) of the devices this machine really has.

    The accelerator is the CUDA execution provider when onnxruntime lists it
    AND mapped pinned memory is available (Jetson); else PyTorch on CUDA
    (``torch-cuda``: segments converted by onnx2torch, pinned memory read in
    place) where torch sees a GPU and onnx2torch is installed; otherwise one
    CPU worker plays the accelerator's part, and the log says so.
    """
    try:
        import onnxruntime as ort
        listed = ort.get_available_providers()
    except ImportError:
        listed = []
    if 'CUDAExecutionProvider' in listed:
        ok, why = CudaMappedBuffers().available()
        if ok:
            log(f'executor: accelerator = CUDA ({why}), zero-copy through mapped pinned memory')
            return [('accelerator', 'accelerator', 'CUDAExecutionProvider'),
                    ('cpu', 'cpu', 'CPUExecutionProvider')]
        log(f'executor: onnxruntime lists CUDA but mapped memory is unavailable ({why})')
    ok, why = TorchMappedBuffers().available()
    if ok:
        try:
            import onnx2torch  # noqa: F401
        except ImportError as exc:
            ok, why = False, f'{why}; onnx2torch not importable ({exc})'
    if ok:
        log(f'executor: accelerator = PyTorch CUDA ({why})')
        return [('accelerator', 'accelerator', 'torch-cuda'),
                ('cpu', 'cpu', 'CPUExecutionProvider')]
    log(f'executor: no PyTorch CUDA accelerator ({why})')
    log('executor: no accelerator usable here; one CPU worker plays the accelerator')
    return [('accelerator', 'accelerator', 'CPUExecutionProvider'),
            ('cpu', 'cpu', 'CPUExecutionProvider')]


def device_buffers(provider: str) -> Tuple[Optional[BufferProvider], str]:
    """Return (the mapped memory a device with ``provider`` needs, '') or (None, why not).

    (None, '') for a device that needs none (the CPU).
    """
    if provider == 'CUDAExecutionProvider':
        mapped: BufferProvider = CudaMappedBuffers()
        ok, why = mapped.available()
        return (mapped, '') if ok else (None, f'CUDA without mapped memory: {why}')
    if provider == 'torch-cuda':
        pinned = TorchMappedBuffers()
        ok, why = pinned.available()
        return (pinned, '') if ok else (None, f'torch-cuda unusable: {why}')
    return None, ''
