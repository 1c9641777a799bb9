# Copyright 2026 edge_infer contributors. Apache-2.0.
"""int8 variants: held-out frames, the user's own footage, the child quantizer, failures."""

import dataclasses
import hashlib
import pathlib
import threading

import cv2
from edge_infer import paths
from edge_infer.backends.manager import BackendManager
from edge_infer.backends.measure.profiling import calibration_frames
from edge_infer.backends.precision.calibration_sources import (calibration_sets, QuantizeError,
                                                               source_frames)
from edge_infer.backends.precision.quantize import validation_target
from edge_infer.backends.precision.variants import make_variant, VariantBackend, VariantError
from edge_infer.core.backend import BackendError
from edge_infer.core.registry import load_registry
import numpy as np
import onnx
from onnx import helper, TensorProto
import pytest


def _quiet(line):
    pass


def _digest(frame) -> str:
    return hashlib.sha256(np.ascontiguousarray(frame.pixels).tobytes()).hexdigest()


@pytest.fixture(scope='module')
def mobilenet(data_home):
    spec = load_registry(paths.config_dir() / 'models.yaml')['mobilenet_v2']
    return spec, data_home / 'models' / spec.file


def test_calibration_validation_and_judging_frames_never_meet(mobilenet):
    spec, _ = mobilenet
    cal, val, what = calibration_sets(spec, 30, 24, log=_quiet)
    judge, judged = calibration_frames(6, log=_quiet)
    assert (len(cal), len(val), len(judge)) == (30, 24, 6)
    assert 'first half' in what and 'disjoint' in what
    assert 'second half + photos' in judged
    sets = [{_digest(f) for f in frames} for frames in (cal, val, judge)]
    assert [len(s) for s in sets] == [30, 24, 6]       # no frame twice within a set
    assert not (sets[0] & sets[1]) and not (sets[0] & sets[2]) and not (sets[1] & sets[2])


def test_the_target_on_validation_frames_is_stricter_than_the_floor():
    assert validation_target(0.9) == pytest.approx(0.95)
    assert validation_target(0.99) == pytest.approx(0.995)


def test_a_users_folder_or_bag_calibrates(footage, small_bag, tmp_path):
    folder = tmp_path / 'shots'
    folder.mkdir()
    for p in footage['photos']:
        (folder / p.name).write_bytes(p.read_bytes())
    (folder / 'notes.txt').write_text('not an image')
    frames, what = source_frames(str(folder), 3, log=_quiet)
    assert len(frames) == 3 and f'3 images of folder {folder}' == what
    frames, what = source_frames(str(small_bag), 5, log=_quiet)
    assert len(frames) == 5 and 'frames of bag' in what and '/camera/image' in what
    assert all(f.pixels.ndim == 3 for f in frames)
    # the bag holds the same frame raw and compressed: both decode to a picture
    assert frames[0].pixels.shape[2] == 3


def test_bad_calibration_sources_say_why(tmp_path):
    with pytest.raises(QuantizeError, match='does not exist'):
        source_frames(str(tmp_path / 'nowhere'), 4)
    empty = tmp_path / 'empty'
    empty.mkdir()
    with pytest.raises(QuantizeError, match='holds no image files'):
        source_frames(str(empty), 4)
    broken = tmp_path / 'broken'
    broken.mkdir()
    (broken / 'a.jpg').write_bytes(b'\xff\xd8 not a jpeg')
    with pytest.raises(QuantizeError, match='no image could be read'):
        source_frames(str(broken), 4)


def test_registry_and_model_add_keep_the_calibration_source(mobilenet, footage, tmp_path):
    from edge_infer.tools.models.user import add, ModelError
    spec, src = mobilenet
    shots = tmp_path / 'shots'
    shots.mkdir()
    (shots / 'a.png').write_bytes(footage['photos'][0].read_bytes())
    registry = tmp_path / 'home' / 'models.yaml'
    labels = tmp_path / 'labels.txt'
    labels.write_text('\n'.join(spec.labels))
    name, _ = add(src, 'mine', labels, registry=registry, models_dir=tmp_path / 'models',
                  calibration=shots)
    assert load_registry(registry)[name].calibration == str(shots.resolve())
    with pytest.raises(ModelError, match='--calibration: .*does not exist'):
        add(src, 'other', labels, registry=registry, models_dir=tmp_path / 'models',
            calibration=tmp_path / 'missing')
    assert 'other' not in load_registry(registry)


