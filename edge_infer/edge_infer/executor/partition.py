# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Split a model's ONNX graph into conv-heavy and light segments (no ROS).

Kim 2021 sends convolutions to the accelerator and pooling, softmax,
fully-connected and other light layers to the CPU. Cutting at every layer
would hand tensors over after each one and lose the fusions ONNX Runtime
makes (Conv + activation); so:

- nodes are classed ``conv`` (Conv, ConvTranspose, ConvInteger, QLinearConv)
  or ``light`` (everything else); element-wise ops that follow a node
  (activations, Add, Mul, BatchNormalization, Clip, ...) take the class of
  the node before them, so Conv + LeakyRelu / Clip / residual Add stay
  together;
- consecutive nodes of one class (in the graph's topological order) form a
  run; a run shorter than ``min_nodes`` joins the run before it (a lone
  MaxPool or Concat between convs is not worth a hand-off);
- each segment is extracted exactly with ``onnx.utils.Extractor`` between
  its boundary tensors: its inputs are the tensors it consumes that earlier
  segments (or the graph input) produce; its outputs the tensors it produces
  that later segments or the graph's outputs consume.

:func:`run_chained` runs the segments one after the other on ONNX Runtime
and returns the graph outputs: equal to the whole model's (tests check it).
"""

from dataclasses import dataclass, field
import pathlib
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

CONV_OPS = frozenset({'Conv', 'ConvTranspose', 'ConvInteger', 'QLinearConv'})
FOLLOW_OPS = frozenset({
    'Relu', 'LeakyRelu', 'Clip', 'Sigmoid', 'HardSigmoid', 'HardSwish', 'Tanh', 'Elu',
    'Selu', 'PRelu', 'Mish', 'Softplus', 'Add', 'Sub', 'Mul', 'Div',
    'BatchNormalization', 'QuantizeLinear', 'DequantizeLinear', 'Cast', 'Identity'})


@dataclass
class Segment:
    """One piece of the graph: which nodes, what crosses its borders, its own model."""

    index: int
    kind: str                      # 'conv' or 'light'
    nodes: List[str]
    op_counts: Dict[str, int]
    inputs: List[str]
    outputs: List[str]
    model: Any = field(repr=False, default=None)        # onnx.ModelProto
    path: Optional[pathlib.Path] = None

    @property
    def name(self) -> str:
        """Return a short label, e.g. ``s0:conv(67)``."""
        return f's{self.index}:{self.kind}({len(self.nodes)})'


def classify(op_types: Sequence[str]) -> List[str]:
    """Return 'conv' / 'light' per node (follow-up element-wise ops take the previous class)."""
    out: List[str] = []
    for op in op_types:
        if op in CONV_OPS:
            out.append('conv')
        elif op in FOLLOW_OPS and out:
            out.append(out[-1])
        else:
            out.append('light')
    return out


def runs(classes: Sequence[str], min_nodes: int = 3) -> List[List[int]]:
    """Group node indices into runs of one class; short runs join the previous run."""
    groups: List[List[int]] = []
    kinds: List[str] = []
    for i, c in enumerate(classes):
        if kinds and kinds[-1] == c:
            groups[-1].append(i)
        else:
            groups.append([i])
            kinds.append(c)
    merged: List[List[int]] = []
    merged_kinds: List[str] = []
    for g, k in zip(groups, kinds):
        if merged and (len(g) < min_nodes or merged_kinds[-1] == k):
            merged[-1].extend(g)
        else:
            merged.append(list(g))
            merged_kinds.append(k)
    # a short first run (e.g. one light node before the first conv) joins the next
    if len(merged) > 1 and len(merged[0]) < min_nodes:
        merged[1] = merged[0] + merged[1]
        merged.pop(0)
    return merged


def _add_value_info(model) -> None:
    """Give every intermediate tensor a type and shape (the Extractor needs them).

    onnx shape inference leaves some out (e.g. Clip with initializer bounds in
    the converted MobileNetV2), so the shapes come from one ONNX Runtime run
    with every intermediate exposed as an output.
    """
    import onnx
    import onnxruntime as ort
    from onnx import helper
    inferred = onnx.shape_inference.infer_shapes(model)
    known = {v.name for v in inferred.graph.value_info} | {o.name for o in model.graph.output}
    inits = {i.name for i in model.graph.initializer}
    wanted = [o for n in model.graph.node for o in n.output if o and o not in known]
    del model.graph.value_info[:]
    model.graph.value_info.extend(inferred.graph.value_info)
    if not wanted:
        return
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for name in wanted:
        probe.graph.output.append(helper.ValueInfoProto(name=name))
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(probe.SerializeToString(), so,
                                providers=['CPUExecutionProvider'])
    feeds = {}
    for i in sess.get_inputs():
        if i.name in inits:
            continue
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
        feeds[i.name] = np.zeros(shape, np.float32)
    values = sess.run(wanted, feeds)
    for name, v in zip(wanted, values):
        model.graph.value_info.append(helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape)))


def partition(model_path: pathlib.Path, min_nodes: int = 3,
              out_dir: Optional[pathlib.Path] = None) -> List[Segment]:
    """Return the model's segments (see the module docstring); write them to out_dir if given."""
    import onnx
    from onnx import utils
    model = onnx.load(str(model_path))
    graph = model.graph
    nodes = list(graph.node)
    classes = classify([n.op_type for n in nodes])
    groups = runs(classes, min_nodes)
    inits = {i.name for i in graph.initializer}
    graph_inputs = [i.name for i in graph.input if i.name not in inits]
    graph_outputs = [o.name for o in graph.output]
    producer = {}
    for idx, n in enumerate(nodes):
        for o in n.output:
            producer[o] = idx
    seg_of = {}
    for s, g in enumerate(groups):
        for idx in g:
            seg_of[idx] = s
    consumers: Dict[str, set] = {}
    for idx, n in enumerate(nodes):
        for i in n.input:
            if i:
                consumers.setdefault(i, set()).add(seg_of[idx])
    _add_value_info(model)
    extractor = utils.Extractor(model)
    segments: List[Segment] = []
    for s, g in enumerate(groups):
        produced = {o for idx in g for o in nodes[idx].output if o}
        ins: List[str] = []
        for idx in g:
            for i in nodes[idx].input:
                if i and i not in produced and i not in inits and i not in ins:
                    if i in producer and seg_of[producer[i]] > s:
                        raise ValueError(f'graph not in topological order at {i}')
                    ins.append(i)
        outs = [o for idx in g for o in nodes[idx].output
                if o and (o in graph_outputs or any(c > s for c in consumers.get(o, ())))]
        if not outs:
            continue    # a dead branch: nothing downstream needs it
        sub = extractor.extract_model(ins, outs)
        counts: Dict[str, int] = {}
        for idx in g:
            counts[nodes[idx].op_type] = counts.get(nodes[idx].op_type, 0) + 1
        kind = 'conv' if counts.get('Conv', 0) + sum(
            counts.get(op, 0) for op in CONV_OPS - {'Conv'}) else 'light'
        seg = Segment(len(segments), kind, [nodes[idx].name for idx in g], counts, ins, outs,
                      sub)
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
            seg.path = out_dir / f'{pathlib.Path(model_path).stem}.seg{seg.index}.onnx'
            onnx.save(sub, str(seg.path))
        segments.append(seg)
    missing = set(graph_outputs) - {o for seg in segments for o in seg.outputs}
    if missing or not graph_inputs:
        raise ValueError(f'partition lost outputs {sorted(missing)}')
    return segments


def run_chained(segments: Sequence[Segment], feeds: Dict[str, np.ndarray],
                output_names: Sequence[str], sessions=None) -> List[np.ndarray]:
    """Run the segments in order on ONNX Runtime CPU; return the named graph outputs."""
    import onnxruntime as ort
    if sessions is None:
        so = ort.SessionOptions()
        so.log_severity_level = 3
        sessions = [ort.InferenceSession(seg.model.SerializeToString(), so,
                                         providers=['CPUExecutionProvider'])
                    for seg in segments]
    env = dict(feeds)
    for seg, sess in zip(segments, sessions):
        outs = sess.run(seg.outputs, {i: env[i] for i in seg.inputs})
        env.update(zip(seg.outputs, outs))
    return [env[n] for n in output_names]
