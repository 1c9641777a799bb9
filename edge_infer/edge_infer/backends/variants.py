# Copyright 2026 edge_infer contributors. Apache-2.0.
"""fp16 and int8 variants of a model file, made on the robot once and cached.

The backend manager runs them like any other candidate; its accuracy check
against the fp32 model on real frames decides whether they may be chosen.

- ``fp16``: our own conversion with the ``onnx`` package (no
  onnxconverter-common). Float32 initializers, Constant tensors and float
  Casts become float16 and the value infos say so; the graph keeps float32
  inputs and outputs through Cast nodes, so callers feed the same tensor.
  Kept in float32: inputs that ONNX types as float32 only or that are
  coordinates (Resize roi/scales, Upsample scales), whole ops without a
  float16 type in ONNX (Range, NonMaxSuppression, (De)QuantizeLinear) and
  float arithmetic on tensor shapes (from Shape/Size), where float16 would
  round sizes above 2048. Non-float tensors are never touched.
- ``int8``: ``onnxruntime.quantization.quantize_static`` (QDQ, per-channel
  int8 weights in 7-bit range, uint8 activations, MinMax calibration) on the
  caller's calibration tensors.
  :func:`calibration_tensors` makes such tensors from the bundled footage.

Files are named ``<stem>.<kind>.<12 hex of the source sha256>.c<converter version>.onnx`` in the
cache directory and written atomically (temporary file + ``os.replace``); an
existing one is returned as is.
"""

from collections import defaultdict
import logging
import os
import pathlib
import tempfile
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from ..checksums import sha256_file
from ..core.backend import first_line

KINDS = ('fp16', 'int8')
Log = Callable[[str], object]

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


class VariantError(ValueError):
    """A variant cannot be made (bad source, kind, or missing calibration)."""


def variant_kinds() -> Tuple[str, ...]:
    """Return the variant kinds make_variant knows: ('fp16', 'int8')."""
    return KINDS


# ---------------------------------------------------------------------- fp16
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


def _to_fp16(model):
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


# ---------------------------------------------------------------------- int8
class _Reader:
    """CalibrationDataReader over a list of tensors."""

    def __init__(self, name: str, tensors: Sequence[np.ndarray]):
        self._tensors = [np.ascontiguousarray(t, np.float32) for t in tensors]
        self._name = name
        self._it = iter(self._tensors)

    def get_next(self):
        t = next(self._it, None)
        return None if t is None else {self._name: t}

    def rewind(self):
        self._it = iter(self._tensors)


def _to_int8(src: pathlib.Path, dst: pathlib.Path, calibration: Sequence[np.ndarray]) -> None:
    """Quantize ``src`` to QDQ int8 at ``dst``, calibrated (MinMax) on ``calibration``.

    ``reduce_range``: 7-bit weights. On x86 CPUs without VNNI (AVX2 only,
    as the development machine) ORT's u8s8 kernels add pairs of products in
    int16, which saturates with full-range weights: measured here, MobileNetV2
    top-1 agreed with fp32 on 6 of 16 frames without it, 13 of 16 with it.
    ``quant_pre_process`` is not run: on both bundled models it changed
    neither the result nor the accuracy and added 0.4-1 s (and its symbolic
    shape inference needs sympy).
    """
    import onnx
    from onnxruntime.quantization import (CalibrationMethod, QuantFormat, quantize_static,
                                          QuantType)
    model = onnx.load(str(src))
    inits = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    if len(names) != 1:
        raise VariantError(f'int8: {src.name} has {len(names)} inputs; calibration feeds one')
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)    # the quantizer logs advice on the root logger
    try:
        quantize_static(str(src), str(dst), _Reader(names[0], calibration),
                        quant_format=QuantFormat.QDQ, per_channel=True, reduce_range=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.MinMax)
    finally:
        root.setLevel(level)


