# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A BLAS backend: the model run layer by layer in numpy, conv as GEMM, method per layer.

Seed 002 measured that how a convolution is lowered is worth up to 17.68x.
This backend runs an ONNX graph with numpy (whose GEMM is OpenBLAS here) and
lowers every convolution one of three ways:

- ``im2col``: patches gathered into a [C*kh*kw, Ho*Wo] matrix, then
  ``W[M, C*kh*kw] @ cols``;
- ``im2row``: patches as rows [Ho*Wo, C*kh*kw], then ``rows @ W.T``
  (the result transposed back to [M, Ho, Wo]);
- ``direct``: no patch matrix; a loop over the kernel positions, each adding
  ``W[:, :, i, j] @ x_shifted`` into the output (multiply-accumulate over the
  input as it lies).

1x1 stride-1 convs are a single GEMM whatever the method; depthwise convs
(groups == channels) are per-position multiply-adds for every method (a GEMM
of one channel is not worth it), and the plan says so. ``auto`` times the
three methods on every conv layer at load (``tune_runs`` each, on the layer's
real shapes) and keeps the fastest; ``session.plan`` records the choice and
the timings. Buffers (padded inputs, patch matrices) are allocated once per
layer and reused run to run. Batch size 1.
"""

import pathlib
import statistics
import time
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..core.backend import Backend, BackendError, Session

METHODS = ('im2col', 'im2row', 'direct')


def _attrs(node) -> dict:
    from onnx import helper
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        out[a.name] = v.decode() if isinstance(v, bytes) else v
    return out


class _Conv:
    """One convolution layer with its buffers and its lowering."""

    def __init__(self, w: np.ndarray, b: Optional[np.ndarray], attrs: dict, in_shape):
        self.w = np.ascontiguousarray(w, np.float32)
        self.b = None if b is None else b.astype(np.float32).reshape(-1, 1)
        self.m, cg, self.kh, self.kw = w.shape
        self.group = int(attrs.get('group', 1))
        self.sh, self.sw = attrs.get('strides', [1, 1])
        self.dh, self.dw = attrs.get('dilations', [1, 1])
        pads = attrs.get('pads', [0, 0, 0, 0])
        self.pt, self.pl, self.pb, self.pr = pads
        _, self.c, self.h, self.wd = in_shape
        self.hp, self.wp = self.h + self.pt + self.pb, self.wd + self.pl + self.pr
        self.ho = (self.hp - (self.kh - 1) * self.dh - 1) // self.sh + 1
        self.wo = (self.wp - (self.kw - 1) * self.dw - 1) // self.sw + 1
        self.depthwise = self.group == self.c == self.m and cg == 1
        self.pointwise = (self.kh == self.kw == 1 and self.sh == self.sw == 1
                          and self.group == 1 and not any(pads))
        self.xp = np.zeros((self.c, self.hp, self.wp), np.float32)
        self.w2 = self.w.reshape(self.m, -1)
        self.method = 'gemm' if self.pointwise else ('depthwise' if self.depthwise else 'im2col')
        self._cols = None
        self._rows = None
        self.w_off = np.ascontiguousarray(self.w.transpose(2, 3, 0, 1))  # [kh, kw, M, C/g]

    def _pad(self, x: np.ndarray) -> np.ndarray:
        if not (self.pt or self.pb or self.pl or self.pr):
            return x[0]
        self.xp[:, self.pt:self.pt + self.h, self.pl:self.pl + self.wd] = x[0]
        return self.xp

    def _shift(self, xp, i, j):
        r0, c0 = i * self.dh, j * self.dw
        return xp[:, r0:r0 + self.sh * (self.ho - 1) + 1:self.sh,
                  c0:c0 + self.sw * (self.wo - 1) + 1:self.sw]

    def __call__(self, x: np.ndarray, method: Optional[str] = None) -> np.ndarray:
        method = method or self.method
        if self.pointwise:
            out = self.w2 @ x[0].reshape(self.c, -1)
        elif self.depthwise:
            xp = self._pad(x)
            out = np.zeros((self.m, self.ho, self.wo), np.float32)
            for i in range(self.kh):
                for j in range(self.kw):
                    out += self.w[:, 0, i, j][:, None, None] * self._shift(xp, i, j)
            out = out.reshape(self.m, -1)
        elif self.group > 1:
            out = self._grouped(x)
        elif method == 'direct':
            xp = self._pad(x)
            out = np.zeros((self.m, self.ho * self.wo), np.float32)
            for i in range(self.kh):
                for j in range(self.kw):
                    out += self.w_off[i, j] @ self._shift(xp, i, j).reshape(self.c, -1)
        elif method == 'im2row':
            xp = self._pad(x)
            if self._rows is None:
                self._rows = np.empty((self.ho, self.wo, self.c, self.kh, self.kw), np.float32)
            for i in range(self.kh):
                for j in range(self.kw):
                    self._rows[:, :, :, i, j] = self._shift(xp, i, j).transpose(1, 2, 0)
            out = (self._rows.reshape(self.ho * self.wo, -1) @ self.w2.T).T
        else:   # im2col
            xp = self._pad(x)
            if self._cols is None:
                self._cols = np.empty((self.c, self.kh, self.kw, self.ho, self.wo), np.float32)
            for i in range(self.kh):
                for j in range(self.kw):
                    self._cols[:, i, j] = self._shift(xp, i, j)
            out = self.w2 @ self._cols.reshape(self.c * self.kh * self.kw, -1)
        if self.b is not None:
            out = out + self.b
        return np.ascontiguousarray(out).reshape(1, self.m, self.ho, self.wo)

    def _grouped(self, x):
        xp = self._pad(x)
        cg, mg = self.c // self.group, self.m // self.group
        out = np.empty((self.m, self.ho * self.wo), np.float32)
        for g in range(self.group):
            cols = np.stack([self._shift(xp[g * cg:(g + 1) * cg], i, j)
                             for i in range(self.kh) for j in range(self.kw)], axis=1)
            out[g * mg:(g + 1) * mg] = self.w2[g * mg:(g + 1) * mg] @ cols.reshape(
                cg * self.kh * self.kw, -1)
        return out

    def tune(self, x: np.ndarray, runs: int) -> Dict[str, float]:
        """Time each method on ``x``; keep the fastest; return ms per method."""
        if self.pointwise or self.depthwise or self.group > 1:
            return {}
        ms: Dict[str, float] = {}
        for m in METHODS:
            times = []
            for _ in range(runs):
                t = time.perf_counter()
                self(x, m)
                times.append((time.perf_counter() - t) * 1e3)
            ms[m] = statistics.median(times)
        self.method = min(ms, key=ms.get)
        return ms


def _resize_linear_axis(x: np.ndarray, axis: int, out_len: int) -> np.ndarray:
    """Linear resize along one axis, half_pixel coordinates (ONNX Resize, no antialias)."""
    n = x.shape[axis]
    if n == out_len:
        return x
    src = (np.arange(out_len) + 0.5) * (n / out_len) - 0.5
    src = np.clip(src, 0, n - 1)
    i0 = np.floor(src).astype(np.int64)
    i1 = np.minimum(i0 + 1, n - 1)
    w = (src - i0).astype(np.float32)
    shape = [1] * x.ndim
    shape[axis] = out_len
    w = w.reshape(shape)
    return np.take(x, i0, axis=axis) * (1 - w) + np.take(x, i1, axis=axis) * w


class BlasSession(Session):
    """The graph as a list of numpy steps."""

    def __init__(self, path: pathlib.Path, method: str, tune_runs: int, name: str):
        import onnx
        from onnx import numpy_helper
        model = onnx.load(str(path))
        g = model.graph
        self.backend_name = name
        self.consts: Dict[str, np.ndarray] = {i.name: numpy_helper.to_array(i)
                                              for i in g.initializer}
        inputs = [i for i in g.input if i.name not in self.consts]
        if len(inputs) != 1:
            raise BackendError(f'numpy-blas: model has {len(inputs)} inputs')
        self.input_name = inputs[0].name
        self.output_names = [o.name for o in g.output]
        dims = [d.dim_value for d in inputs[0].type.tensor_type.shape.dim]
        if not all(dims) or dims[0] != 1:
            raise BackendError(f'numpy-blas: needs a static batch-1 input, got {dims}')
        self.nodes = list(g.node)
        supported = {'Conv', 'Relu', 'LeakyRelu', 'Clip', 'Sigmoid', 'Add', 'Mul', 'Concat',
                     'Reshape', 'Flatten', 'Transpose', 'Split', 'MaxPool',
                     'GlobalAveragePool', 'Gemm', 'Resize', 'Identity', 'Constant'}
        for n in self.nodes:
            if n.op_type not in supported:
                raise BackendError(f'numpy-blas: unsupported op {n.op_type} ({n.name})')
        self.attrs = [_attrs(n) for n in self.nodes]
        self.convs: Dict[int, _Conv] = {}
        self.plan: List[dict] = []
        t0 = time.perf_counter()
        # one pass on zeros: shapes for the conv layers, and their tuning
        env = {self.input_name: np.zeros(dims, np.float32)}
        self._forward(env, build=True, method=method, tune_runs=tune_runs)
        self.tune_ms = (time.perf_counter() - t0) * 1e3

    def _forward(self, env, build=False, method='auto', tune_runs=3):
        consts = self.consts
        for k, (n, a) in enumerate(zip(self.nodes, self.attrs)):
            def val(i):
                name = n.input[i]
                return env[name] if name in env else consts.get(name)
            op = n.op_type
            if op == 'Conv':
                x = val(0)
                if build:
                    b = val(2) if len(n.input) > 2 and n.input[2] else None
                    conv = _Conv(val(1), b, a, x.shape)
                    ms = {}
                    if method == 'auto':
                        ms = conv.tune(x, tune_runs)
                    elif not (conv.pointwise or conv.depthwise or conv.group > 1):
                        conv.method = method
                    self.convs[k] = conv
                    self.plan.append({'node': n.name, 'method': conv.method,
                                      'shape': f'{conv.c}x{conv.h}x{conv.wd}->{conv.m}x'
                                               f'{conv.ho}x{conv.wo} k{conv.kh}',
                                      'ms': ms})
                y = self.convs[k](x)
            elif op == 'Relu':
                y = np.maximum(val(0), 0)
            elif op == 'LeakyRelu':
                x = val(0)
                y = np.where(x > 0, x, x * np.float32(a.get('alpha', 0.01)))
            elif op == 'Clip':
                lo = val(1) if len(n.input) > 1 and n.input[1] else None
                hi = val(2) if len(n.input) > 2 and n.input[2] else None
                y = np.clip(val(0), lo, hi)
            elif op == 'Sigmoid':
                y = 1.0 / (1.0 + np.exp(-val(0)))
            elif op == 'Add':
                y = val(0) + val(1)
            elif op == 'Mul':
                y = val(0) * val(1)
            elif op == 'Concat':
                y = np.concatenate([val(i) for i in range(len(n.input))], axis=a['axis'])
            elif op == 'Reshape':
                shape = [int(s) for s in val(1)]
                x = val(0)
                shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
                y = x.reshape(shape)
            elif op == 'Flatten':
                x = val(0)
                ax = a.get('axis', 1)
                y = x.reshape(int(np.prod(x.shape[:ax])), -1)
            elif op == 'Transpose':
                y = np.ascontiguousarray(val(0).transpose(a['perm']))
            elif op == 'Split':
                x = val(0)
                ax = a.get('axis', 0)
                sizes = val(1) if len(n.input) > 1 and n.input[1] else a.get('split')
                cuts = np.cumsum(sizes)[:-1]
                for name, part in zip(n.output, np.split(x, cuts, axis=ax)):
                    env[name] = part
                continue
            elif op == 'MaxPool':
                y = self._maxpool(val(0), a)
            elif op == 'GlobalAveragePool':
                y = val(0).mean(axis=(2, 3), keepdims=True)
            elif op == 'Gemm':
                x, w = val(0), val(1)
                if a.get('transA', 0):
                    x = x.T
                w = w.T if a.get('transB', 0) else w
                y = a.get('alpha', 1.0) * (x @ w)
                if len(n.input) > 2 and n.input[2]:
                    y = y + a.get('beta', 1.0) * val(2)
            elif op == 'Resize':
                y = self._resize(n, a, val)
            elif op == 'Constant':
                from onnx import numpy_helper
                y = numpy_helper.to_array(a['value'])
            else:   # Identity
                y = val(0)
            env[n.output[0]] = y.astype(np.float32, copy=False) if y.dtype != np.float32 \
                and y.dtype.kind == 'f' else y
        return [env[o] for o in self.output_names]

    @staticmethod
    def _maxpool(x, a):
        kh, kw = a['kernel_shape']
        sh, sw = a.get('strides', [1, 1])
        pt, pl, pb, pr = a.get('pads', [0, 0, 0, 0])
        xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=-np.inf)
        ho = (xp.shape[2] - kh) // sh + 1
        wo = (xp.shape[3] - kw) // sw + 1
        out = None
        for i in range(kh):
            for j in range(kw):
                s = xp[:, :, i:i + sh * (ho - 1) + 1:sh, j:j + sw * (wo - 1) + 1:sw]
                out = s.copy() if out is None else np.maximum(out, s)
        return out

    @staticmethod
    def _resize(n, a, val):
        if a.get('mode', 'nearest') != 'linear' or \
                a.get('coordinate_transformation_mode', 'half_pixel') != 'half_pixel':
            raise BackendError(f'numpy-blas: Resize {a} not supported ({n.name})')
        x = val(0)
        sizes = val(3) if len(n.input) > 3 and n.input[3] else None
        if sizes is None:
            scales = val(2)
            sizes = [int(np.floor(d * s)) for d, s in zip(x.shape, scales)]
        y = _resize_linear_axis(x, 2, int(sizes[2]))
        return _resize_linear_axis(y, 3, int(sizes[3]))

    def run(self, tensor: np.ndarray) -> List[np.ndarray]:
        """Run one input tensor through the numpy graph."""
        return self._forward({self.input_name: tensor})

    def close(self) -> None:
        """Drop the layers and buffers."""
        self.convs.clear()


class BlasBackend(Backend):
    """numpy / OpenBLAS, conv lowered per layer (see the module docstring)."""

    library = 'numpy'
    device = 'cpu'
    precision = 'fp32'
    tensor_passing = 'numpy arrays between layers (im2col/im2row buffers reused)'

    def __init__(self, conv_method: str = 'auto', tune_runs: int = 3):
        if conv_method not in ('auto', *METHODS):
            raise ValueError(f"conv_method '{conv_method}': use auto or one of {METHODS}")
        self.conv_method = conv_method
        self.tune_runs = int(tune_runs)
        self.name = 'numpy-blas/cpu' + ('' if conv_method == 'auto' else f'/{conv_method}')

    def options(self) -> Dict[str, object]:
        """Return the conv method and tuning runs."""
        return {'conv_method': self.conv_method, 'tune_runs': self.tune_runs}

    def versions(self) -> Dict[str, str]:
        """Return numpy's version and its BLAS."""
        return {'numpy': np.__version__, 'blas': _blas_name()}

    def available(self) -> Tuple[bool, str]:
        """Return True (numpy is always there) and which BLAS it uses."""
        return True, f'numpy {np.__version__} with {_blas_name()}'

    def load(self, model_path: pathlib.Path) -> Session:
        """Parse the model and plan (and tune) every conv layer."""
        path = pathlib.Path(model_path)
        if not path.is_file():
            raise BackendError(f'model file {path} not found')
        try:
            return BlasSession(path, self.conv_method, self.tune_runs, self.name)
        except BackendError:
            raise
        except Exception as exc:  # onnx parse errors and the like
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise BackendError(f'{self.name}: cannot load {path.name}: {first}') from None


def _blas_name() -> str:
    try:
        cfg = np.show_config(mode='dicts')
        blas = cfg.get('Build Dependencies', {}).get('blas', {})
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # older numpy: no dict mode
        return 'unknown BLAS'
