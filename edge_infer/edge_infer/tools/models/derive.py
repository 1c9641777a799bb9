# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A user's ONNX file made runnable as exported: fixed input size, float32 in and out (no ROS).

Exports for other runtimes are often not what every backend here takes:

- dynamic axes (``torch.onnx.export(..., dynamic_axes=...)``): the input is
  ``['batch', 3, 'height', 'width']`` and the output ``['batch', 84,
  'anchors']``. The derived file's input is fixed at batch 1 and the size
  ``model add`` chose (the metadata, ``--imgsz``, or Ultralytics' 640), and
  the outputs' free sides are read by running the model once at that size,
  so OpenVINO, ncnn (pnnx) and the int8 variants see a static graph;
- float16 (``export(half=True)``, for GPUs), uint8 or int32 inputs: the
  derived input is float32 with a Cast into the model's own type (a uint8 or
  int32 model takes 0..255 pixels: its own scaling is inside it);
- float16 outputs: a Cast to float32 after each, for the decoders.

The user's file is left as it is; ``model add`` writes the derived one into
the models directory in its place and says what it changed.
"""

from typing import Dict, List, Optional, Tuple

import numpy as np

FLOAT_INPUTS = ('float', 'float16', 'uint8', 'int32')   # what can be fed from float32
Shape = List[Optional[int]]


class DeriveError(ValueError):
    """The file cannot be made runnable here; the message says what was seen."""


def tensor_type(t) -> Tuple[str, Shape]:
    """Return (element type name in lower case, shape with None for free dims) of ``t``."""
    import onnx
    tt = t.type.tensor_type
    shape = [d.dim_value if d.HasField('dim_value') and d.dim_value > 0 else None
             for d in tt.shape.dim]
    return onnx.TensorProto.DataType.Name(tt.elem_type).lower(), shape


def needs(model) -> List[str]:
    """Return what a derived file would change for ``model`` (empty: it runs as it is)."""
    inits = {i.name for i in model.graph.initializer}
    out = []
    for t in model.graph.input:
        if t.name in inits:
            continue
        kind, shape = tensor_type(t)
        if None in shape:
            out.append(f"input '{t.name}' {shape} has free dimensions")
        if kind != 'float':
            out.append(f"input '{t.name}' is {kind}")
    for t in model.graph.output:
        if tensor_type(t)[0] == 'float16':
            out.append(f"output '{t.name}' is float16")
    return out


def derive(model, input_shape: List[int]) -> Tuple[object, List[str]]:
    """Return (a copy of ``model`` with a float32 input of ``input_shape``, what changed).

    One image input is assumed (``model add`` refuses the others first).
    """
    import onnx
    from onnx import helper, TensorProto
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    inits = {i.name for i in g.initializer}
    (inp,) = [t for t in g.input if t.name not in inits]
    kind, shape = tensor_type(inp)
    if kind not in FLOAT_INPUTS:
        raise DeriveError(f"input '{inp.name}' is {kind} {shape}: edge_infer feeds images as "
                          f"float32 and converts them to {', '.join(FLOAT_INPUTS[1:])}; "
                          f're-export the model with a float input')
    changed = []
    if shape != list(input_shape):
        changed.append(f'input fixed at {list(input_shape)} (was {shape})')
    name = inp.name
    if kind != 'float':
        # the float32 input takes the name; the model's own input is fed by a Cast
        inner = f'{name}__{kind}'
        for node in g.node:
            node.input[:] = [inner if x == name else x for x in node.input]
        for o in g.output:
            if o.name == name:
                raise DeriveError(f"input '{name}' is also an output: not an image model")
        cast = helper.make_node('Cast', [name], [inner], name=f'{inner}_cast',
                                to=int(inp.type.tensor_type.elem_type))
        g.node.insert(0, cast)
        changed.append(f'{kind} input: a Cast from float32 inserted')
    new_inp = helper.make_tensor_value_info(name, TensorProto.FLOAT, list(input_shape))
    g.input.remove(inp)
    g.input.insert(0, new_inp)
    for o in list(g.output):
        if tensor_type(o)[0] != 'float16':
            continue
        half = f'{o.name}__float16'
        for node in g.node:
            node.output[:] = [half if x == o.name else x for x in node.output]
            node.input[:] = [half if x == o.name else x for x in node.input]
        g.node.append(helper.make_node('Cast', [half], [o.name], name=f'{o.name}_cast',
                                       to=TensorProto.FLOAT))
        o.type.tensor_type.elem_type = TensorProto.FLOAT
        changed.append(f"float16 output '{o.name}': a Cast to float32 appended")
    del g.value_info[:]         # shapes inferred for the old input size would be wrong
    return m, changed


def run_once(model, input_shape: List[int]) -> Dict[str, Shape]:
    """Run ``model`` once on zeros of ``input_shape`` (ONNX Runtime CPU); return output shapes."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    try:
        sess = ort.InferenceSession(model.SerializeToString(), so,
                                    providers=['CPUExecutionProvider'])
        name = sess.get_inputs()[0].name
        outs = sess.run(None, {name: np.zeros(input_shape, np.float32)})
    except Exception as exc:    # ONNX Runtime's own errors: invalid graph, bad shapes, ...
        raise DeriveError(f'it does not run at {list(input_shape)} in ONNX Runtime '
                          f'({type(exc).__name__}: {str(exc).splitlines()[0][:160]})') from None
    return {o.name: list(a.shape) for o, a in zip(sess.get_outputs(), outs)}
