# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The TF.js -> ONNX converter's element-wise op handlers, under :class:`.tfjs_ops.Converter`.

Element-wise ops keep their input's ``perm`` (:mod:`edge_infer.tools.models.tfjs_graph`):
they cost no transposes whatever the layout the operands arrive in.
"""

from __future__ import annotations

from typing import List, Tuple

import numpy as np
from numpy.typing import DTypeLike
from onnx import helper

from .tfjs_graph import (_attr, _const_name, _Dyn, _identity, ConversionError, GraphBuilder,
                         TF_DTYPES)


def _onnx_type(dtype: DTypeLike) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


class ElementwiseOps(GraphBuilder):
    """Identity, Cast, the unary and binary arithmetic ops, AddN (``op_<TfOp>`` each)."""

    # -- element-wise -------------------------------------------------------
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

    def op_Sqrt(self, n, ins) -> None:
        self._unary(n, ins, 'Sqrt')

    def op_LeakyRelu(self, n, ins) -> None:
        self._unary(n, ins, 'LeakyRelu', alpha=float(_attr(n, 'alpha', 0.2)))

    def op_Relu6(self, n, ins) -> None:
        x = self.dyn(n, ins[0])
        lo = self.const('relu6_min', np.array(0, x.dtype))
        hi = self.const('relu6_max', np.array(6, x.dtype))
        out = self.unique(n['name'])
        self.node('Clip', [x.name, lo, hi], [out], name=out)
        self.values[n['name']] = _Dyn(out, x.perm, x.shape, x.dtype)

    def op_Cast(self, n, ins) -> None:
        x = self.dyn(n, ins[0])
        dtype = TF_DTYPES.get(_attr(n, 'DstT', ''))
        if dtype is None:
            raise ConversionError(f'Cast {n["name"]}: DstT {_attr(n, "DstT")} not supported')
        if dtype == x.dtype:        # e.g. an int32 input given to the converter as float32
            self.values[n['name']] = x
            return
        self.emit(n, 'Cast', [x.name], x.perm, x.shape, dtype, to=_onnx_type(dtype))

    def _operands(self, n, ins) -> Tuple[List[str], Tuple[int, ...], Tuple[int, ...], np.dtype]:
        """Both operands of a broadcasting op in one layout: (names, perm, shape, dtype)."""
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
        return names, perm, shape, dyn.dtype

    def _binary(self, n, ins, onnx_op: str) -> None:
        names, perm, shape, dtype = self._operands(n, ins)
        out = self.unique(n['name'])
        self.node(onnx_op, names, [out], name=out)
        self.values[n['name']] = _Dyn(out, perm, shape, dtype)

    def op_Add(self, n, ins) -> None:
        self._binary(n, ins, 'Add')

    op_AddV2 = op_Add

    def op_Sub(self, n, ins) -> None:
        self._binary(n, ins, 'Sub')

    def op_Mul(self, n, ins) -> None:
        self._binary(n, ins, 'Mul')

    def op_RealDiv(self, n, ins) -> None:
        self._binary(n, ins, 'Div')

    def op_FloorDiv(self, n, ins) -> None:
        (a, b), perm, shape, dtype = self._operands(n, ins)
        if dtype.kind == 'f':
            q = self.unique(f'{n["name"]}/div')
            self.node('Div', [a, b], [q], name=q)
            self.emit(n, 'Floor', [q], perm, shape, dtype)
            return
        # Integers: (a - a mod b) / b is exact; Mod with fmod=0 takes the divisor's sign.
        m = self.unique(f'{n["name"]}/mod')
        self.node('Mod', [a, b], [m], name=m, fmod=0)
        d = self.unique(f'{n["name"]}/sub')
        self.node('Sub', [a, m], [d], name=d)
        self.emit(n, 'Div', [d, b], perm, shape, dtype)

    def op_SquaredDifference(self, n, ins) -> None:
        (a, b), perm, shape, dtype = self._operands(n, ins)
        d = self.unique(f'{n["name"]}/diff')
        self.node('Sub', [a, b], [d], name=d)
        self.emit(n, 'Mul', [d, d], perm, shape, dtype)

    def op_AddN(self, n, ins) -> None:
        xs = [self.dyn(n, v) for v in ins]
        shape = tuple(np.broadcast_shapes(*[x.shape for x in xs]))
        if any(len(x.shape) != len(shape) for x in xs):
            raise ConversionError(f'AddN {n["name"]}: inputs of different ranks')
        perm = xs[0].perm
        self.emit(n, 'Sum', [self.layout(x, perm) for x in xs], perm, shape, xs[0].dtype)
