# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The BLAS backend's planner: an ONNX graph turned into numpy steps on buffers allocated once.

:class:`Planner` walks the graph in order, allocates every op's output (and
the padded inputs, pooling windows and the shared patch scratch) once, lowers
each convolution by the method :mod:`.blas` asks for (``auto``: timed per
layer shape), and returns the steps a :class:`.blas.BlasSession` runs.
"""

import time
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from .blas_conv import _attrs, _Conv, _explicit_pads, _windows
from ...core.backend import UnsupportedModel


def _resize_coords(mode: str, n_out: int, n_in: int, scale: float) -> np.ndarray:
    x = np.arange(n_out, dtype=np.float64)
    if mode == 'half_pixel':
        return (x + 0.5) / scale - 0.5
    if mode == 'pytorch_half_pixel':
        return (x + 0.5) / scale - 0.5 if n_out > 1 else np.zeros(n_out)
    if mode == 'align_corners':
        return x * (n_in - 1) / (n_out - 1) if n_out > 1 else np.zeros(n_out)
    return x / scale    # asymmetric


class Planner:
    """Turns ONNX nodes into numpy steps with preallocated outputs (see the module docstring)."""

    UNARY = ('Relu', 'LeakyRelu', 'Clip', 'Sigmoid')
    BINARY = {'Add': np.add, 'Sub': np.subtract, 'Mul': np.multiply, 'Div': np.divide}
    VIEWS = ('Reshape', 'Flatten', 'Split', 'Identity')
    OTHER = ('Conv', 'Concat', 'Transpose', 'MaxPool', 'GlobalAveragePool', 'Gemm', 'MatMul',
             'Resize', 'Constant')

    def __init__(self, graph, method: str, tune_runs: int):
        from onnx import numpy_helper
        self.method = method
        self.tune_runs = tune_runs
        self.rng = np.random.default_rng(0)
        self.consts: Dict[str, np.ndarray] = {i.name: numpy_helper.to_array(i)
                                              for i in graph.initializer}
        self.shapes: Dict[str, tuple] = {}
        self.owned: Dict[str, bool] = {}
        self.graph_outputs = {o.name for o in graph.output}
        self.readers: Dict[str, int] = {}
        for node in graph.node:
            for name in node.input:
                self.readers[name] = self.readers.get(name, 0) + 1
        self.steps: List[Tuple[Callable, List[str], List[str]]] = []
        self.convs: List[_Conv] = []
        self.plan: List[dict] = []
        self.tuned: Dict[tuple, Tuple[str, Dict[str, float], List[str], str]] = {}
        self.tune_ms = 0.0

    def may_overwrite(self, name: str) -> bool:
        """Say whether ``name`` is a buffer of ours that only one node reads and nobody returns."""
        return (self.owned.get(name, False) and self.readers.get(name, 0) == 1
                and name not in self.graph_outputs)

    def add(self, node) -> None:
        """Plan one node: constant-fold it, or add a step."""
        op, where = node.op_type, node.name or node.output[0]
        if op not in self.UNARY and op not in self.BINARY and op not in self.VIEWS \
                and op not in self.OTHER:
            raise UnsupportedModel(f'numpy-blas: unsupported op {op} ({where})')
        a = _attrs(node)
        if op == 'Constant':
            self._constant(node, a, where)
            return
        names = list(node.input)
        for name in names:
            if name and name not in self.consts and name not in self.shapes:
                raise UnsupportedModel(f'numpy-blas: input {name} of {op} ({where}) is not '
                                       f'produced before it (graph not sorted)')
        folding = all(not n or n in self.consts for n in names)
        fn, out_shapes, owned = getattr(self, '_' + op.lower())(node, a, names, where)
        outs = list(node.output)
        if folding:     # every input known at load: compute it now, once
            vals = fn(*[self.consts[n] if n else None for n in names])
            vals = vals if isinstance(vals, (tuple, list)) else [vals]
            for name, v in zip(outs, vals):
                if name:
                    self.consts[name] = np.array(v, copy=True)
            return
        for name, shape, own in zip(outs, out_shapes, owned):
            self.shapes[name] = tuple(int(d) for d in shape)
            self.owned[name] = own
        self.steps.append((fn, names, outs))

    # -- helpers -------------------------------------------------------------------------

    def _shape(self, name: str) -> tuple:
        return self.consts[name].shape if name in self.consts else self.shapes[name]

    def _const(self, name: str, op: str, where: str, what: str) -> np.ndarray:
        if name not in self.consts:
            raise UnsupportedModel(f'numpy-blas: {op} with a computed {what} not supported '
                                   f'({where})')
        return self.consts[name]

    def _opt(self, names: List[str], i: int) -> Optional[str]:
        return names[i] if len(names) > i and names[i] else None

    # -- ops ------------------------------------------------------------------------------

    def _constant(self, node, a, where):
        from onnx import numpy_helper
        if 'value' in a:
            v = numpy_helper.to_array(a['value'])
        elif 'value_float' in a or 'value_floats' in a:
            v = np.array(a.get('value_float', a.get('value_floats')), np.float32)
        elif 'value_int' in a or 'value_ints' in a:
            v = np.array(a.get('value_int', a.get('value_ints')), np.int64)
        else:
            raise UnsupportedModel(f'numpy-blas: Constant {sorted(a)} not supported ({where})')
        self.consts[node.output[0]] = v

    def _conv(self, node, a, names, where):
        x = names[0]
        w = self._const(names[1], 'Conv', where, 'weight')
        b_name = self._opt(names, 2)
        b = self._const(b_name, 'Conv', where, 'bias') if b_name else None
        shape = self._shape(x)
        if len(shape) != 4:
            raise UnsupportedModel(f'numpy-blas: only 2-D Conv supported, input {shape} ({where})')
        conv = _Conv(w, b, a, shape, where)
        entry = {'node': where, 'op': 'Conv', 'kind': conv.kind, 'shape': conv.describe(),
                 'ms': {}}
        if conv.kind in ('depthwise', 'pointwise'):
            entry['note'] = ('per-offset multiply-add for every method' if conv.kind ==
                             'depthwise' else 'one plain GEMM for every method')
        elif self.method != 'auto':
            conv.method = self.method
        elif conv.key() in self.tuned:
            conv.method, ms, cut, first = self.tuned[conv.key()]
            entry.update(ms=dict(ms), cut=list(cut), note=f'timings of {first} (same shape)')
        else:
            t = time.perf_counter()
            ms, cut = conv.tune(self.tune_runs, self.rng)
            self.tune_ms += (time.perf_counter() - t) * 1e3
            ms = {m: round(v, 3) for m, v in ms.items()}
            self.tuned[conv.key()] = (conv.method, ms, cut, where)
            entry.update(ms=dict(ms), cut=list(cut))
        entry['method'] = conv.method
        self.plan.append(entry)
        self.convs.append(conv)
        return (lambda x, *_: conv(x)), [conv.out.shape], [True]

    def _unary(self, node, a, names, where, kernel):
        x = names[0]
        shape = self._shape(x)
        out = None if self.may_overwrite(x) else np.empty(shape, np.float32)

        def fn(v, *_):
            return kernel(v, v if out is None else out)
        return fn, [shape], [True]

    def _relu(self, node, a, names, where):
        return self._unary(node, a, names, where, lambda v, o: np.maximum(v, 0, out=o))

    def _leakyrelu(self, node, a, names, where):
        alpha = np.float32(a.get('alpha', 0.01))
        shape = self._shape(names[0])
        out = np.empty(shape, np.float32)   # max(x, alpha x) needs alpha x somewhere

        def fn(v):
            np.multiply(v, alpha, out=out)
            if 0 <= alpha <= 1:
                return np.maximum(v, out, out=out)
            np.copyto(out, np.where(v > 0, v, out))
            return out
        return fn, [shape], [True]

    def _clip(self, node, a, names, where):
        lo_n, hi_n = self._opt(names, 1), self._opt(names, 2)
        lo = self._const(lo_n, 'Clip', where, 'min') if lo_n else a.get('min')
        hi = self._const(hi_n, 'Clip', where, 'max') if hi_n else a.get('max')
        lo = -np.inf if lo is None else np.float32(lo)
        hi = np.inf if hi is None else np.float32(hi)
        return self._unary(node, a, names, where, lambda v, o: np.clip(v, lo, hi, out=o))

    def _sigmoid(self, node, a, names, where):
        def kernel(v, o):
            np.negative(v, out=o)
            np.exp(o, out=o)
            o += 1
            return np.reciprocal(o, out=o)
        return self._unary(node, a, names, where, kernel)

    def _binary(self, node, a, names, where):
        ufunc = self.BINARY[node.op_type]
        sa, sb = self._shape(names[0]), self._shape(names[1])
        shape = np.broadcast_shapes(sa, sb)
        out = None
        for i, (n, s) in enumerate(((names[0], sa), (names[1], sb))):
            if tuple(s) == tuple(shape) and n not in self.consts and self.may_overwrite(n):
                out = i
                break
        buf = np.empty(shape, np.float32) if out is None else None

        def fn(x, y):
            return ufunc(x, y, out=buf if out is None else (x, y)[out])
        return fn, [shape], [True]

    _add = _sub = _mul = _div = _binary

    def _concat(self, node, a, names, where):
        axis = int(a['axis'])
        shapes = [self._shape(n) for n in names]
        axis = axis % len(shapes[0])
        shape = list(shapes[0])
        shape[axis] = sum(s[axis] for s in shapes)
        buf = np.empty(shape, np.float32)
        return (lambda *xs: np.concatenate(xs, axis=axis, out=buf)), [shape], [True]

    def _transpose(self, node, a, names, where):
        shape = self._shape(names[0])
        perm = a.get('perm', list(range(len(shape)))[::-1])
        out_shape = [shape[p] for p in perm]
        buf = np.empty(out_shape, np.float32)

        def fn(x):
            np.copyto(buf, x.transpose(perm))
            return buf
        return fn, [out_shape], [True]

    def _reshape(self, node, a, names, where):
        shape = self._shape(names[0])
        target = [int(s) for s in self._const(names[1], 'Reshape', where, 'shape')]
        if not a.get('allowzero', 0):
            target = [shape[i] if s == 0 else s for i, s in enumerate(target)]
        if -1 in target:
            known = int(np.prod([s for s in target if s != -1]))
            target[target.index(-1)] = int(np.prod(shape)) // max(known, 1)
        if int(np.prod(target)) != int(np.prod(shape)):
            raise UnsupportedModel(f'numpy-blas: Reshape {shape} -> {target} ({where})')
        return (lambda x, *_: x.reshape(target)), [target], [self.may_overwrite(names[0])]

    def _flatten(self, node, a, names, where):
        shape = self._shape(names[0])
        axis = int(a.get('axis', 1)) % (len(shape) + 1) if shape else 0
        target = [int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))]
        return (lambda x: x.reshape(target)), [target], [self.may_overwrite(names[0])]

    def _identity(self, node, a, names, where):
        return (lambda x: x), [self._shape(names[0])], [self.may_overwrite(names[0])]

    def _split(self, node, a, names, where):
        shape = self._shape(names[0])
        axis = int(a.get('axis', 0)) % len(shape)
        split_n = self._opt(names, 1)
        n_out = len(node.output)
        if split_n:
            sizes = [int(s) for s in self._const(split_n, 'Split', where, 'split')]
        elif 'split' in a:
            sizes = [int(s) for s in a['split']]
        else:
            n_out = int(a.get('num_outputs', n_out))
            step = -(-shape[axis] // n_out)
            sizes = [min(step, shape[axis] - i * step) for i in range(n_out)]
        if sum(sizes) != shape[axis] or len(sizes) != len(node.output):
            raise UnsupportedModel(f'numpy-blas: Split {sizes} of {shape} axis {axis} ({where})')
        cuts = np.cumsum([0] + sizes)
        slices = [tuple([slice(None)] * axis + [slice(int(lo), int(hi))])
                  for lo, hi in zip(cuts[:-1], cuts[1:])]
        shapes = [[s if d != axis else n for d, s in enumerate(shape)] for n in sizes]
        own = self.may_overwrite(names[0])
        return (lambda x, *_: tuple(x[s] for s in slices)), shapes, [own] * len(sizes)

    def _maxpool(self, node, a, names, where):
        if len([o for o in node.output if o]) > 1:
            raise UnsupportedModel(f'numpy-blas: MaxPool with indices not supported ({where})')
        if a.get('ceil_mode', 0):
            raise UnsupportedModel(f'numpy-blas: MaxPool ceil_mode not supported ({where})')
        n, c, h, w = self._shape(names[0])
        kh, kw = a['kernel_shape']
        sh, sw = a.get('strides', [1, 1])
        dh, dw = a.get('dilations', [1, 1])
        pt, pl, pb, pr = _explicit_pads(a, (h, w), (kh, kw), (sh, sw), (dh, dw), where)
        xp = np.full((n, c, h + pt + pb, w + pl + pr), -np.inf, np.float32)
        ho = (xp.shape[2] - (kh - 1) * dh - 1) // sh + 1
        wo = (xp.shape[3] - (kw - 1) * dw - 1) // sw + 1
        out = np.empty((n, c, ho, wo), np.float32)
        wins = [_windows(xp[b], kh, kw, ho, wo, sh, sw, dh, dw) for b in range(n)]

        def fn(x):
            xp[:, :, pt:pt + h, pl:pl + w] = x
            for b in range(n):
                np.copyto(out[b], wins[b][:, 0, 0])
                for i in range(kh):
                    for j in range(kw):
                        if i or j:
                            np.maximum(out[b], wins[b][:, i, j], out=out[b])
            return out
        return fn, [out.shape], [True]

    def _globalaveragepool(self, node, a, names, where):
        shape = self._shape(names[0])
        axes = tuple(range(2, len(shape)))
        out = np.empty(shape[:2] + (1,) * len(axes), np.float32)
        return (lambda x: np.mean(x, axis=axes, keepdims=True, out=out)), [out.shape], [True]

    def _gemm(self, node, a, names, where):
        sa = self._shape(names[0])
        alpha, beta = np.float32(a.get('alpha', 1.0)), np.float32(a.get('beta', 1.0))
        ta = bool(a.get('transA', 0))
        b = self._const(names[1], 'Gemm', where, 'B')
        bt = np.ascontiguousarray((b.T if a.get('transB', 0) else b) * alpha, np.float32)
        rows = sa[1] if ta else sa[0]
        buf = np.empty((rows, bt.shape[1]), np.float32)
        c_n = self._opt(names, 2)
        c = None
        if c_n:
            c = np.asarray(self._const(c_n, 'Gemm', where, 'C') * beta, np.float32)

        def fn(x, *_):
            np.matmul(x.T if ta else x, bt, out=buf)
            if c is not None:
                np.add(buf, c, out=buf)
            return buf
        return fn, [buf.shape], [True]

    def _matmul(self, node, a, names, where):
        sa, sb = self._shape(names[0]), self._shape(names[1])
        zero = np.float32(0)
        shape = np.matmul(np.broadcast_to(zero, sa), np.broadcast_to(zero, sb)).shape
        out = np.empty(shape, np.float32)
        return (lambda x, y: np.matmul(x, y, out=out)), [shape], [True]

    def _resize(self, node, a, names, where):
        mode = a.get('mode', 'nearest')
        coord = a.get('coordinate_transformation_mode', 'half_pixel')
        if mode != 'linear' or coord not in ('half_pixel', 'pytorch_half_pixel',
                                             'align_corners', 'asymmetric') \
                or a.get('antialias', 0) or 'axes' in a \
                or a.get('keep_aspect_ratio_policy', 'stretch') != 'stretch':
            raise UnsupportedModel(f'numpy-blas: Resize mode {mode} / {coord} not supported '
                                   f'({where})')
        shape = self._shape(names[0])
        sizes_n, scales_n = self._opt(names, 3), self._opt(names, 2)
        if sizes_n:
            sizes = [int(s) for s in self._const(sizes_n, 'Resize', where, 'sizes')]
            scales = [o / i for o, i in zip(sizes, shape)]
        elif scales_n:
            scales = [float(s) for s in self._const(scales_n, 'Resize', where, 'scales')]
            sizes = [int(np.floor(d * s)) for d, s in zip(shape, scales)]
        else:
            raise UnsupportedModel(f'numpy-blas: Resize without sizes or scales ({where})')
        if len(shape) != 4 or sizes[:2] != list(shape[:2]):
            raise UnsupportedModel(f'numpy-blas: Resize only over H and W of NCHW ({where})')
        n, c, h, w = shape
        ho, wo = sizes[2], sizes[3]

        def axis(n_out, n_in, scale):
            src = np.clip(_resize_coords(coord, n_out, n_in, scale), 0, n_in - 1)
            i0 = np.minimum(src.astype(np.int64), n_in - 1)
            i1 = np.minimum(i0 + 1, n_in - 1)
            f = (src - i0).astype(np.float32)
            return i0, i1, (1 - f), f
        y0, y1, wy0, wy1 = axis(ho, h, scales[2])
        x0, x1, wx0, wx1 = axis(wo, w, scales[3])
        wy0, wy1 = wy0[:, None], wy1[:, None]
        t0 = np.empty((n, c, ho, w), np.float32)
        t1 = np.empty_like(t0)
        out = np.empty((n, c, ho, wo), np.float32)
        u = np.empty_like(out)

        def fn(x, *_):
            np.take(x, y0, axis=2, out=t0, mode='clip')
            np.take(x, y1, axis=2, out=t1, mode='clip')
            np.multiply(t0, wy0, out=t0)
            np.multiply(t1, wy1, out=t1)
            np.add(t0, t1, out=t0)
            np.take(t0, x0, axis=3, out=out, mode='clip')
            np.take(t0, x1, axis=3, out=u, mode='clip')
            np.multiply(out, wx0, out=out)
            np.multiply(u, wx1, out=u)
            np.add(out, u, out=out)
            return out
        return fn, [out.shape], [True]
