# Copyright 2026 edge_infer contributors. Apache-2.0.
"""OpenVINO candidates run for real: f32 and the device's native precision, both models."""

import sys

from edge_infer import paths
from edge_infer.backends.libs.openvino import (_device_facts, native_precision,
                                               openvino_candidates, OpenVinoBackend,
                                               reason as ov_reason)
from edge_infer.backends.libs.ort import OrtBackend
from edge_infer.backends.manager import BackendManager
from edge_infer.backends.measure.profiling import calibration_frames, probe_backend, Reference
from edge_infer.core.backend import BackendError, open_session
from edge_infer.core.registry import load_registry
import numpy as np
import pytest

try:
    import openvino
except ImportError:
    openvino = None

# A mark, not a module-level skip (that ends a whole folder's collection under
# launch_testing's pytest plugin).
pytestmark = pytest.mark.skipif(openvino is None,
                                reason='openvino not installed (pip install openvino)')


@pytest.fixture(scope='module')
def registry():
    return load_registry(paths.config_dir() / 'models.yaml')


@pytest.fixture(scope='module')
def real_inputs(registry, data_home):
    """Return {model: (spec, path, preprocessed real frames, ORT CPU fp32 outputs)}."""
    frames, what = calibration_frames(3)
    assert 'real frames' in what
    out = {}
    for name in ('mobilenet_v2', 'nanodet'):
        spec = registry[name]
        path = data_home / 'models' / spec.file
        ref = Reference(spec, path, frames, what)
        ort = OrtBackend(intra_op_threads=1).open_session(path)
        outs = [[np.array(o, copy=True) for o in ort.run(x)] for x, _ in ref.inputs]
        ort.close()
        out[name] = (spec, path, ref, outs)
    return out


def test_the_native_candidate_is_named_by_what_the_device_reports():
    prec, said = native_precision()
    assert prec and 'INFERENCE_PRECISION_HINT' in said
    names = [b.name for b in openvino_candidates((1, 2), graph_preprocessing=False)]
    assert names[:2] == ['openvino/cpu/t1', 'openvino/cpu/t2']
    if prec == 'fp32':      # a CPU without bf16/fp16 arithmetic: no second candidate
        assert len(names) == 2
    else:
        assert names[2:] == [f'openvino/cpu/t1/{prec}', f'openvino/cpu/t2/{prec}']
        assert OpenVinoBackend(1, prec).available()[0]
    # the '+pre' twins: the best precision the device has, per thread count
    twins = [b for b in openvino_candidates((1, 2)) if b.input_kind == 'u8']
    best = '' if prec == 'fp32' else f'/{prec}'
    assert [b.name for b in twins] == [f'openvino/cpu/t1{best}+pre',
                                       f'openvino/cpu/t2{best}+pre']
    other = 'fp16' if prec != 'fp16' else 'bf16'
    ok, why = OpenVinoBackend(1, other).available()
    assert not ok and f'runs {prec} natively, not {other}' in why


@pytest.mark.parametrize('model', ['mobilenet_v2', 'nanodet'])
def test_f32_matches_onnx_runtime_on_real_frames(real_inputs, model):
    spec, path, ref, ort_outs = real_inputs[model]
    sess = OpenVinoBackend(2, 'fp32').open_session(path)
    try:
        assert sess._compiled.get_property('INFERENCE_PRECISION_HINT').to_string() == 'f32'
        for (x, _), want in zip(ref.inputs, ort_outs):
            got = sess.run(x)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                assert g.shape == w.shape
                scale = float(np.abs(w).max()) or 1.0
                assert float(np.abs(g - w).max()) <= 1e-4 * max(1.0, scale)
    finally:
        sess.close()


@pytest.mark.parametrize('model', ['mobilenet_v2', 'nanodet'])
def test_native_precision_runs_and_the_guard_measures_it(real_inputs, model):
    from candidate_profile import profile_candidate
    prec, _ = native_precision()
    if prec == 'fp32':
        pytest.skip('this CPU runs f32 natively: no reduced-precision candidate')
    spec, path, ref, ort_outs = real_inputs[model]
    backend = OpenVinoBackend(2, prec)
    sess = backend.open_session(path)
    try:
        assert sess._compiled.get_property('INFERENCE_PRECISION_HINT').to_string() in \
            ('bf16', 'f16')
        got = sess.run(ref.inputs[0][0])
        diff = max(float(np.abs(g - w).max()) for g, w in zip(got, ort_outs[0]))
        assert 0 < diff < 1.0 * max(float(np.abs(w).max()) for w in ort_outs[0])
    finally:
        sess.close()
    res = profile_candidate(backend, spec, path, ref, budget_s=0.2, warmup=1, min_runs=3)
    # the verdict comes from the measured agreement, whichever way it goes
    assert res.status in ('ok', 'rejected') and 0.0 <= res.accuracy <= 1.0
    assert (res.status == 'ok') == (res.accuracy >= 0.9), res.reason


def test_input_is_bound_without_a_copy_and_outputs_are_read_in_place(real_inputs):
    spec, path, ref, _ = real_inputs['mobilenet_v2']
    sess = OpenVinoBackend(1, 'fp32').open_session(path)
    try:
        x = np.array(ref.inputs[0][0], copy=True)
        first = np.array(sess.run(x)[0], copy=True)
        out = sess.run(x)[0]
        ptr = out.ctypes.data
        x[...] = ref.inputs[1][0]           # same buffer, new content: no re-binding needed
        second = sess.run(x)[0]
        assert second.ctypes.data == ptr                    # the request's buffer, reused
        assert not np.allclose(first, second)               # it read the new content in place
        assert np.shares_memory(sess._request.get_input_tensor().data, x)
    finally:
        sess.close()