def test_candidates_include_openvino_int8_twins(mobilenet, tmp_path):
    spec, src = mobilenet
    mgr = BackendManager(tmp_path, config={'openvino_threads': [1, 2], 'ncnn_threads': [],
                                           'ncnn_vulkan': False,
                                           'torch_precisions': []}, log=_quiet)
    names = [b.name for b in mgr.candidates(spec, src)]
    ov_best = [n for n in names if n.startswith('openvino/') and '/int8' not in n and
               (n.endswith('+pre') or n.count('/') == 3)]
    int8 = [n for n in names if n.startswith('openvino/') and '/int8' in n]
    assert len(int8) == 4, names            # t1, t2, each as float and +pre input
    assert 'openvino/cpu/t1/int8+pre' in int8 or 'openvino/cpu/t1/bf16/int8+pre' in int8
    assert 'onnxruntime/cpu/t2/int8' in names and ov_best
    mgr.cap_threads(1)
    assert 'onnxruntime/cpu/t1/int8' in [b.name for b in mgr.candidates(spec, src)]


def _two_input_model(path: pathlib.Path) -> pathlib.Path:
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node('Add', ['a', 'b'], ['y'])], 'two',
        [helper.make_tensor_value_info('a', f32, [1, 3, 8, 8]),
         helper.make_tensor_value_info('b', f32, [1, 3, 8, 8])],
        [helper.make_tensor_value_info('y', f32, [1, 3, 8, 8])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)],
                                ir_version=8), str(path))
    return path


@pytest.mark.parametrize('kind', ['int8', 'int8-nncf'])
def test_a_graph_the_quantizer_refuses_is_a_failed_candidate(mobilenet, tmp_path, kind):
    spec, _ = mobilenet
    src = _two_input_model(tmp_path / 'two.onnx')
    spec = dataclasses.replace(spec, file=src.name)
    with pytest.raises(VariantError, match=f'{kind} conversion of two.onnx failed: .+'):
        make_variant(src, kind, tmp_path / 'cache', spec=spec, frames=(2, 2), log=_quiet)
    from edge_infer.backends.libs.ort import OrtBackend
    backend = VariantBackend(OrtBackend(), kind, tmp_path / 'cache',
                             lambda: (spec, 0.9, (2, 2), None))
    with pytest.raises(BackendError, match=f'cannot make the {kind} variant'):
        backend.open_session(src)
    left = list((tmp_path / 'cache').rglob('*'))
    assert not [p for p in left if p.is_file()], left      # nothing half-written


def test_a_cancelled_profile_stops_the_quantizer(mobilenet, tmp_path):
    spec, src = mobilenet
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(VariantError, match='cancelled'):
        make_variant(src, 'int8', tmp_path, spec=spec, frames=(4, 4), log=_quiet,
                     cancel=cancel)
    assert not [p for p in tmp_path.rglob('*') if p.is_file()]


@pytest.mark.slow
def test_nncf_int8_is_made_once_with_its_note_and_runs(mobilenet, footage, tmp_path):
    from edge_infer.backends.libs.openvino import OpenVinoBackend
    from edge_infer.backends.libs.ort import OrtBackend
    from edge_infer.core.preprocess import Preprocessor
    spec, src = mobilenet
    lines = []
    # a low floor: nncf.quantize alone (accuracy control is the profile's business)
    out = make_variant(src, 'int8-nncf', tmp_path, spec=spec, floor=0.5, frames=(8, 4),
                       log=lines.append)
    assert out.suffix == '.xml' and out.with_suffix('.bin').is_file()
    assert any('calibration frames: 12 frames of the bundled video' in ln for ln in lines)
    made = [ln for ln in lines if ln.startswith('made int8-nncf variant')]
    assert len(made) == 1
    from edge_infer.backends.precision.quantize import MAX_MB, read_note
    assert 0 < read_note(out)['peak_mb'] <= MAX_MB      # the child's RSS, watched
    again = []
    assert make_variant(src, 'int8-nncf', tmp_path, spec=spec, floor=0.5, frames=(8, 4),
                        log=again.append) == out and again == []
    backend = VariantBackend(OpenVinoBackend(1), 'int8-nncf', tmp_path.parent / 'x',
                             lambda: (spec, 0.5, (8, 4), None))
    backend.cache_dir = tmp_path.parent           # the variants folder is cache_dir/variants
    assert backend.name == 'openvino/cpu/t1/int8'
    import json
    note = json.loads(pathlib.Path(str(out) + '.json').read_text())
    assert note['method'].startswith('nncf.quantize') and 0 <= note['validation'] <= 1
    pre = Preprocessor(spec.input_spec)
    photo = next(p for p in footage['photos'] if p.stem == 'chelsea')
    from edge_infer.core.image import Frame
    x = np.array(pre(Frame(cv2.imread(str(photo)), 'bgr'))[0], copy=True)
    got = OpenVinoBackend(1).open_session(out).run(x)[0]
    ref = OrtBackend().open_session(src).run(x)[0]
    assert int(np.argmax(got)) == int(np.argmax(ref))     # a clear cat stays a cat


