# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The Triton candidate against the REAL bundled server (edge_infer serve's tritonserver).

Two servers for the module (nanodet on ONNX Runtime, 1 thread, inside it;
the uint8 frame in, normalised on the server: edge_infer serve's default).
With the dense outputs (``--rows-floor 0``) its answers equal local ONNX
Runtime's on the robot's float input, over system shared memory on
loopback and over plain gRPC; with serve's default, only the cells over the
floor, they decode to the same detections on real frames; and so do those of a
server fed the float tensor (``--input float``); the candidate is
measured and judged in a profile beside the local rows; a late answer
fails only its own frame. The refusals: a
server that is down, a model it does not serve, a file that differs.
Skipped, with the reason, only where the bundled server cannot run
(:func:`triton_server.skip_reason`).
"""

import pathlib

from edge_infer import paths
from edge_infer.backends.libs.ort import OrtBackend
from edge_infer.backends.libs.triton import parse_url, TritonBackend
from edge_infer.core.backend import BackendError
from edge_infer.core.registry import load_models
from edge_infer.testing import triton_server
import numpy as np
import pytest

WHY = triton_server.skip_reason()
pytestmark = pytest.mark.skipif(bool(WHY), reason=WHY or 'the bundled server runs here')
SERVED = 'onnxruntime/cpu/t1'


def _model_path(name: str) -> pathlib.Path:
    path = paths.models_dir() / load_models()[name].file
    if not path.is_file():
        pytest.skip(f'{path} missing: edge_infer prepare')
    return path


@pytest.fixture(scope='module')
def server(tmp_path_factory):
    """Serve nanodet with serve's defaults: u8 frame in, the cells over the floor out."""
    _model_path('nanodet')
    with triton_server.served(tmp_path_factory.mktemp('triton'), {'nanodet': SERVED}) as s:
        yield s


@pytest.fixture(scope='module')
def dense(tmp_path_factory):
    """Serve nanodet's dense outputs (--rows-floor 0)."""
    _model_path('nanodet')
    with triton_server.served(tmp_path_factory.mktemp('dense'), {'nanodet': SERVED},
                              rows_floor=0) as s:
        yield s


@pytest.fixture(scope='module')
def street():
    """Return real frames' u8 inputs with their transforms: people and cars in them."""
    from edge_infer.backends.measure.frames import calibration_frames
    from edge_infer.core.preprocess import Preprocessor
    pre = Preprocessor(load_models()['nanodet'].input_spec, 'u8')
    out = []
    for f in calibration_frames(4)[0]:
        x, tf = pre(f)
        out.append((np.array(x, copy=True), tf))
    return out


@pytest.fixture(scope='module')
def frame():
    """Return the resized frame a robot sends: 1 x 416 x 416 x 3 uint8, model colours."""
    return np.random.default_rng(3).integers(0, 256, (1, 416, 416, 3), np.uint8)


def _as_float(frame):
    """Return the robot's own float input for ``frame``: (x - mean) / std, NCHW."""
    spec = load_models()['nanodet'].input_spec
    x = (frame.astype(np.float32) - np.float32(spec.mean)) / np.float32(spec.std)
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def _reference(x):
    sess = OrtBackend(intra_op_threads=1).open_session(_model_path('nanodet'))
    return [np.array(o, copy=True) for o in sess.run(x if x.dtype == np.float32
                                                     else _as_float(x))]


def _same_answers(backend, x, transport):
    sess = backend.open_session(_model_path('nanodet'))
    try:
        ref = _reference(x)
        for _ in range(3):      # the regions are reused from frame to frame
            out = sess.run(x)
            assert [o.shape for o in out] == [r.shape for r in ref]
            for o, r in zip(out, ref):
                np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-4)
        assert sess.transport == transport, sess.note
        assert 0 < sess.remote_compute_ms < 1e4
    finally:
        sess.close()


@pytest.mark.parametrize('shm', [True, False], ids=['shm', 'grpc'])
def test_served_answers_equal_local_onnxruntime(dense, frame, shm):
    backend = TritonBackend(dense.url, 'nanodet', _model_path('nanodet'), shm=shm)
    ok, why = backend.available()
    assert ok, why
    assert SERVED in why and 'same file' in why and 'uint8 frame sent' in why
    assert backend.input_kind == 'u8'       # the node prepares the u8 frame for it
    _same_answers(backend, frame, 'shm' if shm else 'grpc')


def test_a_server_fed_the_float_tensor_answers_the_same(frame, tmp_path):
    with triton_server.served(tmp_path, {'nanodet': SERVED}, max_batch=0, u8=False,
                              rows_floor=0) as s:
        backend = TritonBackend(s.url, 'nanodet', _model_path('nanodet'))
        ok, why = backend.available()
        assert ok and 'float tensor sent' in why, why
        assert backend.input_kind == 'float'
        _same_answers(backend, _as_float(frame), 'shm')


@pytest.mark.parametrize('shm', [True, False], ids=['shm', 'grpc'])
def test_the_cells_over_the_floor_give_the_same_detections(server, street, shm):
    """Only the cells reaching the floor travel; decoded, they are the dense detections."""
    from edge_infer.backends.libs.triton_rows import DEFAULT_FLOOR
    spec = load_models()['nanodet']
    backend = TritonBackend(server.url, 'nanodet', _model_path('nanodet'), shm=shm)
    sess = backend.open_session(_model_path('nanodet'))
    assert sess.rows_floor == DEFAULT_FLOOR
    found = 0
    try:
        for x, tf in street + street[:1]:       # rows written, then cleared for the next
            out = [np.array(o, copy=True) for o in sess.run(x)]
            ref = _reference(x)
            n = len(ref) // 2
            for o, r in zip(out[:n], ref[:n]):       # score rows: reaching the floor, or 0
                keep = r.max(-1) >= DEFAULT_FLOOR
                np.testing.assert_allclose(o[keep], r[keep], rtol=1e-4, atol=1e-4)
                assert not o[~keep].any()
            for threshold in (DEFAULT_FLOOR, spec.decoder_args['score_threshold']):
                decode = spec.make_decoder(score_threshold=threshold)
                got, want = decode(out, tf), decode(ref, tf)
                assert len(got) == len(want)
                np.testing.assert_allclose(got.boxes, want.boxes, atol=1e-2)
                assert (got.class_ids == want.class_ids).all()
                found += len(want)
        assert sess.transport == ('shm' if shm else 'grpc'), sess.note
    finally:
        sess.close()
    assert found > 0        # the frames hold detections: the check compared some