# ---------------------------------------------------------------------- API
# Part of every variant's file name: bump it when a conversion changes, so files
# made by an older converter (e.g. int8 before reduce_range) are not reused.
CONVERTER_VERSION = 2


def variant_path(src: pathlib.Path, kind: str, cache_dir: pathlib.Path) -> pathlib.Path:
    """Return where the ``kind`` variant of ``src`` lives in ``cache_dir`` (hashes src)."""
    src = pathlib.Path(src)
    return pathlib.Path(cache_dir) / (f'{src.stem}.{kind}.{sha256_file(src)[:12]}'
                                      f'.c{CONVERTER_VERSION}.onnx')


def make_variant(src: pathlib.Path, kind: str, cache_dir: pathlib.Path,
                 calibration: Optional[Sequence[np.ndarray]] = None,
                 log: Log = print) -> pathlib.Path:
    """Return the ``kind`` variant of model file ``src``, converting it the first time.

    :param src: float32 ONNX model.
    :param kind: 'fp16' or 'int8' (see :func:`variant_kinds`).
    :param cache_dir: folder of the variants (created if missing).
    :param calibration: int8 only: preprocessed input tensors (see
        :func:`calibration_tensors`).
    :param log: gets one line when a variant is made (nothing on a cache hit).
    :returns: ``cache_dir/<stem>.<kind>.<12 hex of src's sha256>.c<N>.onnx``.
    :raises VariantError: unknown kind, missing or unreadable source, no
        calibration for int8, or a conversion that failed.
    """
    import time
    if kind not in KINDS:
        raise VariantError(f"variant kind '{kind}' unknown: use one of {', '.join(KINDS)}")
    src = pathlib.Path(src)
    if not src.is_file():
        raise VariantError(f'source model {src} not found')
    out = variant_path(src, kind, cache_dir)
    if out.is_file():
        return out
    if kind == 'int8' and (calibration is None or len(calibration) == 0):
        raise VariantError('int8 needs calibration frames (preprocessed input tensors, '
                           'see calibration_tensors)')
    import onnx
    try:
        model = onnx.load(str(src))
        onnx.checker.check_model(model)
    except Exception as exc:  # protobuf DecodeError, checker ValidationError, ...
        raise VariantError(f'{kind}: source {src.name} is not a valid ONNX model: '
                           f'{first_line(exc)}') from None
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=out.name + '.', suffix='.tmp', dir=out.parent)
    os.close(fd)
    t0 = time.perf_counter()
    try:
        try:
            if kind == 'fp16':
                onnx.save(_to_fp16(model), tmp)
            else:
                assert calibration is not None      # int8 without it was refused above
                _to_int8(src, pathlib.Path(tmp), calibration)
        except VariantError:
            raise
        except Exception as exc:  # onnx / ORT errors on an unusual graph
            raise VariantError(f'{kind} conversion of {src.name} failed: '
                               f'{first_line(exc)}') from None
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    log(f'made {kind} variant {out.name} ({out.stat().st_size / 1e6:.1f} MB) '
        f'in {time.perf_counter() - t0:.1f} s')
    return out


def calibration_tensors(spec, n: int = 8, phase: float = 0.0, photos: bool = True,
                        log: Callable[[str], None] = print) -> List[np.ndarray]:
    """Return ``n`` preprocessed real frames for registry model ``spec`` (int8 calibration).

    Video frames and photos from :func:`profiling.calibration_frames`, each
    preprocessed as the model's node does (``core.preprocess.Preprocessor``)
    and copied (the preprocessor reuses its buffer).

    :raises VariantError: no real footage (random frames would calibrate nothing).
    """
    from ..core.preprocess import Preprocessor
    from .profiling import calibration_frames
    frames, what = calibration_frames(n, log=log, phase=phase, photos=photos)
    if 'synthetic' in what:
        raise VariantError(f'no footage for calibration: {what}')
    pre = Preprocessor(spec.input_spec)
    return [np.array(pre(f)[0], copy=True) for f in frames]