def test_cores_are_not_pinned_and_threads_are_what_was_asked(real_inputs):
    _, path, _, _ = real_inputs['mobilenet_v2']
    sessions = [OpenVinoBackend(1, 'fp32').open_session(path) for _ in range(2)]
    try:
        for s in sessions:      # the LATENCY hint alone would pin both models' threads
            assert s._compiled.get_property('ENABLE_CPU_PINNING') is False
            assert s._compiled.get_property('INFERENCE_NUM_THREADS') == 1
    finally:
        for s in sessions:
            s.close()


def test_probe_and_bad_files_and_a_missing_library(tmp_path, monkeypatch, capfd):
    ok, why = probe_backend(OpenVinoBackend(1, 'fp32'), tmp_path)
    assert ok and 'max |diff| vs ORT CPU' in why
    bad = tmp_path / 'garbage.onnx'
    bad.write_bytes(b'not a model at all')
    capfd.readouterr()
    # the line that says what is wrong, not the source files OpenVINO names first; and no
    # other frontend's complaint (TensorFlow's "GraphDef" lines) about a file given as ONNX
    with pytest.raises(BackendError, match=r'^openvino/cpu/t1: cannot load garbage.onnx: '
                                           r"Model can't be parsed$"):
        OpenVinoBackend(1, 'fp32').open_session(bad)
    assert 'GraphDef' not in capfd.readouterr().err
    err = RuntimeError('Exception from src/inference/src/cpp/core.cpp:132:\n'
                       "Check 'x' failed at src/frontends/onnx/y.cpp:5:\n"
                       'FrontEnd API failed with GeneralFailure:\nthe reason\n')
    assert ov_reason(err) == 'the reason' and ov_reason(RuntimeError('')) == 'RuntimeError'
    with pytest.raises(BackendError, match='not found'):
        OpenVinoBackend(1, 'fp32').open_session(tmp_path / 'missing.onnx')
    monkeypatch.setitem(sys.modules, 'openvino', None)      # as if not installed
    _device_facts.cache_clear()     # what this process asked before (failures are not kept)
    ok, why = OpenVinoBackend(1, 'fp32').available()
    assert not ok and 'pip install openvino' in why


@pytest.mark.slow
def test_the_manager_lists_measures_and_can_choose_openvino(tmp_path, registry, data_home):
    spec = registry['mobilenet_v2']
    path = data_home / 'models' / spec.file
    mgr = BackendManager(tmp_path, config={
        'ort_threads': [1], 'ort_providers_always_listed': [], 'opencv_targets': [],
        'blas': False, 'variants': [], 'openvino_threads': [1], 'ncnn_threads': [],
        'ncnn_vulkan': False, 'torch_precisions': [], 'budget_s': 0.2, 'warmup': 1, 'min_runs': 3,
        'calibration_frames': 2}, log=lambda s: None)
    backend, run = mgr.choose(spec, path, force='openvino/cpu/t1')
    assert backend.name == run.chosen == 'openvino/cpu/t1'
    by = {r.backend: r for r in run.results}
    assert by['openvino/cpu/t1'].status == 'ok' and by['openvino/cpu/t1'].accuracy == 1.0
    assert 'zero-copy' in by['openvino/cpu/t1'].tensor_passing
    _, run = mgr.choose(spec, path)
    names = {r.backend for r in run.results}
    assert {'onnxruntime/cpu/t1', 'openvino/cpu/t1'} <= names


def test_openvino_telemetry_is_off_in_our_processes(tmp_path):
    """Importing openvino would start Google Analytics telemetry; ours runs the no-op stub."""
    import subprocess
    code = ('import os, sys; '
            'from edge_infer.backends.libs.openvino import OpenVinoBackend, telemetry_blocked; '
            'import openvino; from openvino.tools.ovc import telemetry_utils as t; '
            'print(t.tm.__name__, telemetry_blocked(), '
            "os.path.exists(os.path.join(os.environ['HOME'], 'intel')))")
    env = dict(__import__('os').environ, HOME=str(tmp_path))
    env.pop('CI', None)       # the library's own CI exemption must not be what saves us
    out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-800:]
    stub, blocked, wrote_home = out.stdout.split()
    assert stub.endswith('telemetry_stub') and blocked == 'True' and wrote_home == 'False'


@pytest.mark.parametrize('model', ['mobilenet_v2', 'nanodet'])
def test_preprocessing_in_the_graph_gives_the_same_outputs(real_inputs, model):
    """A '+pre' session fed the u8 frame equals the f32 session fed our float tensor."""
    spec, path, ref, ort_outs = real_inputs[model]
    backend = OpenVinoBackend(1, 'fp32', graph_preprocessing=True)
    assert backend.name == 'openvino/cpu/t1+pre' and backend.input_kind == 'u8'
    with pytest.raises(BackendError, match="needs the model's input spec"):
        backend.open_session(path)
    sess = open_session(backend, path, spec.input_spec)
    try:
        assert sess.input_kind == 'u8'
        for (x, _), want in zip(ref.inputs_for('u8'), ort_outs):
            assert x.dtype == np.uint8
            for g, w in zip(sess.run(x), want):
                scale = float(np.abs(w).max()) or 1.0
                assert float(np.abs(g - w).max()) <= 1e-4 * max(1.0, scale)
    finally:
        sess.close()
    ok, why = probe_backend(backend, paths.data_home() / 'cache')
    assert ok, why
    # measured on a frame's cost: its CPU preprocessing is the u8 kind's
    assert ref.preprocess_ms['u8'] > 0 and ref.preprocess_ms['float'] > 0
