# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The TF.js -> ONNX converter's op handlers: one ``op_<TfOp>`` method per TF op.

Supported with runtime (non-constant) inputs:

    element-wise  Identity, Cast, Add, AddV2, AddN, Sub, Mul, RealDiv, FloorDiv,
                  SquaredDifference, Sqrt, Sigmoid, Relu, Relu6, LeakyRelu
    convolution   Conv2D, DepthwiseConv2dNative, _FusedConv2D,
                  FusedDepthwiseConv2dNative (BiasAdd + one activation),
                  Conv2DBackpropInput (transposed convolution), MaxPool, AvgPool
    layout/shape  Transpose, Reshape, ExpandDims, Squeeze, Pack, Unpack, ConcatV2,
                  Split, SplitV, Pad, PadV2, ResizeBilinear
    reduce/index  Mean, ArgMax, GatherNd

Spatial ops work on NCHW in ONNX whatever the TF data_format; every handler
keeps the ``perm`` bookkeeping of :mod:`edge_infer.tools.models.tfjs_graph`, so
element-wise ops, reductions, Squeeze/ExpandDims and Unpack cost no
transposes. Index ops (Reshape, Pack, GatherNd) work in TF's own layout.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from .tfjs_elementwise import _onnx_type, ElementwiseOps
from .tfjs_graph import (
    _attr, _const_name, _Dyn, _identity, _inverse, _reduced, _resolve_shape, _same_pads,
    _split_sizes, ConversionError, NCHW_OF_NHWC, TF_DTYPES)

# Activations a fused convolution may end with (TF's names, the same as ONNX's).
ACTIVATIONS = ('Relu', 'Relu6', 'Elu', 'LeakyRelu', 'Sigmoid', 'Tanh')


