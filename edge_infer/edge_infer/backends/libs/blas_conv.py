# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The BLAS backend's convolution: one layer lowered im2col, im2row or direct, timed at load.

See :mod:`edge_infer.backends.libs.blas` for the methods and how ``auto`` picks
one per layer; this module holds the layer itself and the ONNX attribute
helpers the planner shares.
"""

import statistics
import time
from typing import Dict, List, Optional, Tuple

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...core.backend import BackendError

METHODS = ('im2col', 'im2row', 'direct')
SLOW_FACTOR = 10.0      # a method this much slower than the best so far is timed once only


def _attrs(node) -> dict:
    from onnx import helper
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        out[a.name] = v.decode() if isinstance(v, bytes) else v
    return out


def _explicit_pads(a: dict, spatial, kernel, strides, dilations, where: str) -> List[int]:
    """Return [top, left, bottom, right] from ``pads`` or ``auto_pad``."""
    auto = a.get('auto_pad', 'NOTSET')
    if auto in ('NOTSET', ''):
        return [int(p) for p in a.get('pads', [0] * 4)]
    if auto == 'VALID':
        return [0] * 4
    if auto not in ('SAME_UPPER', 'SAME_LOWER'):
        raise BackendError(f'numpy-blas: auto_pad {auto} not supported ({where})')
    begin, end = [], []
    for n, k, s, d in zip(spatial, kernel, strides, dilations):
        total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
        small, big = total // 2, total - total // 2
        begin.append(small if auto == 'SAME_UPPER' else big)
        end.append(big if auto == 'SAME_UPPER' else small)
    return begin + end


def _windows(xp: np.ndarray, kh, kw, ho, wo, sh, sw, dh, dw) -> np.ndarray:
    """View [C, H, W] as [C, kh, kw, Ho, Wo] windows (no copy)."""
    s0, s1, s2 = xp.strides
    return as_strided(xp, (xp.shape[0], kh, kw, ho, wo),
                      (s0, s1 * dh, s2 * dw, s1 * sh, s2 * sw), writeable=False)


class _Conv:
    """One convolution layer: its weights in the layouts each lowering wants, its buffers."""

    def __init__(self, w: np.ndarray, b: Optional[np.ndarray], a: dict, in_shape, where: str):
        self.n, self.c, self.h, self.wd = in_shape
        self.m, self.cg, self.kh, self.kw = w.shape
        self.group = int(a.get('group', 1))
        if self.c != self.cg * self.group or self.m % self.group:
            raise BackendError(f'numpy-blas: Conv channels {self.c} / weight {w.shape} / '
                               f'group {self.group} do not fit ({where})')
        self.sh, self.sw = [int(s) for s in a.get('strides', [1, 1])]
        self.dh, self.dw = [int(d) for d in a.get('dilations', [1, 1])]
        self.pads = _explicit_pads(a, (self.h, self.wd), (self.kh, self.kw),
                                   (self.sh, self.sw), (self.dh, self.dw), where)
        pt, pl, pb, pr = self.pads
        self.hp, self.wp = self.h + pt + pb, self.wd + pl + pr
        self.ho = (self.hp - (self.kh - 1) * self.dh - 1) // self.sh + 1
        self.wo = (self.wp - (self.kw - 1) * self.dw - 1) // self.sw + 1
        g, mg, k = self.group, self.m // self.group, self.cg * self.kh * self.kw
        self.mg, self.k, self.hw = mg, k, self.ho * self.wo
        if self.group == self.c and self.cg == 1 and self.group > 1:
            self.kind = 'depthwise'
        elif self.kh == self.kw == 1 and self.group == 1:
            self.kind = 'pointwise'
        else:
            self.kind = 'dense' if self.group == 1 else 'grouped'
        w = np.asarray(w, np.float32)
        self.wg = np.ascontiguousarray(w.reshape(g, mg, k))              # im2col
        self.wg_t = np.ascontiguousarray(self.wg.transpose(0, 2, 1))      # im2row
        # direct: [kh, kw, G, M/G, C/G]; depthwise: [kh, kw, C, M/C, 1, 1]
        self.w_off = np.ascontiguousarray(
            w.reshape(g, mg, self.cg, self.kh, self.kw).transpose(3, 4, 0, 1, 2))
        self.w_dw = np.ascontiguousarray(
            w.reshape(self.c, mg, self.kh, self.kw).transpose(2, 3, 0, 1))[..., None, None]
        self.bias = None if b is None else np.asarray(b, np.float32).reshape(g, mg, 1)
        self.padded = any(self.pads)
        self.xp = np.zeros((self.c, self.hp, self.wp), np.float32) if self.padded else None
        self.out = np.empty((self.n, self.m, self.ho, self.wo), np.float32)
        self.method = {'depthwise': 'depthwise', 'pointwise': 'gemm'}.get(self.kind, 'im2col')
        self._scratch = np.empty(0, np.float32)

    def key(self) -> tuple:
        """Return what decides the speed of the layer (layers alike are tuned once)."""
        return (self.n, self.c, self.h, self.wd, self.m, self.kh, self.kw, self.sh, self.sw,
                self.dh, self.dw, tuple(self.pads), self.group)

    def describe(self) -> str:
        """Return the layer's shape in a short text."""
        return (f'{self.c}x{self.h}x{self.wd}->{self.m}x{self.ho}x{self.wo} '
                f'k{self.kh}x{self.kw} s{self.sh} d{self.dh} g{self.group}')

    def scratch_need(self, method: str) -> int:
        """Return the float32 elements of shared scratch ``method`` needs."""
        if self.kind == 'depthwise':
            return self.m * self.hw
        if self.kind == 'pointwise':
            plain = self.sh == self.sw == 1 and not self.padded
            return 0 if plain else self.c * self.hw
        if method == 'im2col':
            return self.group * self.k * self.hw
        if method == 'im2row':
            return self.group * self.k * self.hw + self.m * self.hw
        return self.m * self.hw      # direct: one offset's product

    def bind(self, scratch: np.ndarray) -> None:
        """Use ``scratch`` (shared with other layers) for the patch matrices."""
        self._scratch = scratch

    def _pad(self, x: np.ndarray) -> np.ndarray:
        xp = self.xp
        if xp is None:      # no padding
            return x
        pt, pl = self.pads[0], self.pads[1]
        xp[:, pt:pt + self.h, pl:pl + self.wd] = x
        return xp

    def __call__(self, x: np.ndarray, method: Optional[str] = None) -> np.ndarray:
        """Convolve ``x`` [N, C, H, W] into the layer's output buffer and return it."""
        method = method or self.method
        for n in range(self.n):
            self._one(x[n], self.out[n], method)
        return self.out

    def _one(self, x: np.ndarray, out: np.ndarray, method: str) -> None:
        g, mg, k, hw = self.group, self.mg, self.k, self.hw
        ho, wo = self.ho, self.wo
        s = self._scratch
        cols: np.ndarray        # patch matrices, in the shape each step needs
        o: np.ndarray           # the output, likewise
        if self.kind == 'pointwise':
            if self.sh == self.sw == 1 and not self.padded:
                cols = x.reshape(self.c, hw)
            else:
                cols = s[:self.c * hw].reshape(self.c, ho, wo)
                np.copyto(cols, _windows(self._pad(x), 1, 1, ho, wo, self.sh, self.sw,
                                         1, 1)[:, 0, 0])
                cols = cols.reshape(self.c, hw)
            o = out.reshape(self.m, hw)
            np.matmul(self.wg[0], cols, out=o)
            if self.bias is not None:
                o += self.bias[0]
            return
        win = _windows(self._pad(x), self.kh, self.kw, ho, wo, self.sh, self.sw,
                       self.dh, self.dw)
        if self.kind == 'depthwise':
            o = out.reshape(self.c, mg, ho, wo)
            tmp = s[:self.m * hw].reshape(self.c, mg, ho, wo)
            for i in range(self.kh):
                for j in range(self.kw):
                    xs = win[:, i, j][:, None]
                    if i == 0 and j == 0:
                        np.multiply(xs, self.w_dw[i, j], out=o)
                    else:
                        np.multiply(xs, self.w_dw[i, j], out=tmp)
                        o += tmp
            if self.bias is not None:
                o += self.bias.reshape(self.c, mg, 1, 1)
            return
        win_g = win.reshape(g, self.cg, self.kh, self.kw, ho, wo)
        o = out.reshape(g, mg, hw)
        if method == 'im2col':
            cols = s[:g * k * hw].reshape(g, self.cg, self.kh, self.kw, ho, wo)
            np.copyto(cols, win_g)
            np.matmul(self.wg, cols.reshape(g, k, hw), out=o)
            if self.bias is not None:
                o += self.bias
        elif method == 'im2row':
            rows = s[:g * k * hw].reshape(g, ho, wo, self.cg, self.kh, self.kw)
            np.copyto(rows, win_g.transpose(0, 4, 5, 1, 2, 3))
            res = s[g * k * hw:g * k * hw + self.m * hw].reshape(g, hw, mg)
            np.matmul(rows.reshape(g, hw, k), self.wg_t, out=res)
            if self.bias is not None:
                np.add(res.transpose(0, 2, 1), self.bias, out=o)
            else:
                np.copyto(o, res.transpose(0, 2, 1))
        elif method == 'direct':
            o4 = out.reshape(g, mg, ho, wo)
            tmp = s[:self.m * hw].reshape(g, mg, ho, wo)
            for i in range(self.kh):
                for j in range(self.kw):
                    xs = win_g[:, :, i, j]          # [G, C/G, Ho, Wo], strided view
                    if i == 0 and j == 0:
                        np.einsum('gmc,gchw->gmhw', self.w_off[i, j], xs, out=o4)
                    else:
                        np.einsum('gmc,gchw->gmhw', self.w_off[i, j], xs, out=tmp)
                        o4 += tmp
            if self.bias is not None:
                o += self.bias
        else:
            raise ValueError(f'conv method {method!r}')

    def tune(self, runs: int, rng: np.random.Generator) -> Tuple[Dict[str, float], List[str]]:
        """Time each method on a random input of the layer's shape; keep the fastest.

        Returns ms per method (median of ``runs``, or the one run of a method
        that took over SLOW_FACTOR x the best so far) and the methods cut short.
        """
        x = rng.standard_normal((self.n, self.c, self.h, self.wd)).astype(np.float32)
        self.bind(np.empty(max(self.scratch_need(m) for m in METHODS), np.float32))
        ms: Dict[str, float] = {}
        cut: List[str] = []
        for m in METHODS:
            t = time.perf_counter()
            self(x, m)      # first run: page faults and caches; also the cut-off check
            first = (time.perf_counter() - t) * 1e3
            best = min(ms.values(), default=None)
            if best is not None and first > SLOW_FACTOR * best:
                ms[m] = first
                cut.append(m)
                continue
            times = []
            for _ in range(max(1, runs)):
                t = time.perf_counter()
                self(x, m)
                times.append((time.perf_counter() - t) * 1e3)
            ms[m] = statistics.median(times)
        self.method = min(ms, key=ms.__getitem__)
        self.bind(np.empty(0, np.float32))
        return ms, cut
