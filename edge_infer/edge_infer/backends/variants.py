# Copyright 2026 edge_infer contributors. Apache-2.0.
"""fp16 and int8 variants of a model file, made on the robot once and cached.

The backend manager runs them like any other candidate; its accuracy check
against the fp32 model on real frames decides whether they may be chosen.

- ``fp16``: our own conversion with the ``onnx`` package (no
  onnxconverter-common): float32 initializers and Constant tensors become
  float16, except those that feed shape-like inputs (Resize roi/scales);
  the graph keeps float32 inputs and outputs through Cast nodes, so callers
  feed the same tensor. Value infos are dropped (ONNX Runtime re-infers).
- ``int8``: ``onnxruntime.quantization.quantize_static`` (QDQ, per-channel
  weights, MinMax calibration) on the caller's calibration tensors.

Files are named ``<stem>.<kind>.<12 hex of the source sha256>.onnx`` in the
cache directory and written atomically; an existing one is reused.
"""

import logging
import os
import pathlib
import tempfile
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ..checksums import sha256_file

KINDS = ('fp16', 'int8')
# (op type, input index) that must stay float32 in an fp16 graph
_KEEP_FP32 = {('Resize', 1), ('Resize', 2), ('Upsample', 1)}


class VariantError(ValueError):
    """A variant cannot be made (bad source, kind, or missing calibration)."""


def variant_kinds() -> Tuple[str, ...]:
    """Return the variant kinds."""
    return KINDS


def _to_fp16(model):
    import onnx
    from onnx import helper, numpy_helper, TensorProto
    g = model.graph
    keep = {n.input[i] for n in g.node for (op, i) in _KEEP_FP32
            if n.op_type == op and len(n.input) > i and n.input[i]}
    for init in g.initializer:
        if init.data_type == TensorProto.FLOAT and init.name not in keep:
            arr = numpy_helper.to_array(init).astype(np.float16)
            init.CopyFrom(numpy_helper.from_array(arr, init.name))
    for n in g.node:
        if n.op_type == 'Constant' and n.output[0] not in keep:
            for a in n.attribute:
                if a.name == 'value' and a.t.data_type == TensorProto.FLOAT:
                    arr = numpy_helper.to_array(a.t).astype(np.float16)
                    a.t.CopyFrom(numpy_helper.from_array(arr, a.t.name))
        if n.op_type == 'Cast':
            for a in n.attribute:
                if a.name == 'to' and a.i == TensorProto.FLOAT:
                    a.i = TensorProto.FLOAT16
    inits = {i.name for i in g.initializer}
    casts = []
    for inp in g.input:
        if inp.name in inits or inp.type.tensor_type.elem_type != TensorProto.FLOAT:
            continue
        half = inp.name + '__fp16'
        for n in g.node:
            for k, name in enumerate(n.input):
                if name == inp.name:
                    n.input[k] = half
        casts.append(helper.make_node('Cast', [inp.name], [half], to=TensorProto.FLOAT16,
                                      name=half + '_cast'))
    tail = []
    for out in g.output:
        if out.type.tensor_type.elem_type != TensorProto.FLOAT:
            continue
        half = out.name + '__fp16'
        for n in g.node:
            for k, name in enumerate(n.output):
                if name == out.name:
                    n.output[k] = half
            for k, name in enumerate(n.input):
                if name == out.name:
                    n.input[k] = half
        tail.append(helper.make_node('Cast', [half], [out.name], to=TensorProto.FLOAT,
                                     name=out.name + '_cast'))
    nodes = casts + list(g.node) + tail
    del g.node[:]
    g.node.extend(nodes)
    del g.value_info[:]
    onnx.checker.check_model(model)
    return model


class _Reader:
    """CalibrationDataReader over a list of tensors."""

    def __init__(self, name: str, tensors: Sequence[np.ndarray]):
        self._it = iter([{name: np.ascontiguousarray(t, np.float32)} for t in tensors])

    def get_next(self):
        return next(self._it, None)


def _to_int8(src: pathlib.Path, dst: pathlib.Path, calibration: Sequence[np.ndarray]):
    import onnx
    from onnxruntime.quantization import (CalibrationMethod, QuantFormat, quantize_static,
                                          QuantType)
    model = onnx.load(str(src))
    inits = {i.name for i in model.graph.initializer}
    name = next(i.name for i in model.graph.input if i.name not in inits)
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)    # the quantizer logs advice on the root logger
    try:
        quantize_static(str(src), str(dst), _Reader(name, calibration),
                        quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.MinMax)
    finally:
        root.setLevel(level)


def make_variant(src: pathlib.Path, kind: str, cache_dir: pathlib.Path,
                 calibration: Optional[Sequence[np.ndarray]] = None,
                 log=print) -> pathlib.Path:
    """Return the ``kind`` variant of ``src`` (converted once, then read from the cache)."""
    import onnx
    if kind not in KINDS:
        raise VariantError(f"variant kind '{kind}': use one of {', '.join(KINDS)}")
    src = pathlib.Path(src)
    if not src.is_file():
        raise VariantError(f'source model {src} not found')
    out = pathlib.Path(cache_dir) / f'{src.stem}.{kind}.{sha256_file(src)[:12]}.onnx'
    if out.is_file():
        return out
    if kind == 'int8' and not calibration:
        raise VariantError('int8 needs calibration frames (preprocessed input tensors)')
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix='.onnx', dir=out.parent)
    os.close(fd)
    try:
        try:
            if kind == 'fp16':
                onnx.save(_to_fp16(onnx.load(str(src))), tmp)
            else:
                _to_int8(src, pathlib.Path(tmp), calibration)
        except VariantError:
            raise
        except Exception as exc:  # onnx / ORT errors on a bad or unusual graph
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise VariantError(f'{kind} conversion of {src.name} failed: {first}') from None
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    log(f'made {kind} variant {out.name}')
    return out


def calibration_tensors(spec, n: int = 8) -> List[np.ndarray]:
    """Return ``n`` preprocessed real frames for a registry model (copies)."""
    from ..core.preprocess import Preprocessor
    from .profiling import calibration_frames
    frames, _ = calibration_frames(n)
    pre = Preprocessor(spec.input_spec)
    return [np.array(pre(f)[0], copy=True) for f in frames]
