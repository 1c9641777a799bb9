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
    """Convert a float32 ModelProto to float16 in place, float32 at its inputs/outputs.

    The stages: the graph checked for what is not supported, the dtype each
    float tensor is produced in decided (and the initializers, Constants,
    Casts and dtype attributes converted), the value infos retyped, and the
    nodes rewired with a Cast wherever a producer and a user differ.
    """
    import onnx
    _check_supported(model.graph)
    plan = _Fp16Plan(model)
    made32 = plan.produced_dtypes()
    renamed, value_info = plan.value_infos(made32)
    plan.rewire(made32, renamed, value_info)
    onnx.checker.check_model(model, full_check=True)
    return model


def _check_supported(g) -> None:
    """Raise VariantError for subgraphs (If/Loop/Scan) and sparse initializers."""
    import onnx
    for n in g.node:
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for a in n.attribute):
            raise VariantError(f"fp16: node '{n.name}' ({n.op_type}) has a subgraph; "
                               f'If/Loop/Scan are not supported')
    if len(g.sparse_initializer):
        raise VariantError('fp16: sparse initializers are not supported')


def _half_tensor(t):
    """Return the TensorProto ``t`` as float16, same name."""
    from onnx import numpy_helper
    return numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name)


class _Fp16Plan:
    """What the conversion knows of one graph: tensor types, uses, the nodes kept float32."""

    def __init__(self, model) -> None:
        import onnx
        from onnx import TensorProto
        self.FLOAT, self.HALF = TensorProto.FLOAT, TensorProto.FLOAT16
        self.g = g = model.graph
        inferred = onnx.shape_inference.infer_shapes(model)
        self.vinfo = {v.name: v for v in inferred.graph.value_info}
        self.types: Dict[str, int] = {}
        for v in list(inferred.graph.input) + list(inferred.graph.value_info) + \
                list(inferred.graph.output):
            self.types[v.name] = v.type.tensor_type.elem_type
        self.inits = {i.name: i for i in g.initializer}
        for name, init in self.inits.items():
            self.types[name] = init.data_type
        for n in g.node:          # Constant outputs, should inference have missed them
            if n.op_type == 'Constant':
                for a in n.attribute:
                    if a.name in ('value_float', 'value_floats'):
                        self.types[n.output[0]] = self.FLOAT
                    elif a.name == 'value':
                        self.types[n.output[0]] = a.t.data_type
        constants = set(self.inits) | {n.output[0] for n in g.node if n.op_type == 'Constant'}
        shape_math = _shape_derived(g, constants)
        # protobuf wrappers are not stable objects: nodes are known by their index
        self.nodes = list(g.node)
        self.fp32_nodes = {
            j for j, n in enumerate(self.nodes) if n.op_type in FP32_OPS or
            any(t in shape_math and self.is_float(t) for t in list(n.input) + list(n.output))}
        self.graph_in = {i.name for i in g.input if i.name not in self.inits}
        self.graph_out = {o.name for o in g.output}
        self.uses: Dict[str, list] = defaultdict(list)
        for j, n in enumerate(self.nodes):
            for k, name in enumerate(n.input):
                if name:
                    self.uses[name].append(self.needs_fp32(j, k))

    def is_float(self, name: str) -> bool:
        """Return True for a float32 tensor."""
        return bool(name) and self.types.get(name) == self.FLOAT

    def needs_fp32(self, j: int, k: int) -> bool:
        """Return True when node ``j``'s input ``k`` must be float32."""
        return j in self.fp32_nodes or (self.nodes[j].op_type, k) in FP32_INPUTS

    def only_fp32_uses(self, name: str) -> bool:
        """Return True when every user of ``name`` (or the graph's output) wants float32."""
        return name in self.graph_out or (bool(self.uses[name]) and all(self.uses[name]))

    def produced_dtypes(self) -> Dict[str, bool]:
        """Return the dtype each float tensor is produced in (True: float32), converting."""
        made32: Dict[str, bool] = {}
        for name in self.graph_in:
            if self.is_float(name):
                made32[name] = True
        for name, init in self.inits.items():
            if init.data_type == self.FLOAT:
                made32[name] = self.only_fp32_uses(name)
                if not made32[name]:
                    init.CopyFrom(_half_tensor(init))
        for j, n in enumerate(self.nodes):
            outs = [o for o in n.output if self.is_float(o)]
            if n.op_type == 'Constant' and outs:
                made32[outs[0]] = keep = self.only_fp32_uses(outs[0])
                if not keep:
                    self._half_constant(n)
            elif n.op_type == 'Cast' and outs:
                made32[outs[0]] = keep = j in self.fp32_nodes or self.only_fp32_uses(outs[0])
                if not keep:
                    for a in n.attribute:
                        if a.name == 'to':
                            a.i = self.HALF
            else:
                keep = j in self.fp32_nodes
                for o in outs:
                    made32[o] = keep
                if not keep:
                    self._half_attributes(n)
        return made32

    def _half_constant(self, n) -> None:
        """Make a Constant node's float value float16."""
        from onnx import helper, numpy_helper
        for a in list(n.attribute):
            if a.name == 'value':
                a.t.CopyFrom(_half_tensor(a.t))
            elif a.name in ('value_float', 'value_floats'):
                val = np.asarray(a.f if a.name == 'value_float' else list(a.floats),
                                 np.float16)
                n.attribute.remove(a)
                n.attribute.append(helper.make_attribute('value', numpy_helper.from_array(val)))

    def _half_attributes(self, n) -> None:
        """Make the float dtype attributes (and ConstantOfShape's value) of a node float16."""
        for a in n.attribute:
            if a.name == _DTYPE_ATTR.get(n.op_type) and a.i == self.FLOAT:
                a.i = self.HALF
            elif n.op_type == 'ConstantOfShape' and a.name == 'value' and \
                    a.t.data_type == self.FLOAT:
                a.t.CopyFrom(_half_tensor(a.t))

    def value_infos(self, made32: Dict[str, bool]) -> Tuple[Dict[str, str], list]:
        """Return (float16 graph outputs renamed <name>__fp16, the retyped value infos)."""
        import onnx
        renamed: Dict[str, str] = {}
        for name in self.graph_out:
            if name in made32 and not made32[name] and name not in self.inits:
                renamed[name] = name + '__fp16'
                made32[renamed[name]] = False
        value_info = []
        for name, v in self.vinfo.items():
            if name in made32:
                v = onnx.ValueInfoProto.FromString(v.SerializeToString())
                v.name = renamed.get(name, name)
                v.type.tensor_type.elem_type = self.FLOAT if made32[name] else self.HALF
            value_info.append(v)
        return renamed, value_info

    def rewire(self, made32: Dict[str, bool], renamed: Dict[str, str], value_info: list) -> None:
        """Put a Cast wherever producer and user differ; restore float32 graph outputs."""
        from onnx import helper
        g = self.g
        casts: Dict[Tuple[str, bool], str] = {}
        nodes: list = []
        out_info = {o.name: o for o in g.output}

        def cast(name: str, to32: bool) -> str:
            key = (name, to32)
            if key not in casts:
                casts[key] = f"{name}__{'fp32' if to32 else 'fp16'}_cast"
                nodes.append(helper.make_node('Cast', [name], [casts[key]],
                                              to=self.FLOAT if to32 else self.HALF,
                                              name=casts[key]))
                src = self.vinfo.get(name) or out_info.get(name) or \
                    next((i for i in g.input if i.name == name), None)
                if src is not None and src.type.tensor_type.HasField('shape'):
                    shape = [d.dim_value if d.HasField('dim_value') else (d.dim_param or None)
                             for d in src.type.tensor_type.shape.dim]
                    value_info.append(helper.make_tensor_value_info(
                        casts[key], self.FLOAT if to32 else self.HALF, shape))
            return casts[key]

        for j, n in enumerate(self.nodes):
            for k, name in enumerate(n.input):
                name = renamed.get(name, name)
                n.input[k] = name
                if name in made32 and made32[name] != self.needs_fp32(j, k):
                    n.input[k] = cast(name, self.needs_fp32(j, k))
            for k, name in enumerate(n.output):
                n.output[k] = renamed.get(name, name)
            nodes.append(n)
        for name, half in renamed.items():
            nodes.append(helper.make_node('Cast', [half], [name], to=self.FLOAT,
                                          name=name + '_cast'))
        kept = list(nodes)
        del g.node[:]
        g.node.extend(kept)
        del g.value_info[:]
        g.value_info.extend(value_info)
        for i in g.input:
            if i.name in self.inits:       # old IRs list initializers as inputs too
                i.type.tensor_type.elem_type = self.inits[i.name].data_type
