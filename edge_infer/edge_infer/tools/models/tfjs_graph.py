# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The TF.js -> ONNX converter's graph machinery: tensors, layouts, graph walk, folding.

:mod:`edge_infer.tools.models.tfjs_onnx` is the public entry point; the op
handlers live in :mod:`edge_infer.tools.models.tfjs_ops`. This module holds what
every handler builds on:

- :class:`_Dyn`, a runtime tensor: ONNX name, TF shape and dtype, and a
  permutation ``perm`` with ``onnx_tensor == np.transpose(tf_tensor, perm)``.
  ``GraphBuilder.layout`` emits a real ``Transpose`` only where an op needs a
  particular layout, and emits each one once.
- ``GraphBuilder``: unique names, deduplicated constants, the walk over the
  nodes needed for the requested outputs (inputs first, ties in file order)
  and the dispatch to ``op_<TfOp>`` methods.
- Constant folding: a node whose inputs are all constant is evaluated with
  numpy (``FOLD``), so shape arithmetic never reaches the ONNX graph.
"""

from __future__ import annotations

import base64
from typing import (Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple,
                    Union)

import numpy as np
from numpy.typing import DTypeLike
import onnx
from onnx import helper

TF_DTYPES: Dict[str, np.dtype] = {
    'DT_FLOAT': np.dtype(np.float32), 'DT_DOUBLE': np.dtype(np.float64),
    'DT_HALF': np.dtype(np.float16), 'DT_INT32': np.dtype(np.int32),
    'DT_INT64': np.dtype(np.int64), 'DT_INT16': np.dtype(np.int16),
    'DT_INT8': np.dtype(np.int8), 'DT_UINT8': np.dtype(np.uint8),
    'DT_BOOL': np.dtype(np.bool_),
}
Ints = Union[Sequence[int], np.ndarray]     # a shape, sizes: a list or a constant's array


class ConversionError(ValueError):
    """The model uses something this converter does not handle; the message says what."""


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

    def __init__(self, name: str, perm: Sequence[int], shape: Sequence[int], dtype: DTypeLike):
        self.name = name
        self.perm = tuple(int(p) for p in perm)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)


def _reduced(perm: Sequence[int], axes: Iterable[int]) -> Tuple[int, ...]:
    """``perm`` of a tensor after the TF axes ``axes`` were removed (reduced, squeezed)."""
    axes = set(axes)
    return tuple(p - sum(a < p for a in axes) for p in perm if p not in axes)


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


def _resolve_shape(in_shape: Sequence[int], target: Ints) -> Tuple[int, ...]:
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


def _split_sizes(sizes: Ints, dim: int) -> List[int]:
    sizes = [int(s) for s in sizes]
    if -1 in sizes:
        sizes[sizes.index(-1)] = dim - (sum(sizes) + 1)
    if sum(sizes) != dim or min(sizes) < 0:
        raise ConversionError(f'split sizes {sizes} do not add up to {dim}')
    return sizes


def _sparse_to_dense(indices: np.ndarray, shape: np.ndarray, values: np.ndarray,
                     default: np.ndarray) -> np.ndarray:
    dims = tuple(int(s) for s in np.atleast_1d(shape))
    out = np.full(dims, default, dtype=np.asarray(values).dtype)
    idx = np.asarray(indices, np.int64)
    if idx.size:
        idx = idx.reshape(-1, len(dims)) if idx.ndim != 1 or len(dims) != 1 \
            else idx.reshape(-1, 1)
        out[tuple(idx.T)] = values
    return out


def _tf_resize_bilinear(x: np.ndarray, size: Ints, align_corners: bool,
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


class GraphBuilder:
    """The state of one conversion; ``tfjs_ops.Converter`` adds the op handlers."""

    def __init__(self, nodes: Sequence[Mapping[str, Any]], weights: Mapping[str, np.ndarray],
                 input_names: Mapping[str, str], input_shapes: Mapping[str, Sequence[int]],
                 input_dtypes: Optional[Mapping[str, Any]] = None):
        self.tf_nodes = {n['name']: n for n in nodes}
        if len(self.tf_nodes) != len(nodes):
            raise ConversionError('duplicate node names in the graph')
        self.order = [n['name'] for n in nodes]
        self.weights = weights
        self.input_names = dict(input_names)
        self.input_shapes = {k: tuple(v) for k, v in input_shapes.items()}
        self.input_dtypes = {k: np.dtype(v) for k, v in (input_dtypes or {}).items()}
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

    def emit(self, n: Mapping[str, Any], op: str, inputs: Sequence[str], perm: Sequence[int],
             shape: Sequence[int], dtype: Any, key: Optional[str] = None, **attrs: Any) -> str:
        """Add one ONNX node producing TF tensor ``key`` (default: node ``n``'s output 0)."""
        key = key or n['name']
        out = self.unique(key)
        self.node(op, inputs, [out], name=out, **attrs)
        self.values[key] = _Dyn(out, perm, shape, dtype)
        return out

    def plain(self, v: _Dyn) -> str:
        """Return the ONNX name of ``v`` in TF's own layout (a Transpose if needed)."""
        return self.layout(v, _identity(len(v.shape)))

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
        dtype = self.input_dtypes.get(tf_name)
        if dtype is None:
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
    'Relu6': lambda n, ins: np.clip(ins[0], 0, 6),
    'RealDiv': _fold_binary(np.divide),
    'FloorDiv': _fold_binary(np.floor_divide),
    'SquaredDifference': _fold_binary(lambda a, b: (a - b) * (a - b)),
    'Sqrt': lambda n, ins: np.sqrt(ins[0]),
    'AddN': lambda n, ins: sum(ins[1:], ins[0]),
    'ExpandDims': lambda n, ins: np.expand_dims(ins[0], int(ins[1])),
    'Squeeze': lambda n, ins: np.squeeze(ins[0], tuple(_attr(n, 'squeeze_dims', [])) or None),
    'Pack': lambda n, ins: np.stack(ins, int(_attr(n, 'axis', 0))),
    'Unpack': lambda n, ins: list(np.moveaxis(ins[0], int(_attr(n, 'axis', 0)), 0)),
    'ResizeBilinear': lambda n, ins: _tf_resize_bilinear(
        ins[0], ins[1], bool(_attr(n, 'align_corners', False)),
        bool(_attr(n, 'half_pixel_centers', False))),
}
