# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The fp16 variant of an ONNX model: our own conversion with the ``onnx`` package.

No onnxconverter-common. Float32 initializers, Constant tensors and float
Casts become float16 and the value infos say so; the graph keeps float32
inputs and outputs through Cast nodes, so callers feed the same tensor.
Kept in float32: inputs that ONNX types as float32 only or that are
coordinates (Resize roi/scales, Upsample scales), whole ops without a
float16 type in ONNX (Range, NonMaxSuppression, (De)QuantizeLinear) and
float arithmetic on tensor shapes (from Shape/Size), where float16 would
round sizes above 2048. Non-float tensors are never touched.
:mod:`.variants` names, caches and serves the file; :class:`VariantError` (here,
so that this module needs none of its) is the error of making any variant.
"""

from collections import defaultdict
from typing import Dict, Set, Tuple

import numpy as np


class VariantError(ValueError):
    """A variant cannot be made (bad source, kind, or missing calibration)."""


# (op type, input index) that stays float32 in an fp16 graph: typed float32
# only by ONNX (scales) or coordinates that float16 would round (roi).
FP32_INPUTS = {('Resize', 1), ('Resize', 2), ('Upsample', 1)}
# ops run entirely in float32 (no float16 in their ONNX type constraints at
# the opsets the converter meets): float inputs cast up, outputs cast down.
FP32_OPS = {'Range', 'NonMaxSuppression', 'QuantizeLinear', 'DequantizeLinear',
            'DynamicQuantizeLinear'}
# ops whose float output type comes from an attribute (not from an input)
_DTYPE_ATTR = {'EyeLike': 'dtype', 'RandomNormal': 'dtype', 'RandomUniform': 'dtype',
               'RandomNormalLike': 'dtype', 'RandomUniformLike': 'dtype',
               'Bernoulli': 'dtype'}


def _shape_derived(graph, constants: Set[str]) -> Set[str]:
    """Return the tensors computed only from tensor shapes (and constants)."""
    derived: Set[str] = set()
    for n in graph.node:
        ins = [i for i in n.input if i]
        if n.op_type in ('Shape', 'Size') or (
                any(i in derived for i in ins) and
                all(i in derived or i in constants for i in ins)):
            derived.update(o for o in n.output if o)
    return derived


def to_fp16(model):
    """Convert a float32 ModelProto to float16 in place, float32 at its inputs/outputs."""
    import onnx
    from onnx import helper, numpy_helper, TensorProto
    FLOAT, HALF = TensorProto.FLOAT, TensorProto.FLOAT16
    g = model.graph
    for n in g.node:
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for a in n.attribute):
            raise VariantError(f"fp16: node '{n.name}' ({n.op_type}) has a subgraph; "
                               f'If/Loop/Scan are not supported')
    if len(g.sparse_initializer):
        raise VariantError('fp16: sparse initializers are not supported')
    inferred = onnx.shape_inference.infer_shapes(model)
    vinfo = {v.name: v for v in inferred.graph.value_info}
    types: Dict[str, int] = {}
    for v in list(inferred.graph.input) + list(inferred.graph.value_info) + \
            list(inferred.graph.output):
        types[v.name] = v.type.tensor_type.elem_type
    inits = {i.name: i for i in g.initializer}
    for name, init in inits.items():
        types[name] = init.data_type
    for n in g.node:          # Constant outputs, should inference have missed them
        if n.op_type == 'Constant':
            for a in n.attribute:
                if a.name in ('value_float', 'value_floats'):
                    types[n.output[0]] = FLOAT
                elif a.name == 'value':
                    types[n.output[0]] = a.t.data_type

    def is_float(name: str) -> bool:
        return bool(name) and types.get(name) == FLOAT

    constants = set(inits) | {n.output[0] for n in g.node if n.op_type == 'Constant'}
    shape_math = _shape_derived(g, constants)
    # protobuf wrappers are not stable objects: nodes are known by their index
    graph_nodes = list(g.node)
    fp32_nodes = {j for j, n in enumerate(graph_nodes) if n.op_type in FP32_OPS or
                  any(t in shape_math and is_float(t) for t in list(n.input) + list(n.output))}
    graph_in = {i.name for i in g.input if i.name not in inits}
    graph_out = {o.name for o in g.output}

    def needs_fp32(j: int, k: int) -> bool:
        return j in fp32_nodes or (graph_nodes[j].op_type, k) in FP32_INPUTS

    uses = defaultdict(list)
    for j, n in enumerate(graph_nodes):
        for k, name in enumerate(n.input):
            if name:
                uses[name].append(needs_fp32(j, k))

    def only_fp32_uses(name: str) -> bool:
        return name in graph_out or (bool(uses[name]) and all(uses[name]))

    # dtype each float tensor is produced in: True = float32
    made32: Dict[str, bool] = {}
    for name in graph_in:
        if is_float(name):
            made32[name] = True
    for name, init in inits.items():
        if init.data_type == FLOAT:
            made32[name] = only_fp32_uses(name)
            if not made32[name]:
                half = numpy_helper.to_array(init).astype(np.float16)
                init.CopyFrom(numpy_helper.from_array(half, name))
    for j, n in enumerate(graph_nodes):
        outs = [o for o in n.output if is_float(o)]
        if n.op_type == 'Constant' and outs:
            keep = only_fp32_uses(outs[0])
            made32[outs[0]] = keep
            if not keep:
                for a in list(n.attribute):
                    if a.name == 'value':
                        half = numpy_helper.to_array(a.t).astype(np.float16)
                        a.t.CopyFrom(numpy_helper.from_array(half, a.t.name))
                    elif a.name in ('value_float', 'value_floats'):
                        val = np.asarray(a.f if a.name == 'value_float' else list(a.floats),
                                         np.float16)
                        n.attribute.remove(a)
                        n.attribute.append(helper.make_attribute(
                            'value', numpy_helper.from_array(val)))
            continue
        if n.op_type == 'Cast' and outs:
            keep = j in fp32_nodes or only_fp32_uses(outs[0])
            made32[outs[0]] = keep
            if not keep:
                for a in n.attribute:
                    if a.name == 'to':
                        a.i = HALF
            continue
        keep = j in fp32_nodes
        for o in outs:
            made32[o] = keep
        if not keep:
            for a in n.attribute:
                if a.name == _DTYPE_ATTR.get(n.op_type) and a.i == FLOAT:
                    a.i = HALF
                elif n.op_type == 'ConstantOfShape' and a.name == 'value' and \
                        a.t.data_type == FLOAT:
                    half = numpy_helper.to_array(a.t).astype(np.float16)
                    a.t.CopyFrom(numpy_helper.from_array(half, a.t.name))

    # float16 graph outputs: the producer writes <name>__fp16, a Cast restores <name>
    renamed: Dict[str, str] = {}
    for name in graph_out:
        if name in made32 and not made32[name] and name not in inits:
            renamed[name] = name + '__fp16'
            made32[renamed[name]] = False
    new_value_info = []
    for name, v in vinfo.items():
        if name in made32:
            v = onnx.ValueInfoProto.FromString(v.SerializeToString())
            v.name = renamed.get(name, name)
            v.type.tensor_type.elem_type = FLOAT if made32[name] else HALF
        new_value_info.append(v)
    out_info = {o.name: o for o in g.output}

    casts: Dict[Tuple[str, bool], str] = {}
    nodes = []

    def cast(name: str, to32: bool) -> str:
        key = (name, to32)
        if key not in casts:
            casts[key] = f"{name}__{'fp32' if to32 else 'fp16'}_cast"
            nodes.append(helper.make_node('Cast', [name], [casts[key]],
                                          to=FLOAT if to32 else HALF,
                                          name=casts[key]))
            src = vinfo.get(name) or out_info.get(name) or \
                next((i for i in g.input if i.name == name), None)
            if src is not None and src.type.tensor_type.HasField('shape'):
                shape = [d.dim_value if d.HasField('dim_value') else (d.dim_param or None)
                         for d in src.type.tensor_type.shape.dim]
                new_value_info.append(helper.make_tensor_value_info(
                    casts[key], FLOAT if to32 else HALF, shape))
        return casts[key]

    for j, n in enumerate(graph_nodes):
        for k, name in enumerate(n.input):
            name = renamed.get(name, name)
            n.input[k] = name
            if name in made32:
                want32 = needs_fp32(j, k)
                if made32[name] != want32:
                    n.input[k] = cast(name, want32)
        for k, name in enumerate(n.output):
            n.output[k] = renamed.get(name, name)
        nodes.append(n)
    for name, half in renamed.items():
        nodes.append(helper.make_node('Cast', [half], [name], to=FLOAT, name=name + '_cast'))
    kept = list(nodes)
    del g.node[:]
    g.node.extend(kept)
    del g.value_info[:]
    g.value_info.extend(new_value_info)
    for i in g.input:
        if i.name in inits:       # old IRs list initializers as inputs too
            i.type.tensor_type.elem_type = inits[i.name].data_type
    onnx.checker.check_model(model, full_check=True)
    return model