@pytest.mark.slow
def test_profile_says_how_an_int8_candidate_was_made_and_judged(mobilenet, tmp_path):
    spec, src = mobilenet
    lines = []
    mgr = BackendManager(tmp_path, config={
        'calibration_frames': 4, 'int8_calibration_frames': 6, 'int8_validation_frames': 4,
        'warmup': 1, 'min_runs': 3, 'screen_s': 0.05, 'quiet_foreign_cores': 99.0},
        log=lines.append)
    run = mgr.profile(spec, src, only=['onnxruntime/cpu/t2/int8'])
    res = run.results[0]
    assert res.backend == 'onnxruntime/cpu/t2/int8'
    assert res.status in ('ok', 'rejected'), res.reason
    text = res.accuracy_detail if res.status == 'ok' else res.reason
    assert 'calibrated on 10 frames of the bundled video (vtest.avi first half)' in text
    assert 'validation agreement' in text and 'quantize_static' in text
    said = [ln for ln in lines if ln.startswith('[onnxruntime/cpu/t2/int8 mobilenet_v2]')]
    assert any('calibration frames: 10 frames of the bundled video' in ln for ln in said)
    assert any(ln.startswith('[onnxruntime/cpu/t2/int8 mobilenet_v2] made int8 variant')
               for ln in said)
    # the second profile reads the file: nothing made again, the note still shown
    lines.clear()
    again = mgr.profile(spec, src, only=['onnxruntime/cpu/t2/int8'], use_cache=False)
    res = again.results[0]
    assert 'validation agreement' in (res.accuracy_detail if res.status == 'ok' else res.reason)
    assert not [ln for ln in lines if 'made int8 variant' in ln]


def test_in_process_quantizing_fails_the_same_way(mobilenet, tmp_path, monkeypatch):
    """arm-check's worker quantizes in its own process (no second aarch64 Python)."""
    from edge_infer.backends.precision import quantize
    spec, _ = mobilenet
    monkeypatch.setattr(quantize, 'ISOLATE', False)
    src = _two_input_model(tmp_path / 'two.onnx')
    with pytest.raises(VariantError, match='int8 conversion of two.onnx failed: .*2 inputs'):
        make_variant(src, 'int8', tmp_path / 'cache', spec=spec, frames=(2, 2), log=_quiet)


def test_the_quantizer_is_stopped_above_its_memory_bound(mobilenet, tmp_path):
    """A quantizer over ``max_mb`` is stopped and says so; nothing half-written is left."""
    spec, src = mobilenet
    with pytest.raises(VariantError, match=r'int8: the quantizer went over 60 MB \(stopped at '
                                           r'\d+ MB; the bound is variant_memory_mb'):
        make_variant(src, 'int8', tmp_path, spec=spec, frames=(4, 4), log=_quiet, max_mb=60)
    assert not [p for p in tmp_path.rglob('*') if p.is_file()]


def test_calibration_reads_in_strides_that_divide_the_frames():
    """ORT calibrates a few frames at a time (its histograms held every frame at once)."""
    from edge_infer.backends.precision.quantize import _Reader, stride
    assert [stride(n, 5) for n in (30, 24, 7, 4, 1)] == [5, 4, 1, 4, 1]
    reader = _Reader('x', [np.full((1, 2), i, np.float32) for i in range(6)])
    reader.set_range(2, 4)
    got = []
    while (item := reader.get_next()) is not None:
        got.append(float(item['x'][0, 0]))
    assert got == [2.0, 3.0] and len(reader) == 6