class Converter(ElementwiseOps):
    """Turns TF nodes into ONNX nodes (dispatch in ``GraphBuilder.convert_node``)."""

    # -- reductions and indexing -------------------------------------------
    def _axes(self, n, v, rank: int, what: str) -> List[int]:
        return sorted({int(a) % rank for a in self.const_arg(n, v, what).reshape(-1)})

    def op_Mean(self, n, ins) -> None:
        x = self.dyn(n, ins[0])
        axes = self._axes(n, ins[1], len(x.shape), 'reduction_indices')
        if not axes:
            self.values[n['name']] = x
            return
        keep = bool(_attr(n, 'keep_dims', False))
        if keep:
            perm, shape = x.perm, [1 if i in axes else s for i, s in enumerate(x.shape)]
        else:
            perm, shape = _reduced(x.perm, axes), [s for i, s in enumerate(x.shape)
                                                   if i not in axes]
        self.emit(n, 'ReduceMean', [x.name], perm, shape, x.dtype,
                  axes=sorted(x.perm.index(a) for a in axes), keepdims=int(keep))

    def op_ArgMax(self, n, ins) -> None:
        x = self.dyn(n, ins[0])
        axes = self._axes(n, ins[1], len(x.shape), 'dimension')
        dtype = TF_DTYPES.get(_attr(n, 'output_type', 'DT_INT64'))
        if len(axes) != 1 or dtype not in (np.int32, np.int64):
            raise ConversionError(f'ArgMax {n["name"]}: axes {axes}, output type {dtype}')
        perm = _reduced(x.perm, axes)
        shape = [s for i, s in enumerate(x.shape) if i != axes[0]]
        attrs: Dict[str, Any] = {'axis': x.perm.index(axes[0]), 'keepdims': 0}
        if dtype == np.int64:
            self.emit(n, 'ArgMax', [x.name], perm, shape, dtype, **attrs)
            return
        i64 = self.unique(f'{n["name"]}/int64')
        self.node('ArgMax', [x.name], [i64], name=i64, **attrs)
        self.emit(n, 'Cast', [i64], perm, shape, dtype, to=_onnx_type(dtype))

    def op_GatherNd(self, n, ins) -> None:
        params, idx = self.dyn(n, ins[0], 'params'), ins[1]
        if isinstance(idx, _Dyn):
            ishape, iname = idx.shape, self.plain(idx)
            if idx.dtype != np.int64:
                cast = self.unique(f'{n["name"]}/indices')
                self.node('Cast', [iname], [cast], name=cast, to=_onnx_type(np.int64))
                iname = cast
        else:
            ishape = np.shape(idx)
            iname = self.const(_const_name(n, 1), np.asarray(idx, np.int64))
        shape = tuple(ishape[:-1]) + params.shape[ishape[-1]:]
        self.emit(n, 'GatherND', [self.plain(params), iname], _identity(len(shape)), shape,
                  params.dtype)

    # -- shapes ---------------------------------------------------------------
    def op_Transpose(self, n, ins) -> None:
        x = self.dyn(n, ins[0])
        q = [int(p) for p in self.const_arg(n, ins[1], 'perm')]
        if sorted(q) != list(range(len(x.shape))):
            raise ConversionError(f'Transpose {n["name"]}: bad perm {q}')
        qinv = _inverse(q)
        self.values[n['name']] = _Dyn(x.name, [qinv[p] for p in x.perm],
                                      [x.shape[i] for i in q], x.dtype)

    def op_ExpandDims(self, n, ins) -> None:
        x = self.dyn(n, ins[0])
        a = self._axes(n, ins[1], len(x.shape) + 1, 'dim')[0]
        # The new axis goes to ONNX position a: any position is right, this one keeps
        # an identity perm an identity.
        moved = [p + (p >= a) for p in x.perm]
        perm = moved[:a] + [a] + moved[a:]
        axes = self.const(f'{n["name"]}/axes', np.array([a], np.int64))
        self.emit(n, 'Unsqueeze', [x.name, axes], perm, x.shape[:a] + (1,) + x.shape[a:], x.dtype)

    def op_Squeeze(self, n, ins) -> None:
        x = self.dyn(n, ins[0])
        rank = len(x.shape)
        dims = sorted({int(d) % rank for d in _attr(n, 'squeeze_dims', [])}) or \
            [i for i, s in enumerate(x.shape) if s == 1]
        if any(x.shape[d] != 1 for d in dims):
            raise ConversionError(f'Squeeze {n["name"]}: dims {dims} of shape {x.shape}')
        axes = np.array(sorted(x.perm.index(d) for d in dims), np.int64)
        self.emit(n, 'Squeeze', [x.name, self.const(f'{n["name"]}/axes', axes)],
                  _reduced(x.perm, dims), [s for i, s in enumerate(x.shape) if i not in dims],
                  x.dtype)

    def op_Unpack(self, n, ins) -> None:
        x = self.dyn(n, ins[0])
        axis = int(_attr(n, 'axis', 0)) % len(x.shape)
        num, q = x.shape[axis], x.perm.index(axis)
        perm = _reduced(x.perm, [axis])
        shape = [s for i, s in enumerate(x.shape) if i != axis]
        axes = self.const(f'{n["name"]}/axes', np.array([q], np.int64))
        parts = [x.name]
        if num > 1:
            parts = [self.unique(f'{n["name"]}/part{i}') for i in range(num)]
            self.node('Split', [x.name, self.const(f'{n["name"]}/split', np.ones(num, np.int64))],
                      parts, name=parts[0], axis=q)
        for i, part in enumerate(parts):
            self.emit(n, 'Squeeze', [part, axes], perm, shape, x.dtype,
                      key=n['name'] if i == 0 else f'{n["name"]}:{i}')

    def op_Pack(self, n, ins) -> None:
        first = next(v for v in ins if isinstance(v, _Dyn))   # all-constant ones are folded
        axis = int(_attr(n, 'axis', 0)) % (len(first.shape) + 1)
        axes = self.const(f'{n["name"]}/axes', np.array([axis], np.int64))
        parts = []
        for i, v in enumerate(ins):
            if isinstance(v, _Dyn):
                part = self.unique(f'{n["name"]}/part{i}')
                self.node('Unsqueeze', [self.plain(v), axes], [part], name=part)
            else:
                part = self.const(_const_name(n, i),
                                  np.expand_dims(np.asarray(v, first.dtype), axis))
            parts.append(part)
        shape = first.shape[:axis] + (len(ins),) + first.shape[axis:]
        self.emit(n, 'Concat', parts, _identity(len(shape)), shape, first.dtype, axis=axis)

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

    # -- convolutions and pooling -----------------------------------------
    def _spatial(self, n, x: _Dyn, fmt: str) -> Tuple[Tuple[int, ...], List[int]]:
        if len(x.shape) != 4:
            raise ConversionError(f'{n["op"]} {n["name"]}: only 2-D (rank 4) supported')
        if fmt == 'NHWC':
            return NCHW_OF_NHWC, [1, 2]
        if fmt == 'NCHW':
            return (0, 1, 2, 3), [2, 3]
        raise ConversionError(f'{n["op"]} {n["name"]}: data_format {fmt} not supported')

    def _pads(self, n, shape: Sequence[int], axes: List[int], k: Sequence[int],
              s: Sequence[int], d: Sequence[int]) -> List[int]:
        padding = _attr(n, 'padding', 'VALID')
        if padding == 'VALID':
            return [0, 0, 0, 0]
        if padding == 'SAME':
            (t, b), (le, r) = [_same_pads(shape[a], k[i], s[i], d[i])
                               for i, a in enumerate(axes)]
            return [t, le, b, r]
        if padding == 'EXPLICIT':
            ex = _attr(n, 'explicit_paddings', [])
            if len(ex) != 8:
                raise ConversionError(f'{n["name"]}: explicit_paddings {ex}')
            (t, b), (le, r) = [(ex[2 * a], ex[2 * a + 1]) for a in axes]
            return [t, le, b, r]
        raise ConversionError(f'{n["name"]}: padding {padding} not supported')

    @staticmethod
    def _window(n, axes: List[int]) -> Tuple[List[int], List[int]]:
        strides = [int(v) for v in _attr(n, 'strides', [1, 1, 1, 1])]
        dil = [int(v) for v in _attr(n, 'dilations', [1, 1, 1, 1])]
        return [strides[a] for a in axes], [dil[a] for a in axes]

    def _conv(self, n, ins, depthwise: bool) -> None:
        x = self.dyn(n, ins[0])
        w = self.const_arg(n, ins[1], 'filter')  # HWIO; depthwise: H, W, C, multiplier
        fmt = _attr(n, 'data_format', 'NHWC')
        perm, axes = self._spatial(n, x, fmt)
        if w.ndim != 4:
            raise ConversionError(f'{n["op"]} {n["name"]}: filter rank {w.ndim}')
        kh, kw, ci, co = w.shape
        cin = x.shape[3 if fmt == 'NHWC' else 1]
        if depthwise:
            if ci != cin:
                raise ConversionError(f'{n["op"]} {n["name"]}: {cin} channels, filter {w.shape}')
            groups, co = cin, ci * co
            w = w.reshape(kh, kw, 1, co)     # output channel c * multiplier + m
        else:
            if ci == 0 or cin % ci or co % (cin // ci):
                raise ConversionError(f'{n["op"]} {n["name"]}: {cin} input channels vs '
                                      f'filter {w.shape}')
            groups = cin // ci
        fused = list(_attr(n, 'fused_ops', []))    # _Fused*: BiasAdd, then an activation
        bias = fused[:1] == ['BiasAdd'] and int(_attr(n, 'num_args', 1)) == 1
        fused = fused[1:] if bias else fused
        if len(fused) > 1 or fused and (fused[0] not in ACTIVATIONS or not bias):
            raise ConversionError(f'{n["op"]} {n["name"]}: fused ops '
                                  f'{_attr(n, "fused_ops")} not supported')
        s, d = self._window(n, axes)
        pads = self._pads(n, x.shape, axes, (kh, kw), s, d)
        inputs = [self.const(_const_name(n, 1), np.transpose(w, (3, 2, 0, 1)))]
        if bias:
            inputs.append(self.const(_const_name(n, 2), self.const_arg(n, ins[2], 'bias')))
        out = self.unique(f'{n["name"]}/BiasAdd' if fused else n['name'])
        self.node('Conv', [self.layout(x, perm)] + inputs, [out], name=out,
                  kernel_shape=[kh, kw], strides=s, dilations=d, pads=pads, group=groups)
        oh, ow = [(x.shape[a] + pads[i] + pads[i + 2] - (k - 1) * d[i] - 1) // s[i] + 1
                  for i, (a, k) in enumerate(zip(axes, (kh, kw)))]
        shape = [x.shape[0], oh, ow, co] if fmt == 'NHWC' else [x.shape[0], co, oh, ow]
        self.values[n['name']] = y = _Dyn(out, perm, shape, x.dtype)
        if fused:
            if fused[0] == 'Relu6':
                self.op_Relu6(n, [y])
            else:
                alpha = {'alpha': float(_attr(n, 'leakyrelu_alpha', 0.2))} \
                    if fused[0] == 'LeakyRelu' else {}
                self._unary(n, [y], fused[0], **alpha)

    def op_Conv2D(self, n, ins) -> None:
        self._conv(n, ins, depthwise=False)

    def op_DepthwiseConv2dNative(self, n, ins) -> None:
        self._conv(n, ins, depthwise=True)

    op__FusedConv2D = op_Conv2D
    op_FusedDepthwiseConv2dNative = op_DepthwiseConv2dNative

    def op_Conv2DBackpropInput(self, n, ins) -> None:
        """Transposed convolution: the gradient of a Conv2D whose input has ``input_sizes``."""
        sizes = [int(v) for v in self.const_arg(n, ins[0], 'input_sizes').reshape(-1)]
        w = self.const_arg(n, ins[1], 'filter')  # H, W, output channels, input channels
        x = self.dyn(n, ins[2])
        fmt = _attr(n, 'data_format', 'NHWC')
        perm, axes = self._spatial(n, x, fmt)
        cax = 3 if fmt == 'NHWC' else 1
        if w.ndim != 4 or len(sizes) != 4 or w.shape[3] != x.shape[cax] or \
                w.shape[2] != sizes[cax] or sizes[0] != x.shape[0]:
            raise ConversionError(f'{n["op"]} {n["name"]}: input {x.shape}, filter {w.shape}, '
                                  f'output {sizes}')
        k = w.shape[:2]
        s, d = self._window(n, axes)
        pads = self._pads(n, sizes, axes, k, s, d)   # those of the forward convolution
        extra = [sizes[a] + pads[i] + pads[i + 2] - (k[i] - 1) * d[i] - 1 - (x.shape[a] - 1) * s[i]
                 for i, a in enumerate(axes)]
        if any(e < 0 or e >= st for e, st in zip(extra, s)):
            raise ConversionError(f'{n["op"]} {n["name"]}: output {sizes} does not fit')
        wname = self.const(_const_name(n, 1), np.transpose(w, (3, 2, 0, 1)))
        self.emit(n, 'ConvTranspose', [self.layout(x, perm), wname], perm, sizes, x.dtype,
                  kernel_shape=list(k), strides=s, dilations=d, pads=pads, output_padding=extra)

    def _pool(self, n, ins, onnx_op: str, **attrs) -> None:
        x = self.dyn(n, ins[0])
        fmt = _attr(n, 'data_format', 'NHWC')
        perm, axes = self._spatial(n, x, fmt)
        ksize = [int(v) for v in _attr(n, 'ksize', [1, 1, 1, 1])]
        strides = [int(v) for v in _attr(n, 'strides', [1, 1, 1, 1])]
        if any(ksize[i] != 1 or strides[i] != 1 for i in range(4) if i not in axes):
            raise ConversionError(f'{n["op"]} {n["name"]}: pooling over batch/channels')
        k = [ksize[a] for a in axes]
        s = [strides[a] for a in axes]
        pads = self._pads(n, x.shape, axes, k, s, [1, 1])
        out = self.unique(n['name'])
        self.node(onnx_op, [self.layout(x, perm)], [out], name=out, kernel_shape=k,
                  strides=s, pads=pads, **attrs)
        shape = list(x.shape)
        for i, a in enumerate(axes):
            shape[a] = (x.shape[a] + pads[i] + pads[i + 2] - k[i]) // s[i] + 1
        self.values[n['name']] = _Dyn(out, perm, shape, x.dtype)

    def op_MaxPool(self, n, ins) -> None:
        self._pool(n, ins, 'MaxPool')

    def op_AvgPool(self, n, ins) -> None:
        # TF averages over the window's pixels inside the image (SAME padding excluded).
        self._pool(n, ins, 'AveragePool', count_include_pad=0)
