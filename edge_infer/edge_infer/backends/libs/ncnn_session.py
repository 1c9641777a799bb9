# Copyright 2026 edge_infer contributors. Apache-2.0.
"""An ncnn session: the ONNX model's input and outputs, and the Net that runs it (no ROS).

:mod:`.ncnn` names the candidates, checks the library and converts the model
(pnnx); this module reads the ONNX file's single input and outputs and runs
the converted pair: the input wrapped without a copy, outputs in arrays
allocated once.
"""

import os
import pathlib
from typing import List, Optional, Tuple

import numpy as np

from ...core.backend import BackendError, first_line, Session


# --------------------------------------------------------------------- ONNX side
class OnnxIO:
    """The ONNX model's single input (static shape) and its outputs, in order."""

    def __init__(self, path: pathlib.Path, who: str):
        import onnx
        try:
            model = onnx.load(os.fspath(path), load_external_data=False)
        except Exception as exc:  # protobuf DecodeError and friends
            raise BackendError(f'{who}: cannot read {path.name} as an ONNX model: '
                               f'{first_line(exc)}') from None
        g = model.graph
        inits = {i.name for i in g.initializer}
        inputs = [i for i in g.input if i.name not in inits]
        if len(inputs) != 1:
            raise BackendError(f'{who}: {path.name} has {len(inputs)} inputs; edge_infer '
                               'feeds one image (is it an ONNX model?)')
        if not g.output:
            raise BackendError(f'{who}: {path.name} has no outputs')
        x = inputs[0]
        if x.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
            raise BackendError(f"{who}: input '{x.name}' is not float32 "
                               f'(ONNX type {x.type.tensor_type.elem_type})')
        dims = [d.dim_value if d.HasField('dim_value') else (d.dim_param or '?')
                for d in x.type.tensor_type.shape.dim]
        if not dims or not all(isinstance(d, int) and d > 0 for d in dims):
            raise BackendError(f"{who}: input '{x.name}' of {path.name} has a dynamic shape "
                               f"[{', '.join(str(d) for d in dims)}]: pnnx converts for one "
                               'static input shape; export the model with a fixed input size')
        if dims[0] != 1:
            raise BackendError(f"{who}: input '{x.name}' has batch {dims[0]}; ncnn runs "
                               'batch 1 (pnnx drops the batch dimension)')
        self.input_name = x.name
        self.input_shape: Tuple[int, ...] = tuple(int(d) for d in dims)
        self.output_names = [o.name for o in g.output]
        self.output_shapes: List[Optional[Tuple[int, ...]]] = []
        for o in g.output:
            if o.type.tensor_type.elem_type not in (0, onnx.TensorProto.FLOAT):
                raise BackendError(f"{who}: output '{o.name}' is not float32 "
                                   f'(ONNX type {o.type.tensor_type.elem_type}); ncnn '
                                   'returns float32')
            odims = [d.dim_value if d.HasField('dim_value') else 0
                     for d in o.type.tensor_type.shape.dim]
            ok = o.type.tensor_type.HasField('shape') and odims and all(d > 0 for d in odims)
            self.output_shapes.append(tuple(odims) if ok else None)


# ------------------------------------------------------------------- conversion
class NcnnSession(Session):
    """An ncnn Net with its input wrapped (not copied) and outputs in arrays allocated once.

    The wrapped input array is kept alive until the next run (ncnn.Mat holds
    no reference to it); outputs are copied from ncnn's output Mats, which
    are released before ``run`` returns (no view of ncnn memory escapes).
    """

    def __init__(self, net, backend_name: str, io: OnnxIO, blob_outputs: List[str], ncnn):
        self._ncnn = ncnn   # the ncnn module (imported by :mod:`.ncnn`, which notes how)
        self._net = net
        self.backend_name = backend_name
        self.input_name = io.input_name
        self.output_names = list(io.output_names)
        self._in_shape = io.input_shape
        self._blob_outputs = blob_outputs
        self._outputs: List[Optional[np.ndarray]] = [
            np.empty(s, np.float32) if s else None for s in io.output_shapes]
        self._in_arr: Optional[np.ndarray] = None
        self._in_mat = None
        self._in_ptr = 0
        self._aligned_mat = None                    # when the input's channels are unaligned
        self._aligned: Optional[np.ndarray] = None  # a view of it

    def run(self, tensor: np.ndarray) -> List[np.ndarray]:
        """Run one float32 tensor of the model's input shape; outputs in ONNX order.

        The returned arrays are reused by the next run (consume them first).
        """
        if self._net is None:
            raise BackendError(f'{self.backend_name}: session closed')
        t = tensor
        if t.dtype != np.float32 or not t.flags.c_contiguous:
            t = np.ascontiguousarray(t, np.float32)
        if t.shape != self._in_shape:
            raise BackendError(f'{self.backend_name}: input shape {tuple(t.shape)}, the model '
                               f'takes {self._in_shape}')
        ptr = t.__array_interface__['data'][0]
        if self._aligned is not None:
            np.copyto(self._aligned, t[0])
        elif self._in_mat is None or ptr != self._in_ptr:
            mat = self._ncnn.Mat(t[0])              # pnnx dropped the batch dimension
            if mat.dims >= 3 and (mat.cstep * mat.elemsize) % 16:
                # ncnn aligns each channel to 16 bytes; a wrapped array whose channels
                # are not cannot be used as is (Vulkan uploads garbage): copy per run
                # into an aligned Mat allocated once
                self._aligned_mat = mat.clone()
                self._aligned = np.asarray(self._aligned_mat)
                np.copyto(self._aligned, t[0])
                self._in_mat = self._aligned_mat
                self._in_arr = None
            else:
                # ncnn.Mat holds no reference to the array it wraps: keep it alive
                self._in_arr = t
                self._in_mat = mat
                self._in_ptr = ptr
        ex = self._net.create_extractor()
        try:
            if ex.input('in0', self._in_mat) != 0:
                raise BackendError(f"{self.backend_name}: ncnn rejected input 'in0'")
            for k, blob in enumerate(self._blob_outputs):
                ret, mat = ex.extract(blob)
                if ret != 0:
                    raise BackendError(f"{self.backend_name}: ncnn extract('{blob}') "
                                       f'returned {ret}')
                if mat.elemsize != 4 or mat.elempack != 1:
                    raise BackendError(f'{self.backend_name}: {blob} came back with '
                                       f'elemsize {mat.elemsize}, elempack {mat.elempack}')
                view = np.asarray(mat)      # ncnn's memory, valid while `mat` lives
                out = self._outputs[k]
                if out is None:             # shape unknown to ONNX: ncnn's, batch restored
                    out = self._outputs[k] = np.empty((1,) + view.shape, np.float32)
                if out.size != view.size:
                    raise BackendError(f"{self.backend_name}: output '{self.output_names[k]}'"
                                       f' has {view.size} values, ONNX says {out.shape}')
                np.copyto(out.reshape(view.shape), view)
                del view, mat               # released (to the net's pool if it has one)
        finally:
            del ex
        return self._outputs      # type: ignore[return-value]

    def close(self) -> None:
        """Free the net (weights, pools, Vulkan pipelines)."""
        if self._net is not None:
            self._net.clear()
        self._net = None
        self._in_mat = None
        self._in_arr = None
        self._aligned = None
        self._aligned_mat = None


# ------------------------------------------------------------------------ backend
