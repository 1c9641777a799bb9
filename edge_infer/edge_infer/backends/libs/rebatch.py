# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A batch-N copy of a batch-1 model graph: N cameras' frames in one run (issue 54).

Most exported detectors and classifiers are fixed at batch 1 (NanoDet's,
MobileNetV2's ONNX here), and many write that 1 into constants: NanoDet's
six Reshapes name it (``[1, C, HW]``) and its Resizes give ``sizes`` as
``[1, C, H, W]``. Only the input's leading dimension changed, such a graph
fails at its first Resize. Two graph kinds are opened here:

- ONNX, for ONNX Runtime (and for Triton's stock backends,
  tools/triton/batch_dim.py): :func:`free_batch` frees the batch (a
  Reshape's leading 1 becomes -1, a Resize's ``sizes`` become ``scales``)
  and :func:`onnx_bytes` fixes it at N (static shapes plan best);
- OpenVINO's (its ONNX reader, or an IR file such as an NNCF int8 variant):
  :func:`openvino_model` gives a Reshape's target shape, or an
  Interpolate's output sizes, N for their leading 1, then reshapes the model.

A model this does not fit (two inputs, a leading dimension that is not 1,
a batch 1 computed another way) fails to load with the reason, or gives
other outputs: the batch measurement (:mod:`edge_infer.backends.live.batching`)
compares each frame's outputs with the batch-1 session's and refuses the
batch then, so it never serves.
"""

import pathlib
from typing import Any, Dict, List, Optional, Tuple

from ...core.backend import BackendError


def _shapes(model) -> Dict[str, List[Optional[int]]]:
    from onnx import shape_inference
    inferred = shape_inference.infer_shapes(model)
    out: Dict[str, List[Optional[int]]] = {}
    graph = inferred.graph
    for v in list(graph.value_info) + list(graph.input) + list(graph.output):
        out[v.name] = [d.dim_value if d.HasField('dim_value') else None
                       for d in v.type.tensor_type.shape.dim]
    return out


def free_batch(model) -> Tuple[Optional[Any], str]:
    """Return (a copy of the ONNX ``model`` with a free batch, '') or (None, why not)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    model = onnx.ModelProto.FromString(model.SerializeToString())
    shapes = _shapes(model)
    inits = {i.name: i for i in model.graph.initializer}
    consts = {n.output[0]: n for n in model.graph.node if n.op_type == 'Constant'}

    def const(name: str):
        if name in inits:
            return numpy_helper.to_array(inits[name])
        if name in consts and consts[name].attribute:
            return numpy_helper.to_array(consts[name].attribute[0].t)
        return None
    for n in model.graph.node:
        if n.op_type == 'Reshape':
            shape, src = const(n.input[1]), shapes.get(n.input[0])
            if shape is None or not src:
                return None, f"Reshape '{n.name}' takes a computed shape"
            if src[0] == 1 and shape.size and shape[0] == 1:
                if -1 in shape:
                    return None, f"Reshape '{n.name}' has a -1 already: {shape.tolist()}"
                shape = shape.astype(np.int64)
                shape[0] = -1
                name = f'{n.input[1]}__batch'
                model.graph.initializer.append(numpy_helper.from_array(shape, name))
                n.input[1] = name
        elif n.op_type == 'Resize' and len(n.input) == 4 and n.input[3]:
            sizes, src = const(n.input[3]), shapes.get(n.input[0])
            if sizes is None or not src or None in src[1:] or len(src) != len(sizes):
                return None, f"Resize '{n.name}' has sizes of unknown ratio"
            scales = np.array([1.0] + [float(o) / float(i or 1)
                                       for o, i in zip(sizes[1:], src[1:])], np.float32)
            name = f'{n.input[3]}__scales'
            model.graph.initializer.append(numpy_helper.from_array(scales, name))
            n.input[2] = name
            del n.input[3]
    del model.graph.value_info[:]       # shapes inferred for batch 1
    for v in list(model.graph.input) + list(model.graph.output):
        if v.name not in inits and v.type.tensor_type.shape.dim:
            v.type.tensor_type.shape.dim[0].dim_param = 'batch'
    return model, ''


def onnx_bytes(path: pathlib.Path, n: int) -> bytes:
    """Return the ONNX model of ``path`` at batch ``n`` (serialized, for a session)."""
    import onnx
    model, why = free_batch(onnx.load(str(path)))
    if model is None:
        raise BackendError(f'{path.name}: cannot batch: {why}')
    for value in list(model.graph.input) + list(model.graph.output):
        dims = value.type.tensor_type.shape.dim
        if dims and dims[0].dim_param == 'batch':
            dims[0].dim_value = n       # static: the runtimes plan fixed shapes best
    return model.SerializeToString()


def openvino_model(model, n: int):
    """Return OpenVINO ``model`` (read, not compiled) reshaped to batch ``n``, in place."""
    from openvino import opset13
    if len(model.inputs) != 1:
        raise BackendError(f'model has {len(model.inputs)} inputs; a batch needs one')
    shape = model.inputs[0].get_partial_shape()
    if shape.rank.is_dynamic or not shape[0].is_static or shape[0].get_length() != 1:
        raise BackendError(f'input shape {shape}: no leading batch-1 dimension to batch')
    for op in model.get_ordered_ops():
        if op.get_type_name() not in ('Reshape', 'Interpolate'):
            continue
        source = op.input_value(1).get_node()
        if source.get_type_name() != 'Constant':
            continue
        values = source.get_data().copy()
        rank = op.input_value(0).get_partial_shape().rank
        if values.ndim == 1 and values.size and values[0] == 1 and (
                op.get_type_name() == 'Reshape' or
                (rank.is_static and values.size == rank.get_length())):
            values[0] = n
            op.input(1).replace_source_output(opset13.constant(values).output(0))
    model.reshape({model.inputs[0]: [n] + [d.get_length() for d in list(shape)[1:]]})
    return model
