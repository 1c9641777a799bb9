# Copyright 2026 edge_infer contributors. Apache-2.0.
"""OpenCV DNN as backend candidates: CPU, OpenCL, OpenCL FP16, CUDA, CUDA FP16.

Traps measured on these machines, each turned into an 'unavailable' reason:
- OpenCV 5's new graph engine ignores targets ("Targets are not supported by
  the new graph engine for now"): a non-CPU target needs the classic engine.
- Asking for the OpenCL target without a usable OpenCL device quietly runs on
  the CPU (a warning only); with PoCL (a CPU OpenCL device) OpenCV only uses it
  when OPENCV_OPENCL_DEVICE=":CPU:" and OPENCV_DNN_OPENCL_ALLOW_ALL_DEVICES=1.
  So OpenCL is available only when cv2.ocl reports a device, OpenCV uses it,
  and it is not a CPU device unless those variables allow it.
- The CUDA targets need an OpenCV built with CUDA (pip wheels are not) and a
  CUDA device.
"""

import os
import pathlib
from typing import Dict, List, Tuple

import numpy as np

from ...core.backend import Backend, BackendError, Session

TARGETS = ('cpu', 'opencl', 'opencl-fp16', 'cuda', 'cuda-fp16')


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[-1] if text else type(exc).__name__


class OpenCvSession(Session):
    """An OpenCV DNN net: setInput copies the blob in; forward returns new arrays."""

    def __init__(self, net, backend_name: str, output_order: List[str]):
        self._net = net
        self.backend_name = backend_name
        self.output_names = output_order

    def run(self, tensor: np.ndarray) -> List[np.ndarray]:
        """Run one NCHW float32 tensor; outputs in the model's output order."""
        self._net.setInput(tensor)
        return list(self._net.forward(self.output_names))

    def close(self) -> None:
        """Drop the net."""
        self._net = None