def test_a_node_keeping_scores_under_the_floor_refuses_the_server(server):
    from edge_infer.core.model import Model
    backend = TritonBackend(server.url, 'nanodet', _model_path('nanodet'))
    with pytest.raises(BackendError, match='--rows-floor'):
        Model(load_models()['nanodet'], backend, paths.models_dir(), score_threshold=0.01)
    model = Model(load_models()['nanodet'], backend, paths.models_dir(), score_threshold=0.2)
    model.close()


def test_shared_memory_is_used_on_loopback_and_freed(server, frame):
    import tritonclient.grpc as grpcclient
    backend = TritonBackend(server.url, 'nanodet', _model_path('nanodet'))
    assert backend.use_shm and 'shared memory' in backend.tensor_passing
    client = grpcclient.InferenceServerClient(server.url.split('://')[1])

    def regions():
        status = client.get_system_shared_memory_status(as_json=True)
        return sorted(r['name'] for r in status.get('regions', {}).values())
    sess = backend.open_session(_model_path('nanodet'))
    try:
        sess.run(frame)
        names = regions()
        assert len(names) == 2 and all(n.startswith('edge_infer_') for n in names), names
        assert sess.transport == 'shm'
    finally:
        sess.close()
    assert regions() == []
    client.close()


def test_a_late_answer_fails_its_frame_only(dense, frame):
    backend = TritonBackend(dense.url, 'nanodet', _model_path('nanodet'), timeout_ms=1.0)
    sess = backend.open_session(_model_path('nanodet'))
    try:
        with pytest.raises(BackendError, match='no answer within 1 ms'):
            sess.run(frame)
        sess._timeout_s = 5.0       # the server is fine: the next frame is answered
        out = sess.run(frame)
        ref = _reference(frame)
        np.testing.assert_allclose(out[0], ref[0], rtol=1e-4, atol=1e-4)
    finally:
        sess.close()


def test_the_candidate_is_measured_beside_the_local_rows(server, tmp_path):
    from edge_infer.backends.manager import BackendManager
    from edge_infer.testing.config import fast_cpu
    spec = load_models()['nanodet']
    cfg = fast_cpu(remote_servers=[server.url], opencv_targets=[])
    mgr = BackendManager(tmp_path / 'cache', config=cfg, log=lambda s: None)
    name = f'triton/127.0.0.1:{parse_url(server.url)[1]}/nanodet'
    assert name in [b.name for b in mgr.candidates(spec, _model_path('nanodet'))]
    _, run = mgr.choose(spec, _model_path('nanodet'), use_cache=False)
    rows = {r.backend: r for r in run.results}
    assert rows[name].status == 'ok', rows[name].reason
    assert rows[name].runs >= 3 and rows[name].p50_ms > 0
    assert rows[name].library == 'triton' and rows[name].device.startswith('remote:')
    local = rows[SERVED]
    assert local.status == 'ok'
    # the same library on the server, fed the same input: judged the same against the
    # authors' preprocessing (the runtime's resize differs from it a little)
    assert rows[name].accuracy == pytest.approx(local.accuracy, abs=0.01), (
        rows[name].accuracy, local.accuracy)
    assert run.chosen in rows


def test_a_model_the_server_does_not_serve_is_refused(server):
    backend = TritonBackend(server.url, 'mobilenet_v2', _model_path('mobilenet_v2'))
    ok, why = backend.available()
    assert not ok and why.startswith('refused:') and "'mobilenet_v2'" in why
    assert 'serves: nanodet' in why and '\n' not in why
    with pytest.raises(BackendError, match='refused'):
        backend.open_session(_model_path('mobilenet_v2'))


def test_a_different_file_is_refused(server, tmp_path):
    other = tmp_path / 'nanodet.onnx'
    other.write_bytes(_model_path('nanodet').read_bytes() + b'\0')     # another version
    ok, why = TritonBackend(server.url, 'nanodet', other).available()
    assert not ok and 'version mismatch' in why and why.startswith('refused:')


def test_a_server_that_is_down_is_unavailable_with_the_reason():
    url = f'grpc://127.0.0.1:{triton_server.free_port()}'
    backend = TritonBackend(url, 'nanodet', _model_path('nanodet'))
    ok, why = backend.available()
    assert not ok
    assert why.startswith(f'Triton server {url} is down or unreachable') and '\n' not in why
    assert backend.options()['served_by'] == ''     # no cached figures can match it


def test_the_server_refuses_a_file_its_config_does_not_name(tmp_path):
    from edge_infer.tools.triton import serve, server_env
    repo = triton_server.write_repo(tmp_path, {'nanodet': SERVED},
                                    sha_override={'nanodet': '0' * 64})
    server = serve.Server(server_env.ensure(log=lambda s: None), repo,
                          triton_server.free_port(), '127.0.0.1').start()
    try:
        with pytest.raises(RuntimeError, match='sha256'):
            server.wait_ready(60)
    finally:
        server.stop()
