# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Convert a TensorFlow.js graph model (model.json + weight shards) to ONNX.

No TensorFlow needed: the ``modelTopology`` of a TF.js ``graph-model`` is a
TensorFlow GraphDef written as JSON, and its constants live in the binary
shards described by ``weightsManifest``. This module reads both and writes an
ONNX graph (opset 17) for the small set of ops that convolutional detectors
exported through onnx-tf use:

    Placeholder, Const, Identity, Transpose, Add, AddV2, Sub, Mul, Conv2D,
    MaxPool, Pad, PadV2, LeakyRelu, Relu, Relu6, Sigmoid, ConcatV2, SplitV,
    Split, Reshape, ResizeBilinear, SparseToDense, Cast

How it works:

- Every node whose inputs are all constant is evaluated with numpy
  (constant folding); SparseToDense and Cast are only supported that way.
- Layout: each TF tensor is kept as an ONNX tensor plus a permutation
  ``perm`` with ``onnx_tensor == np.transpose(tf_tensor, perm)``. A TF
  ``Transpose`` only changes ``perm``; a real ONNX ``Transpose`` is emitted
  only where an op needs a particular layout (NHWC ``Conv2D``/``MaxPool``
  need NCHW in ONNX, ``Reshape`` and graph outputs need TF's own layout).
  The NHWC <-> NCHW transposes around every convolution of an onnx-tf
  export therefore cancel out.
- Clean-up passes fold a zero ``Pad`` into the following ``Conv`` (and a
  ``-inf`` one into ``MaxPool``) and a per-channel constant ``Add`` into the
  convolution bias.

The result is deterministic: same input, same bytes.
"""

from __future__ import annotations

import base64
import collections
import json
import os
import pathlib
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import onnx
from onnx import helper, numpy_helper

OPSET = 17
IR_VERSION = 8
PRODUCER = 'edge_infer'

TF_DTYPES: Dict[str, np.dtype] = {
    'DT_FLOAT': np.dtype(np.float32), 'DT_DOUBLE': np.dtype(np.float64),
    'DT_HALF': np.dtype(np.float16), 'DT_INT32': np.dtype(np.int32),
    'DT_INT64': np.dtype(np.int64), 'DT_INT16': np.dtype(np.int16),
    'DT_INT8': np.dtype(np.int8), 'DT_UINT8': np.dtype(np.uint8),
    'DT_BOOL': np.dtype(np.bool_),
}
MANIFEST_DTYPES: Dict[str, np.dtype] = {
    'float32': np.dtype('<f4'), 'float16': np.dtype('<f2'), 'int32': np.dtype('<i4'),
    'uint8': np.dtype('u1'), 'uint16': np.dtype('<u2'), 'int8': np.dtype('i1'),
    'int16': np.dtype('<i2'), 'bool': np.dtype('?'),
}


class ConversionError(ValueError):
    """The model uses something this converter does not handle; the message says what."""


# ---------------------------------------------------------------------------
# Reading the TF.js files
# ---------------------------------------------------------------------------

def read_weights(manifest: Sequence[Mapping[str, Any]],
                 read_shard: Callable[[str], bytes]) -> Dict[str, np.ndarray]:
    """Decode a TF.js ``weightsManifest`` into ``{name: ndarray}``.

    ``read_shard(path)`` returns the bytes of one shard file; the shards of a
    group are concatenated and its weights laid out one after the other.
    Quantized weights (``quantization``: float16, or uint8/uint16 with
    ``min``/``scale``) are dequantized to their declared dtype.
    """
    out: Dict[str, np.ndarray] = {}
    for group in manifest:
        buf = b''.join(read_shard(p) for p in group['paths'])
        offset = 0
        for w in group['weights']:
            name, shape = w['name'], [int(s) for s in w.get('shape', [])]
            count = int(np.prod(shape)) if shape else 1
            dtype = MANIFEST_DTYPES.get(w['dtype'])
            if dtype is None:
                raise ConversionError(f'weight {name}: dtype {w["dtype"]} not supported')
            quant = w.get('quantization')
            stored = MANIFEST_DTYPES[quant['dtype']] if quant else dtype
            nbytes = count * stored.itemsize
            if offset + nbytes > len(buf):
                raise ConversionError(f'weight {name}: weight data ends at byte {len(buf)}, '
                                      f'needs {offset + nbytes}')
            raw = np.frombuffer(buf, stored, count=count, offset=offset).reshape(shape)
            offset += nbytes
            if quant is None:
                value = raw.astype(dtype.newbyteorder('='))
            elif quant['dtype'] == 'float16':
                value = raw.astype(np.float32).astype(dtype.newbyteorder('='))
            elif 'scale' in quant:
                real = raw.astype(np.float64) * float(quant['scale']) + float(quant.get('min', 0))
                if dtype.kind in 'iub':
                    real = np.round(real)
                value = real.astype(dtype.newbyteorder('='))
            else:
                raise ConversionError(f'weight {name}: quantization {quant} not supported')
            out[name] = value
        if offset != len(buf):
            raise ConversionError(f'weight shards {group["paths"]}: {len(buf) - offset} bytes '
                                  'left over after the last weight')
    return out


def _attr(node: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """Decode one GraphDef attr (JSON form) to a Python value."""
    a = node.get('attr', {}).get(key)
    if a is None:
        return default
    if 's' in a:
        return base64.b64decode(a['s']).decode()
    if 'i' in a:
        return int(a['i'])
    if 'f' in a:
        return float(a['f'])
    if 'b' in a:
        return bool(a['b'])
    if 'type' in a:
        return a['type']
    if 'list' in a:
        lst = a['list']
        if 'i' in lst:
            return [int(v) for v in lst['i']]
        if 'f' in lst:
            return [float(v) for v in lst['f']]
        if 's' in lst:
            return [base64.b64decode(v).decode() for v in lst['s']]
        return []
    if 'shape' in a:
        return [int(d.get('size', -1)) for d in a['shape'].get('dim', [])]
    return default


# ---------------------------------------------------------------------------
# Conversion
# ---------------------------------------------------------------------------

class _Dyn:
    """A runtime tensor: ONNX name, ``perm`` (onnx = tf.transpose(perm)), TF shape, dtype."""

    __slots__ = ('name', 'perm', 'shape', 'dtype')

    def __init__(self, name: str, perm: Sequence[int], shape: Sequence[int], dtype: np.dtype):
        self.name = name
        self.perm = tuple(int(p) for p in perm)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)


def _identity(rank: int) -> Tuple[int, ...]:
    return tuple(range(rank))


def _inverse(perm: Sequence[int]) -> Tuple[int, ...]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


NCHW_OF_NHWC = (0, 3, 1, 2)


def _same_pads(size: int, k: int, s: int, d: int) -> Tuple[int, int]:
    """TF 'SAME' padding (extra pixel at the end)."""
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


def _resolve_shape(in_shape: Sequence[int], target: Sequence[int]) -> Tuple[int, ...]:
    target = [int(t) for t in target]
    total = int(np.prod(in_shape)) if in_shape else 1
    if target.count(-1) > 1:
        raise ConversionError(f'reshape target {target} has more than one -1')
    if -1 in target:
        known = int(np.prod([t for t in target if t != -1])) if len(target) > 1 else 1
        if known == 0 or total % known:
            raise ConversionError(f'cannot reshape {tuple(in_shape)} to {target}')
        target[target.index(-1)] = total // known
    if int(np.prod(target)) != total:
        raise ConversionError(f'cannot reshape {tuple(in_shape)} to {target}')
    return tuple(target)


def _split_sizes(sizes: Sequence[int], dim: int) -> List[int]:
    sizes = [int(s) for s in sizes]
    if -1 in sizes:
        sizes[sizes.index(-1)] = dim - (sum(sizes) + 1)
    if sum(sizes) != dim or min(sizes) < 0:
        raise ConversionError(f'split sizes {sizes} do not add up to {dim}')
    return sizes


def _sparse_to_dense(indices: np.ndarray, shape: np.ndarray, values: np.ndarray,
                     default: np.ndarray) -> np.ndarray:
    shape = tuple(int(s) for s in np.atleast_1d(shape))
    out = np.full(shape, default, dtype=np.asarray(values).dtype)
    idx = np.asarray(indices, np.int64)
    if idx.size:
        idx = idx.reshape(-1, len(shape)) if idx.ndim != 1 or len(shape) != 1 \
            else idx.reshape(-1, 1)
        out[tuple(idx.T)] = values
    return out


def _tf_resize_bilinear(x: np.ndarray, size: Sequence[int], align_corners: bool,
                        half_pixel: bool) -> np.ndarray:
    """Numpy ResizeBilinear with TF's semantics (NHWC); used to fold constants and in tests."""
    n, h, w, c = x.shape
    oh, ow = int(size[0]), int(size[1])

    def weights(out: int, inp: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        if align_corners and out > 1:
            scale = (inp - 1) / (out - 1)
        else:
            scale = inp / out
        o = np.arange(out, dtype=np.float64)
        src = (o + 0.5) * scale - 0.5 if half_pixel else o * scale
        lo_f = np.floor(src)
        lerp = src - lo_f
        lo = np.clip(lo_f, 0, inp - 1).astype(np.int64)
        hi = np.clip(np.ceil(src), 0, inp - 1).astype(np.int64)
        return lo, hi, lerp

    y0, y1, ly = weights(oh, h)
    x0, x1, lx = weights(ow, w)
    xf = x.astype(np.float64)
    top = xf[:, y0][:, :, x0] * (1 - lx)[None, None, :, None] + \
        xf[:, y0][:, :, x1] * lx[None, None, :, None]
    bot = xf[:, y1][:, :, x0] * (1 - lx)[None, None, :, None] + \
        xf[:, y1][:, :, x1] * lx[None, None, :, None]
    return (top * (1 - ly)[None, :, None, None] + bot * ly[None, :, None, None]).astype(
        np.float32)


def _np_pad(x: np.ndarray, pads: np.ndarray, value: Any) -> np.ndarray:
    return np.pad(x, [(int(a), int(b)) for a, b in np.asarray(pads).reshape(-1, 2)],
                  constant_values=value)


class _Converter:
    def __init__(self, nodes: Sequence[Mapping[str, Any]], weights: Mapping[str, np.ndarray],
                 input_names: Mapping[str, str], input_shapes: Mapping[str, Sequence[int]]):
        self.tf_nodes = {n['name']: n for n in nodes}
        if len(self.tf_nodes) != len(nodes):
            raise ConversionError('duplicate node names in the graph')
        self.order = [n['name'] for n in nodes]
        self.weights = weights
        self.input_names = dict(input_names)
        self.input_shapes = {k: tuple(v) for k, v in input_shapes.items()}
        self.values: Dict[str, Any] = {}  # TF tensor name -> np.ndarray (const) or _Dyn
        self.onnx_nodes: List[onnx.NodeProto] = []
        self.inits: Dict[str, np.ndarray] = {}
        self.graph_inputs: List[onnx.ValueInfoProto] = []
        self._transposed: Dict[Tuple[str, Tuple[int, ...]], str] = {}
        self._names: set = set()

    # -- helpers -----------------------------------------------------------
    def unique(self, base: str) -> str:
        name, i = base, 1
        while name in self._names:
            name = f'{base}_{i}'
            i += 1
        self._names.add(name)
        return name

    def const(self, base: str, value: np.ndarray) -> str:
        value = np.array(value, order='C')
        if value.size <= 16:  # reuse identical small constants (pads, shapes, ...)
            for name, existing in self.inits.items():
                if name.startswith(base) and existing.dtype == value.dtype and \
                        existing.shape == value.shape and np.array_equal(existing, value):
                    return name
        name = self.unique(base)
        self.inits[name] = value
        return name

    def node(self, op: str, inputs: Sequence[str], outputs: Sequence[str], name: str,
             **attrs: Any) -> None:
        self.onnx_nodes.append(helper.make_node(op, list(inputs), list(outputs), name=name,
                                                **attrs))

    def layout(self, v: _Dyn, want: Sequence[int]) -> str:
        """Return an ONNX tensor name holding ``tf.transpose(want)`` of ``v``."""
        want = tuple(want)
        inv = _inverse(v.perm)
        r = tuple(inv[w] for w in want)
        if r == _identity(len(r)):
            return v.name
        key = (v.name, r)
        if key not in self._transposed:
            out = self.unique(f'{v.name}__T{"".join(map(str, r))}')
            self.node('Transpose', [v.name], [out], name=out, perm=list(r))
            self._transposed[key] = out
        return self._transposed[key]

    def const_in_layout(self, base: str, c: np.ndarray, rank: int, perm: Sequence[int]) -> str:
        c = np.asarray(c)
        if c.ndim > rank:
            raise ConversionError(f'{base}: constant of rank {c.ndim} against rank {rank}')
        full = c.reshape((1,) * (rank - c.ndim) + c.shape)
        return self.const(base, np.transpose(full, perm))

    # -- graph walk --------------------------------------------------------
    def topo_order(self, needed: Iterable[str]) -> List[str]:
        """Nodes needed for ``needed`` outputs, inputs first, ties in file order."""
        index = {n: i for i, n in enumerate(self.order)}
        seen: Dict[str, int] = {}
        out: List[str] = []
        for root in sorted(set(needed), key=lambda n: index.get(n, -1)):
            stack = [(root, False)]
            while stack:
                name, done = stack.pop()
                if done:
                    if seen.get(name) != 2:
                        seen[name] = 2
                        out.append(name)
                    continue
                if seen.get(name):
                    if seen[name] == 1:
                        raise ConversionError(f'graph has a cycle through {name}')
                    continue
                if name not in self.tf_nodes:
                    raise ConversionError(f'node {name} is referenced but not defined')
                seen[name] = 1
                stack.append((name, True))
                deps = [_node_of(i) for i in self.tf_nodes[name].get('input', [])
                        if not i.startswith('^')]
                for d in sorted(set(deps), key=lambda n: -index.get(n, -1)):
                    if not seen.get(d):
                        stack.append((d, False))
                    elif seen[d] == 1:
                        raise ConversionError(f'graph has a cycle through {d}')
        return out

    def get(self, ref: str) -> Any:
        node, idx = _split_ref(ref)
        key = node if idx == 0 else f'{node}:{idx}'
        if key not in self.values:
            raise ConversionError(f'tensor {ref} not produced (unsupported output index?)')
        return self.values[key]

    def convert_node(self, name: str) -> None:
        n = self.tf_nodes[name]
        op = n['op']
        ins = [self.get(i) for i in n.get('input', []) if not i.startswith('^')]
        if op == 'Const':
            self.values[name] = self.const_value(n)
            return
        if op == 'Placeholder':
            self.values[name] = self.placeholder(n)
            return
        if ins and all(isinstance(v, np.ndarray) for v in ins) and op in FOLD:
            result = FOLD[op](n, ins)
            if isinstance(result, list):
                for i, r in enumerate(result):
                    self.values[name if i == 0 else f'{name}:{i}'] = np.asarray(r)
            else:
                self.values[name] = np.asarray(result)
            return
        handler = getattr(self, f'op_{op}', None)
        if handler is None:
            raise ConversionError(f'op {op} (node {name}) is not supported'
                                  + (' with non-constant inputs' if op in FOLD else ''))
        handler(n, ins)

    def const_value(self, n: Mapping[str, Any]) -> np.ndarray:
        name = n['name']
        if name not in self.weights:
            raise ConversionError(f'Const {name} has no value in the weights manifest')
        value = self.weights[name]
        dtype = TF_DTYPES.get(_attr(n, 'dtype', ''))
        if dtype is not None and value.dtype != dtype:
            value = value.astype(dtype)
        return value

    def placeholder(self, n: Mapping[str, Any]) -> _Dyn:
        tf_name = n['name']
        shape = self.input_shapes.get(tf_name) or tuple(_attr(n, 'shape', []))
        if not shape or any(int(s) < 0 for s in shape):
            raise ConversionError(f'input {tf_name} has shape {shape}: give a static shape')
        dtype = TF_DTYPES.get(_attr(n, 'dtype', 'DT_FLOAT'))
        if dtype is None:
            raise ConversionError(f'input {tf_name}: dtype {_attr(n, "dtype")} not supported')
        onnx_name = self.input_names.get(tf_name, tf_name)
        self._names.add(onnx_name)
        self.graph_inputs.append(helper.make_tensor_value_info(
            onnx_name, helper.np_dtype_to_tensor_dtype(dtype), list(shape)))
        return _Dyn(onnx_name, _identity(len(shape)), shape, dtype)

    def dyn(self, n: Mapping[str, Any], v: Any, what: str = 'input') -> _Dyn:
        if not isinstance(v, _Dyn):
            raise ConversionError(f'{n["op"]} {n["name"]}: constant {what} not supported')
        return v

    def const_arg(self, n: Mapping[str, Any], v: Any, what: str) -> np.ndarray:
        if not isinstance(v, np.ndarray):
            raise ConversionError(f'{n["op"]} {n["name"]}: {what} must be constant')
        return v

    # -- ops ----------------------------------------------------------------
    def op_Identity(self, n, ins) -> None:
        self.values[n['name']] = ins[0]

    def _unary(self, n, ins, onnx_op: str, **attrs) -> None:
        x = self.dyn(n, ins[0])
        out = self.unique(n['name'])
        self.node(onnx_op, [x.name], [out], name=out, **attrs)
        self.values[n['name']] = _Dyn(out, x.perm, x.shape, x.dtype)

    def op_Sigmoid(self, n, ins) -> None:
        self._unary(n, ins, 'Sigmoid')

    def op_Relu(self, n, ins) -> None:
        self._unary(n, ins, 'Relu')

    def op_LeakyRelu(self, n, ins) -> None:
        self._unary(n, ins, 'LeakyRelu', alpha=float(_attr(n, 'alpha', 0.2)))

    def op_Relu6(self, n, ins) -> None:
        x = self.dyn(n, ins[0])
        lo = self.const('relu6_min', np.array(0, x.dtype))
        hi = self.const('relu6_max', np.array(6, x.dtype))
        out = self.unique(n['name'])
        self.node('Clip', [x.name, lo, hi], [out], name=out)
        self.values[n['name']] = _Dyn(out, x.perm, x.shape, x.dtype)

    def _binary(self, n, ins, onnx_op: str) -> None:
        a, b = ins[0], ins[1]
        shape = tuple(np.broadcast_shapes(
            a.shape if isinstance(a, _Dyn) else np.shape(a),
            b.shape if isinstance(b, _Dyn) else np.shape(b)))
        rank = len(shape)
        dyn = a if isinstance(a, _Dyn) else b
        if isinstance(a, _Dyn) and isinstance(b, _Dyn):
            if len(a.shape) == len(b.shape) == rank:
                perm = a.perm
                names = [a.name, self.layout(b, perm)]
            else:
                perm = _identity(rank)
                names = [self.layout(a, _identity(len(a.shape))),
                         self.layout(b, _identity(len(b.shape)))]
        else:
            if len(dyn.shape) == rank:
                perm = dyn.perm
                dname = dyn.name
            else:
                perm = _identity(rank)
                dname = self.layout(dyn, _identity(len(dyn.shape)))
            c = b if dyn is a else a
            cname = self.const_in_layout(_const_name(n, 1 if dyn is a else 0), c, rank, perm)
            names = [dname, cname] if dyn is a else [cname, dname]
        out = self.unique(n['name'])
        self.node(onnx_op, names, [out], name=out)
        self.values[n['name']] = _Dyn(out, perm, shape, dyn.dtype)

    def op_Add(self, n, ins) -> None:
        self._binary(n, ins, 'Add')

    op_AddV2 = op_Add

    def op_Sub(self, n, ins) -> None:
        self._binary(n, ins, 'Sub')

    def op_Mul(self, n, ins) -> None:
        self._binary(n, ins, 'Mul')

    def op_Transpose(self, n, ins) -> None:
        x = self.dyn(n, ins[0])
        q = [int(p) for p in self.const_arg(n, ins[1], 'perm')]
        if sorted(q) != list(range(len(x.shape))):
            raise ConversionError(f'Transpose {n["name"]}: bad perm {q}')
        qinv = _inverse(q)
        self.values[n['name']] = _Dyn(x.name, [qinv[p] for p in x.perm],
                                      [x.shape[i] for i in q], x.dtype)

    def _spatial(self, n, x: _Dyn, fmt: str) -> Tuple[Tuple[int, ...], List[int]]:
        if len(x.shape) != 4:
            raise ConversionError(f'{n["op"]} {n["name"]}: only 2-D (rank 4) supported')
        if fmt == 'NHWC':
            return NCHW_OF_NHWC, [1, 2]
        if fmt == 'NCHW':
            return (0, 1, 2, 3), [2, 3]
        raise ConversionError(f'{n["op"]} {n["name"]}: data_format {fmt} not supported')

    def _pads(self, n, x: _Dyn, axes: List[int], k: Sequence[int], s: Sequence[int],
              d: Sequence[int]) -> List[int]:
        padding = _attr(n, 'padding', 'VALID')
        if padding == 'VALID':
            return [0, 0, 0, 0]
        if padding == 'SAME':
            (t, b), (le, r) = [_same_pads(x.shape[a], k[i], s[i], d[i])
                               for i, a in enumerate(axes)]
            return [t, le, b, r]
        if padding == 'EXPLICIT':
            ex = _attr(n, 'explicit_paddings', [])
            if len(ex) != 8:
                raise ConversionError(f'{n["name"]}: explicit_paddings {ex}')
            (t, b), (le, r) = [(ex[2 * a], ex[2 * a + 1]) for a in axes]
            return [t, le, b, r]
        raise ConversionError(f'{n["name"]}: padding {padding} not supported')

    def op_Conv2D(self, n, ins) -> None:
        x = self.dyn(n, ins[0])
        w = self.const_arg(n, ins[1], 'filter')  # HWIO
        fmt = _attr(n, 'data_format', 'NHWC')
        perm, axes = self._spatial(n, x, fmt)
        if w.ndim != 4:
            raise ConversionError(f'Conv2D {n["name"]}: filter rank {w.ndim}')
        kh, kw, ci, co = w.shape
        cin = x.shape[3 if fmt == 'NHWC' else 1]
        if ci == 0 or cin % ci or co % (cin // ci):
            raise ConversionError(f'Conv2D {n["name"]}: {cin} input channels vs filter {w.shape}')
        groups = cin // ci
        strides = [int(v) for v in _attr(n, 'strides', [1, 1, 1, 1])]
        dil = [int(v) for v in _attr(n, 'dilations', [1, 1, 1, 1])]
        s = [strides[a] for a in axes]
        d = [dil[a] for a in axes]
        pads = self._pads(n, x, axes, (kh, kw), s, d)
        wname = self.const(_const_name(n, 1), np.transpose(w, (3, 2, 0, 1)))
        out = self.unique(n['name'])
        self.node('Conv', [self.layout(x, perm), wname], [out], name=out,
                  kernel_shape=[kh, kw], strides=s, dilations=d, pads=pads, group=groups)
        oh, ow = [(x.shape[a] + pads[i] + pads[i + 2] - (k - 1) * d[i] - 1) // s[i] + 1
                  for i, (a, k) in enumerate(zip(axes, (kh, kw)))]
        shape = [x.shape[0], oh, ow, co] if fmt == 'NHWC' else [x.shape[0], co, oh, ow]
        self.values[n['name']] = _Dyn(out, perm, shape, x.dtype)

    def op_MaxPool(self, n, ins) -> None:
        x = self.dyn(n, ins[0])
        fmt = _attr(n, 'data_format', 'NHWC')
        perm, axes = self._spatial(n, x, fmt)
        ksize = [int(v) for v in _attr(n, 'ksize', [1, 1, 1, 1])]
        strides = [int(v) for v in _attr(n, 'strides', [1, 1, 1, 1])]
        if any(ksize[i] != 1 or strides[i] != 1 for i in range(4) if i not in axes):
            raise ConversionError(f'MaxPool {n["name"]}: pooling over batch/channels')
        k = [ksize[a] for a in axes]
        s = [strides[a] for a in axes]
        pads = self._pads(n, x, axes, k, s, [1, 1])
        out = self.unique(n['name'])
        self.node('MaxPool', [self.layout(x, perm)], [out], name=out, kernel_shape=k,
                  strides=s, pads=pads)
        shape = list(x.shape)
        for i, a in enumerate(axes):
            shape[a] = (x.shape[a] + pads[i] + pads[i + 2] - k[i]) // s[i] + 1
        self.values[n['name']] = _Dyn(out, perm, shape, x.dtype)

    def op_Pad(self, n, ins) -> None:
        x = self.dyn(n, ins[0])
        pads = np.asarray(self.const_arg(n, ins[1], 'paddings'), np.int64).reshape(-1, 2)
        if pads.shape[0] != len(x.shape) or (pads < 0).any():
            raise ConversionError(f'{n["op"]} {n["name"]}: paddings {pads.tolist()}')
        value = np.zeros((), x.dtype)
        if n['op'] == 'PadV2':
            value = np.asarray(self.const_arg(n, ins[2], 'constant_values'), x.dtype).reshape(())
        onnx_pads = [int(pads[p, 0]) for p in x.perm] + [int(pads[p, 1]) for p in x.perm]
        out = self.unique(n['name'])
        self.node('Pad', [x.name, self.const(f'{n["name"]}/pads', np.array(onnx_pads, np.int64)),
                          self.const(f'{n["name"]}/value', value)], [out], name=out,
                  mode='constant')
        shape = [s + int(pads[i].sum()) for i, s in enumerate(x.shape)]
        self.values[n['name']] = _Dyn(out, x.perm, shape, x.dtype)

    op_PadV2 = op_Pad

    def op_ConcatV2(self, n, ins) -> None:
        axis = int(self.const_arg(n, ins[-1], 'axis'))
        parts = ins[:-1]
        first = next((p for p in parts if isinstance(p, _Dyn)), None)
        if first is None:
            raise ConversionError(f'ConcatV2 {n["name"]}: no runtime input')
        rank = len(first.shape)
        axis = axis + rank if axis < 0 else axis
        perm = first.perm
        names, shape = [], list(first.shape)
        shape[axis] = 0
        for i, p in enumerate(parts):
            if isinstance(p, _Dyn):
                names.append(self.layout(p, perm))
                shape[axis] += p.shape[axis]
            else:
                names.append(self.const(_const_name(n, i), np.transpose(
                    np.asarray(p, first.dtype), perm)))
                shape[axis] += p.shape[axis]
        out = self.unique(n['name'])
        self.node('Concat', names, [out], name=out, axis=perm.index(axis))
        self.values[n['name']] = _Dyn(out, perm, shape, first.dtype)

    def _split(self, n, x: _Dyn, sizes: List[int], axis: int) -> None:
        rank = len(x.shape)
        axis = axis + rank if axis < 0 else axis
        outs = [self.unique(n['name'] if i == 0 else f'{n["name"]}:{i}')
                for i in range(len(sizes))]
        self.node('Split', [x.name, self.const(f'{n["name"]}/split', np.array(sizes, np.int64))],
                  outs, name=outs[0], axis=x.perm.index(axis))
        for i, (o, size) in enumerate(zip(outs, sizes)):
            shape = list(x.shape)
            shape[axis] = size
            self.values[n['name'] if i == 0 else f'{n["name"]}:{i}'] = \
                _Dyn(o, x.perm, shape, x.dtype)

    def op_SplitV(self, n, ins) -> None:
        x = self.dyn(n, ins[0])
        axis = int(self.const_arg(n, ins[2], 'split_dim'))
        axis = axis + len(x.shape) if axis < 0 else axis
        sizes = _split_sizes(self.const_arg(n, ins[1], 'size_splits'), x.shape[axis])
        self._split(n, x, sizes, axis)

    def op_Split(self, n, ins) -> None:
        x = self.dyn(n, ins[1])
        axis = int(self.const_arg(n, ins[0], 'split_dim'))
        axis = axis + len(x.shape) if axis < 0 else axis
        num = int(_attr(n, 'num_split', 1))
        if x.shape[axis] % num:
            raise ConversionError(f'Split {n["name"]}: {x.shape[axis]} not divisible by {num}')
        self._split(n, x, [x.shape[axis] // num] * num, axis)

    def op_Reshape(self, n, ins) -> None:
        x = self.dyn(n, ins[0])
        target = _resolve_shape(x.shape, self.const_arg(n, ins[1], 'shape').reshape(-1))
        out = self.unique(n['name'])
        self.node('Reshape', [self.layout(x, _identity(len(x.shape))),
                              self.const(f'{n["name"]}/shape', np.array(target, np.int64))],
                  [out], name=out)
        self.values[n['name']] = _Dyn(out, _identity(len(target)), target, x.dtype)

    def op_ResizeBilinear(self, n, ins) -> None:
        x = self.dyn(n, ins[0])
        size = [int(s) for s in self.const_arg(n, ins[1], 'size').reshape(-1)]
        if len(x.shape) != 4 or len(size) != 2:
            raise ConversionError(f'ResizeBilinear {n["name"]}: shape {x.shape}, size {size}')
        align = bool(_attr(n, 'align_corners', False))
        half = bool(_attr(n, 'half_pixel_centers', False))
        if align and half:
            raise ConversionError(f'{n["name"]}: align_corners and half_pixel_centers both set')
        mode = 'align_corners' if align else 'half_pixel' if half else 'asymmetric'
        shape = (x.shape[0], size[0], size[1], x.shape[3])
        sizes = [shape[p] for p in NCHW_OF_NHWC]
        out = self.unique(n['name'])
        self.node('Resize', [self.layout(x, NCHW_OF_NHWC), '', '',
                             self.const(f'{n["name"]}/sizes', np.array(sizes, np.int64))],
                  [out], name=out, mode='linear', coordinate_transformation_mode=mode)
        self.values[n['name']] = _Dyn(out, NCHW_OF_NHWC, shape, np.float32)


def _node_of(ref: str) -> str:
    return _split_ref(ref)[0]


def _split_ref(ref: str) -> Tuple[str, int]:
    ref = ref.lstrip('^')
    if ':' in ref:
        node, idx = ref.rsplit(':', 1)
        if idx.isdigit():
            return node, int(idx)
    return ref, 0


def _const_name(n: Mapping[str, Any], i: int) -> str:
    inputs = [r for r in n.get('input', []) if not r.startswith('^')]
    return _node_of(inputs[i]) if i < len(inputs) else f'{n["name"]}/const{i}'


def _fold_binary(f: Callable[[np.ndarray, np.ndarray], np.ndarray]):
    def fold(n, ins):
        return f(ins[0], ins[1]).astype(np.result_type(ins[0], ins[1]))
    return fold


def _fold_concat(n, ins):
    return np.concatenate(ins[:-1], axis=int(ins[-1]))


def _fold_splitv(n, ins):
    axis = int(ins[2])
    sizes = _split_sizes(ins[1], ins[0].shape[axis])
    return np.split(ins[0], np.cumsum(sizes)[:-1], axis=axis)


def _fold_cast(n, ins):
    dtype = TF_DTYPES.get(_attr(n, 'DstT', ''))
    if dtype is None:
        raise ConversionError(f'Cast {n["name"]}: DstT {_attr(n, "DstT")} not supported')
    return ins[0].astype(dtype)


FOLD: Dict[str, Callable[[Mapping[str, Any], List[np.ndarray]], Any]] = {
    'Identity': lambda n, ins: ins[0],
    'Transpose': lambda n, ins: np.transpose(ins[0], ins[1]),
    'Add': _fold_binary(np.add),
    'AddV2': _fold_binary(np.add),
    'Sub': _fold_binary(np.subtract),
    'Mul': _fold_binary(np.multiply),
    'Reshape': lambda n, ins: ins[0].reshape(_resolve_shape(ins[0].shape, ins[1].reshape(-1))),
    'ConcatV2': _fold_concat,
    'Pad': lambda n, ins: _np_pad(ins[0], ins[1], 0),
    'PadV2': lambda n, ins: _np_pad(ins[0], ins[1], ins[2]),
    'SparseToDense': lambda n, ins: _sparse_to_dense(*ins),
    'Sigmoid': lambda n, ins: (1 / (1 + np.exp(-ins[0]))).astype(ins[0].dtype),
    'Relu': lambda n, ins: np.maximum(ins[0], 0),
    'LeakyRelu': lambda n, ins: np.where(ins[0] >= 0, ins[0],
                                         ins[0] * _attr(n, 'alpha', 0.2)).astype(ins[0].dtype),
    'SplitV': _fold_splitv,
    'Cast': _fold_cast,
    'ResizeBilinear': lambda n, ins: _tf_resize_bilinear(
        ins[0], ins[1], bool(_attr(n, 'align_corners', False)),
        bool(_attr(n, 'half_pixel_centers', False))),
}


# ---------------------------------------------------------------------------
# Clean-up passes on the ONNX node list
# ---------------------------------------------------------------------------

def _consumers(nodes: Sequence[onnx.NodeProto]) -> Dict[str, List[int]]:
    uses: Dict[str, List[int]] = collections.defaultdict(list)
    for i, nd in enumerate(nodes):
        for name in nd.input:
            uses[name].append(i)
    return uses


def _get_attr(nd: onnx.NodeProto, key: str, default: Any = None) -> Any:
    for a in nd.attribute:
        if a.name == key:
            return helper.get_attribute_value(a)
    return default


def _set_attr(nd: onnx.NodeProto, key: str, value: Any) -> None:
    for i, a in enumerate(nd.attribute):
        if a.name == key:
            del nd.attribute[i]
            break
    nd.attribute.append(helper.make_attribute(key, value))


def _fuse_pads(nodes: List[onnx.NodeProto], inits: Dict[str, np.ndarray],
               keep: set) -> List[onnx.NodeProto]:
    """Fold ``Pad`` (zeros before Conv, -inf before MaxPool) into the consumer's pads."""
    uses = _consumers(nodes)
    drop = set()
    for i, nd in enumerate(nodes):
        if nd.op_type != 'Pad' or nd.output[0] in keep or _get_attr(nd, 'mode', b'constant') \
                not in (b'constant', 'constant'):
            continue
        users = uses.get(nd.output[0], [])
        if len(users) != 1 or len(nd.input) < 2 or nd.input[1] not in inits:
            continue
        user = nodes[users[0]]
        if user.op_type not in ('Conv', 'MaxPool') or list(user.input).index(nd.output[0]) != 0:
            continue
        pads = inits[nd.input[1]].tolist()
        value_name = nd.input[2] if len(nd.input) > 2 else ''
        if value_name and value_name not in inits:
            continue
        value = float(inits[value_name].reshape(-1)[0]) if value_name else 0.0
        ok_value = (user.op_type == 'Conv' and value == 0.0) or \
            (user.op_type == 'MaxPool' and value == -np.inf)
        if len(pads) != 8 or pads[0] or pads[1] or pads[4] or pads[5] or not ok_value or \
                min(pads) < 0:
            continue
        old = _get_attr(user, 'pads', [0, 0, 0, 0])
        _set_attr(user, 'pads', [old[0] + pads[2], old[1] + pads[3],
                                 old[2] + pads[6], old[3] + pads[7]])
        user.input[0] = nd.input[0]
        drop.add(i)
    return [nd for i, nd in enumerate(nodes) if i not in drop]


def _fuse_bias(nodes: List[onnx.NodeProto], inits: Dict[str, np.ndarray],
               keep: set) -> List[onnx.NodeProto]:
    """Fold ``Conv -> Add(per-channel constant)`` into the convolution bias."""
    uses = _consumers(nodes)
    drop = set()
    for i, nd in enumerate(nodes):
        if nd.op_type != 'Conv' or len(nd.input) > 2 or nd.output[0] in keep:
            continue
        users = uses.get(nd.output[0], [])
        if len(users) != 1 or nodes[users[0]].op_type != 'Add':
            continue
        add = nodes[users[0]]
        other = add.input[1] if add.input[0] == nd.output[0] else add.input[0]
        if other not in inits or other == nd.output[0]:
            continue
        cout = inits[nd.input[1]].shape[0]
        bias = inits[other]
        if bias.ndim not in (3, 4) or bias.size != cout or bias.shape[-3] != cout or \
                bias.dtype != inits[nd.input[1]].dtype:
            continue
        name = f'{nd.input[1]}__bias'
        inits[name] = bias.reshape(cout)
        nd.input.append(name)
        nd.output[0] = add.output[0]
        drop.add(users[0])
    return [nd for i, nd in enumerate(nodes) if i not in drop]


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------

def convert_graph(model_json: Mapping[str, Any], weights: Mapping[str, np.ndarray],
                  outputs: Optional[Sequence[Tuple[str, str]]] = None,
                  inputs: Optional[Mapping[str, str]] = None,
                  input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
                  graph_name: str = 'tfjs_graph', doc_string: str = '',
                  optimize: bool = True) -> onnx.ModelProto:
    """Convert a parsed TF.js graph model to an ONNX ``ModelProto`` (opset 17).

    ``outputs`` lists ``(tf_tensor, onnx_name)`` pairs in the order wanted
    (default: the signature's outputs, sorted by name, keeping their names).
    ``inputs`` renames placeholders (``{tf_name: onnx_name}``);
    ``input_shapes`` gives static shapes for placeholders whose shape is not
    fully known. Raises :class:`ConversionError` for anything unsupported.
    """
    topo = model_json.get('modelTopology', model_json)
    nodes = topo.get('node', [])
    if outputs is None:
        sig = model_json.get('signature', {}).get('outputs', {})
        if not sig:
            raise ConversionError('no outputs given and no signature in the model')
        outputs = [(k, _node_of(k).replace('/', '_')) for k in sorted(sig)]
    outputs = [(_strip_zero(tf), name) for tf, name in outputs]
    final_names = [name for _, name in outputs]
    if len(set(final_names)) != len(final_names):
        raise ConversionError(f'output names must be unique: {final_names}')
    conv = _Converter(nodes, weights, inputs or {}, input_shapes or {})
    conv._names.update(final_names)  # so that no intermediate tensor takes these names
    for name in conv.topo_order(_node_of(tf) for tf, _ in outputs):
        conv.convert_node(name)

    # Graph outputs, in TF's own layout and under the requested names: the
    # producing node's output is renamed, or an Identity added where it cannot be.
    input_names = {vi.name for vi in conv.graph_inputs}
    if input_names & set(final_names):
        raise ConversionError('an output name equals an input name')
    out_infos = []
    renames: Dict[str, str] = {}
    for tf_name, name in outputs:
        v = conv.get(tf_name)
        if not isinstance(v, _Dyn):
            raise ConversionError(f'output {tf_name} is a constant')
        src = conv.layout(v, _identity(len(v.shape)))
        producers = {o for nd in conv.onnx_nodes for o in nd.output}
        if src not in renames and src not in input_names and \
                src in producers:
            renames[src] = name
        else:
            conv.node('Identity', [src], [name], name=f'{name}/Identity')
        out_infos.append(helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape)))
    for nd in conv.onnx_nodes:
        for i, name in enumerate(nd.input):
            if name in renames:
                nd.input[i] = renames[name]
        for i, name in enumerate(nd.output):
            if name in renames:
                nd.output[i] = renames[name]

    nodes_out = conv.onnx_nodes
    if optimize:
        nodes_out = _fuse_pads(nodes_out, conv.inits, set(final_names))
        nodes_out = _fuse_bias(nodes_out, conv.inits, set(final_names))
    used = {name for nd in nodes_out for name in nd.input}
    initializers = [numpy_helper.from_array(np.array(arr, order='C'), name)
                    for name, arr in conv.inits.items() if name in used]
    graph = helper.make_graph(nodes_out, graph_name, conv.graph_inputs, out_infos,
                              initializer=initializers)
    model = helper.make_model(graph, producer_name=PRODUCER, producer_version='1',
                              opset_imports=[helper.make_opsetid('', OPSET)])
    model.ir_version = IR_VERSION
    if doc_string:
        model.doc_string = doc_string
    onnx.checker.check_model(model, full_check=True)
    return model


def _strip_zero(ref: str) -> str:
    node, idx = _split_ref(ref)
    return node if idx == 0 else f'{node}:{idx}'


def load_tfjs(
        model_json_path: 'os.PathLike[str] | str') -> Tuple[Dict[str, Any], Dict[str, np.ndarray]]:
    """Read ``model.json`` and its weight shards (next to it); return (json, weights)."""
    path = pathlib.Path(model_json_path)
    with open(path, encoding='utf-8') as f:
        model_json = json.load(f)
    if model_json.get('format', 'graph-model') != 'graph-model':
        raise ConversionError(f'{path}: format {model_json.get("format")!r}, '
                              'only graph-model is supported')

    def read_shard(rel: str) -> bytes:
        shard = (path.parent / rel).resolve()
        if path.parent.resolve() not in shard.parents:
            raise ConversionError(f'weight shard {rel} lies outside {path.parent}')
        return shard.read_bytes()

    return model_json, read_weights(model_json.get('weightsManifest', []), read_shard)


def convert_file(model_json_path: 'os.PathLike[str] | str',
                 onnx_path: 'os.PathLike[str] | str', **kwargs: Any) -> onnx.ModelProto:
    """Convert a TF.js graph model on disk to an ONNX file; extra kwargs go to convert_graph."""
    model_json, weights = load_tfjs(model_json_path)
    model = convert_graph(model_json, weights, **kwargs)
    save_model(model, onnx_path)
    return model


def save_model(model: onnx.ModelProto, path: 'os.PathLike[str] | str') -> None:
    """Write ``model`` with deterministic serialization."""
    with open(path, 'wb') as f:
        f.write(model.SerializeToString(deterministic=True))


def summary(model: onnx.ModelProto) -> Dict[str, int]:
    """Count the ONNX ops of ``model`` (for logs and tests)."""
    return dict(sorted(collections.Counter(n.op_type for n in model.graph.node).items()))


__all__ = ['ConversionError', 'convert_file', 'convert_graph', 'load_tfjs', 'read_weights',
           'save_model', 'summary', 'OPSET']