class OpenCvDnnBackend(Backend):
    """cv2.dnn with one preferable backend/target pair."""

    library = 'opencv-dnn'
    tensor_passing = 'copy (setInput copies the blob; forward allocates outputs)'

    def __init__(self, target: str = 'cpu'):
        if target not in TARGETS:
            raise ValueError(f'OpenCV DNN target {target!r}: use one of {", ".join(TARGETS)}')
        self.target = target
        self.name = f'opencv-dnn/{target}'
        self.device = ('cpu' if target == 'cpu' else
                       'opencl' if target.startswith('opencl') else 'gpu:0')
        self.precision = 'fp16' if target.endswith('fp16') else 'fp32'

    def options(self) -> Dict[str, object]:
        """Return the target and the OpenCL device variables that change it."""
        return {'target': self.target,
                'OPENCV_OPENCL_DEVICE': os.environ.get('OPENCV_OPENCL_DEVICE', ''),
                'OPENCV_DNN_OPENCL_ALLOW_ALL_DEVICES':
                    os.environ.get('OPENCV_DNN_OPENCL_ALLOW_ALL_DEVICES', '')}

    def versions(self) -> Dict[str, str]:
        """Return the OpenCV version."""
        try:
            import cv2
        except ImportError:
            return {}
        return {'opencv': cv2.__version__}

    def available(self) -> Tuple[bool, str]:
        """Check for the device the target needs (see the module docstring)."""
        try:
            import cv2
        except ImportError as exc:
            return False, f'cv2 not importable: {exc}'
        if not hasattr(cv2, 'dnn'):
            return False, f'OpenCV {cv2.__version__} built without the dnn module'
        if self.target == 'cpu':
            return True, f'OpenCV {cv2.__version__} dnn, CPU'
        if self.target.startswith('opencl'):
            if not cv2.ocl.haveOpenCL():
                return False, ('no OpenCL platform/device (OpenCV would quietly run on the '
                               "CPU); install an ICD, e.g. pocl-opencl-icd or the GPU vendor's")
            cv2.ocl.setUseOpenCL(True)
            dev = cv2.ocl.Device.getDefault()
            if not cv2.ocl.useOpenCL() or not dev.available():
                return False, 'OpenCL present but OpenCV does not use it (no default device)'
            is_cpu = dev.type() == cv2.ocl.Device_TYPE_CPU
            if is_cpu and os.environ.get('OPENCV_DNN_OPENCL_ALLOW_ALL_DEVICES') != '1':
                return False, (f'OpenCL device {dev.name()!r} is a CPU device: OpenCV DNN skips '
                               'it unless OPENCV_DNN_OPENCL_ALLOW_ALL_DEVICES=1')
            if self.target == 'opencl-fp16' and not dev.isExtensionSupported('cl_khr_fp16'):
                return False, f'OpenCL device {dev.name()!r} lacks cl_khr_fp16'
            self.device = f'opencl:{dev.name()}'
            return True, f'OpenCL device {dev.name()!r} ({dev.vendorName()})'
        try:
            n = cv2.cuda.getCudaEnabledDeviceCount()
        except Exception as exc:  # cv2.cuda missing entirely
            return False, f'OpenCV built without CUDA ({_first_line(exc)})'
        if n <= 0:
            return False, (f'OpenCV {cv2.__version__} sees no CUDA device (pip wheels are built '
                           'without CUDA; build OpenCV with CUDA + cuDNN)')
        return True, f'{n} CUDA device(s)'

    def open_session(self, model_path: pathlib.Path, strict: bool = False,
                     input_spec=None) -> Session:
        """Read the ONNX model and set the backend/target; BackendError when it cannot.

        ``strict`` changes nothing: OpenCV gives no way to forbid its own
        fallback to the CPU for layers the target lacks (the probe's
        comparison with ONNX Runtime is the check). ``input_spec`` is not
        needed (float input).
        """
        import cv2
        path = pathlib.Path(model_path)
        if not path.is_file():
            raise BackendError(f'model file {path} not found')
        ok, why = self.available()
        if not ok:
            raise BackendError(f'{self.name}: {why}')
        try:
            if self.target == 'cpu':
                net = cv2.dnn.readNetFromONNX(os.fspath(path))
            else:   # the new engine ignores targets: the classic one honours them
                net = cv2.dnn.readNetFromONNX(os.fspath(path), engine=cv2.dnn.ENGINE_CLASSIC)
        except cv2.error as exc:
            raise BackendError(f'{self.name}: cannot read {path.name}: {_first_line(exc)}') \
                from None
        if self.target.startswith('cuda'):
            net.setPreferableBackend(cv2.dnn.DNN_BACKEND_CUDA)
            net.setPreferableTarget(cv2.dnn.DNN_TARGET_CUDA_FP16 if self.precision == 'fp16'
                                    else cv2.dnn.DNN_TARGET_CUDA)
        elif self.target.startswith('opencl'):
            net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
            net.setPreferableTarget(cv2.dnn.DNN_TARGET_OPENCL_FP16 if self.precision == 'fp16'
                                    else cv2.dnn.DNN_TARGET_OPENCL)
        return OpenCvSession(net, self.name, _output_order(path, net))


def _output_order(path: pathlib.Path, net) -> List[str]:
    """Return the model's graph outputs in ONNX order (OpenCV lists them its own way)."""
    import onnx
    names = [o.name for o in onnx.load(os.fspath(path), load_external_data=False).graph.output]
    have = set(net.getUnconnectedOutLayersNames())
    missing = [n for n in names if n not in have]
    if missing:
        raise BackendError(f'opencv-dnn: outputs {missing} not found in the net '
                           f'(it exposes {sorted(have)})')
    return names


def opencv_candidates() -> List[OpenCvDnnBackend]:
    """Return one candidate per target."""
    return [OpenCvDnnBackend(t) for t in TARGETS]
