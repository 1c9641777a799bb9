# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The backend manager without ROS.

Probes with the real libraries, the traps, selection, the accuracy guard, the
profile cache and drift detection.
"""

import contextlib
import json
import math
import os
import pathlib
import subprocess
import time

from candidate_profile import profile_candidate
import cv2
from edge_infer import paths
from edge_infer.backends import manager as manager_mod
from edge_infer.backends.libs.opencv_dnn import OpenCvDnnBackend
from edge_infer.backends.libs.ort import OrtBackend
from edge_infer.backends.live.drift import DriftMonitor
from edge_infer.backends.manager import BackendManager
from edge_infer.backends.measure.cache import ProfileCache
from edge_infer.backends.measure.profiling import (calibration_frames, CandidateResult,
                                                   probe_backend, Reference)
from edge_infer.backends.measure.selection import select
from edge_infer.core.backend import BackendError, Session
from edge_infer.core.registry import load_registry
from edge_infer.testing.config import fast_cpu
import numpy as np
import onnx
import pytest

FIXTURES = pathlib.Path(__file__).parents[1] / 'fixtures'


@pytest.fixture(scope='module')
def registry():
    return load_registry(paths.config_dir() / 'models.yaml')


@pytest.fixture(scope='module')
def mobilenet(registry, data_home):
    spec = registry['mobilenet_v2']
    return spec, data_home / 'models' / spec.file


# ---------------------------------------------------------------------- probing
def test_cpu_backends_probe_available_with_the_probe_model_run(tmp_path):
    for backend in (OrtBackend(intra_op_threads=1), OpenCvDnnBackend('cpu')):
        ok, why = probe_backend(backend, tmp_path)
        assert ok, why
        assert 'probe ran in' in why and 'vs ORT CPU' in why


def test_trap_ort_provider_missing_from_build_falls_back_silently_and_is_caught(
        tmp_path, mobilenet):
    """Asking this CPU-only onnxruntime for CUDA quietly gives a CPU session: refused."""
    import onnxruntime as ort
    if 'CUDAExecutionProvider' in ort.get_available_providers():
        pytest.skip('this onnxruntime build lists CUDA: the trap needs a build without it')
    backend = OrtBackend('CUDAExecutionProvider')
    ok, why = probe_backend(backend, tmp_path)
    assert not ok and 'not in this onnxruntime' in why
    # Loading anyway is what users do by hand: ORT only warns and runs on the CPU.
    with pytest.warns(UserWarning, match='not in available provider names'):
        with pytest.raises(BackendError, match='silent fallback'):
            backend.open_session(mobilenet[1])
    # fallback off: ONNX Runtime itself refuses the nodes left to the CPU EP
    strict = OrtBackend('CUDAExecutionProvider', allow_fallback=False)
    assert 'allow_fallback' not in backend.options() and not strict.options()['allow_fallback']
    with pytest.warns(UserWarning, match='not in available provider names'):
        with pytest.raises(BackendError, match='fallback to CPU EP has been explicitly disabled'):
            strict.open_session(mobilenet[1])


def test_trap_opencv_opencl_without_device_is_unavailable_not_cpu(tmp_path, mobilenet):
    if cv2.ocl.haveOpenCL():
        pytest.skip('an OpenCL device exists here: the no-device trap cannot be shown')
    backend = OpenCvDnnBackend('opencl')
    ok, why = probe_backend(backend, tmp_path)
    assert not ok and 'would quietly run on the CPU' in why
    with pytest.raises(BackendError, match='no OpenCL'):
        backend.open_session(mobilenet[1])
    # What the library itself does when asked: it runs, on the CPU, and says nothing
    # we could catch (a log line only), which is why availability is checked apart.
    net = cv2.dnn.readNetFromONNX(str(mobilenet[1]), engine=cv2.dnn.ENGINE_CLASSIC)
    net.setPreferableTarget(cv2.dnn.DNN_TARGET_OPENCL)
    net.setInput(np.zeros((1, 3, 224, 224), np.float32))
    assert net.forward().shape == (1, 1000)


def test_cuda_targets_unavailable_with_reason_on_a_wheel_build():
    if cv2.cuda.getCudaEnabledDeviceCount() > 0:
        pytest.skip('OpenCV with CUDA here')
    ok, why = OpenCvDnnBackend('cuda-fp16').available()
    assert not ok and 'no CUDA device' in why


# ---------------------------------------------------------------- accuracy guard
class _SwappedClasses(Session):
    """Runs the real model, then rolls the class axis: plausible numbers, wrong answers."""

    def __init__(self, inner):
        self.inner = inner
        self.backend_name = 'test/rolled'

    def run(self, tensor):
        return [np.roll(o, 7, axis=-1) for o in self.inner.run(tensor)]

    def close(self):
        self.inner.close()


class _RolledBackend(OrtBackend):
    def __init__(self):
        super().__init__(intra_op_threads=1)
        self.name = 'test/rolled'

    def open_session(self, model_path, strict=False, input_spec=None):
        return _SwappedClasses(super().open_session(model_path, strict, input_spec))


def test_accuracy_guard_rejects_a_backend_with_wrong_outputs(mobilenet):
    spec, path = mobilenet
    frames, what = calibration_frames(4)
    assert 'real frames' in what
    ref = Reference(spec, path, frames, what)
    good = profile_candidate(OrtBackend(intra_op_threads=1), spec, path, ref, budget_s=0.2)
    bad = profile_candidate(_RolledBackend(), spec, path, ref, budget_s=0.2)
    assert good.status == 'ok' and good.accuracy == 1.0 and good.runs >= 5
    assert bad.status == 'rejected' and bad.accuracy < 0.5
    assert 'top-1 same on 0/' in bad.reason and '95 % interval 0.00-' in bad.reason
    assert bad.accuracy_low == 0.0 and 0 < bad.accuracy_high < 1
    assert good.accuracy_low < 1.0 == good.accuracy_high    # an interval, even at 1.0
    assert select([good, bad])[0] is good
    # even when the wrong one is faster
    bad.p50_ms = good.p50_ms / 10
    assert select([good, bad])[0] is good


def test_detector_accuracy_compares_boxes(registry, data_home):
    spec = registry['nanodet']
    path = data_home / 'models' / spec.file
    frames, what = calibration_frames(3)
    ref = Reference(spec, path, frames, what)
    assert sum(len(d.scores) for d in ref.outputs) > 3        # real frames have people
    res = profile_candidate(OpenCvDnnBackend('cpu'), spec, path, ref, budget_s=0.1,
                            min_runs=2)
    # the reference is the authors' warp, the candidate fed by the runtime's linear resize
    assert res.status == 'ok' and res.accuracy >= 0.9
    assert 'reference boxes matched' in res.accuracy_detail


def test_the_reference_is_the_authors_preprocessing_and_judges_the_runtime_resize(
        registry, data_home):
    import dataclasses
    from edge_infer.backends.libs.ort import OrtBackend
    spec = registry['movenet_lightning']    # authors: tf.image.resize_with_pad (bilinear)
    path = data_home / 'models' / spec.file
    frames, what = calibration_frames(8)
    for interp, passes in (('linear', True), ('area', False)):
        s = dataclasses.replace(spec, input_spec=dataclasses.replace(
            spec.input_spec, interpolation=interp))
        res = profile_candidate(OrtBackend(), s, path, Reference(s, path, frames, what),
                                budget_s=0.1, min_runs=2)
        assert (res.status == 'ok') is passes, (interp, res.reason)
    assert "on the authors' preprocessing" in res.reason


# -------------------------------------------------------------------- selection
def _recorded(name):
    """Jetson TX2 profiles shaped after Lee & Shin 2019's Table 2 (see the fixture's note)."""
    data = json.loads((FIXTURES / name).read_text())
    return {m: [CandidateResult.from_dict(r) for r in rs] for m, rs in data['models'].items()}


def test_objective_changes_the_pick_where_the_data_says_so():
    prof = _recorded('recorded_profiles.json')
    fast, why_fast = select(prof['squeezenet'], 'latency')
    frugal, why_frugal = select(prof['squeezenet'], 'energy')
    edp, _ = select(prof['squeezenet'], 'edp')
    # Lee & Shin 2019, TX2 SqueezeNet: the fastest (TVM gpu, 1.6x) is not the most efficient
    assert fast.backend == 'tvm/gpu' and frugal.backend == 'cudnn/gpu'
    assert edp.backend == 'cudnn/gpu'        # 0.30 J x 30 ms < 0.50 J x 18.75 ms
    assert 'best p50 latency' in why_fast and 'next cudnn/gpu' in why_fast and '1.60x' in why_fast
    assert 'best energy' in why_frugal
    # the ranking flips with the model: among the Caffe libraries cuDNN is fastest for
    # SqueezeNet and slowest for MobileNet, where ArmCL NEON on the CPU wins
    caffe = {m: [r for r in rs if r.backend != 'tvm/gpu'] for m, rs in prof.items()}
    assert select(caffe['squeezenet'])[0].backend == 'cudnn/gpu'
    assert select(caffe['mobilenet'])[0].backend == 'armcl-neon/cpu'
    assert select(prof['mobilenet'], 'energy')[0].backend == 'tvm/gpu'


def test_constraints_are_respected_and_explained():
    prof = _recorded('recorded_profiles.json')['squeezenet']
    best, why = select(prof, 'energy', max_latency_ms=20.0)
    assert best.p50_ms <= 20.0 and 'excluded by max_latency_ms' in why
    best, why = select(prof, 'latency', max_latency_ms=1.0)
    assert best.backend == 'tvm/gpu' and 'NO candidate meets' in why
    best, why = select(prof, 'latency', min_accuracy=1.01)
    assert best is None and 'no candidate reaches accuracy' in why
    for r in prof:
        r.energy_j = float('nan')
    best, why = select(prof, 'energy')
    assert best.backend == 'tvm/gpu' and 'objective energy -> latency' in why
    with pytest.raises(ValueError, match='objective'):
        select(prof, 'cheapest')


# ------------------------------------------------------------------------ cache
def _small_manager(cache_dir, **cfg):
    return BackendManager(cache_dir, config=fast_cpu(**cfg), log=lambda s: None)


@pytest.mark.slow      # the not-slow subset keeps under 3 min (202 s here at 06d0517)
def test_cache_hit_miss_and_invalidation_of_only_what_changed(tmp_path, mobilenet,
                                                              monkeypatch):
    spec, path = mobilenet
    mgr = _small_manager(tmp_path)
    backend, run = mgr.choose(spec, path)
    assert run.from_cache == {'onnxruntime/cpu/t1': False, 'opencv-dnn/cpu': False}
    assert backend.name == run.chosen and run.chosen in run.why
    # a second manager (a restart) reads everything from the file
    again = _small_manager(tmp_path)
    _, run2 = again.choose(spec, path)
    assert all(run2.from_cache.values())
    assert [r.p50_ms for r in run2.results] == [r.p50_ms for r in run.results]
    # a new onnxruntime: only the ORT candidate is measured again
    real = OrtBackend.versions
    monkeypatch.setattr(OrtBackend, 'versions',
                        lambda self: {**real(self), 'onnxruntime': '99.0'})
    _, run3 = _small_manager(tmp_path).choose(spec, path)
    assert run3.from_cache == {'onnxruntime/cpu/t1': False, 'opencv-dnn/cpu': True}
    # another board: everything again
    moved = _small_manager(tmp_path)
    moved.board = {**moved.board, 'cpu': 'Cortex-A57'}
    _, run4 = moved.choose(spec, path)
    assert not any(run4.from_cache.values())
    # a different model file (same registry entry, other bytes): measured again
    other = tmp_path / 'copy' / path.name
    other.parent.mkdir()
    model = onnx.load(str(path))
    onnx.helper.set_model_props(model, {'edited_by': 'test'})   # same graph, new sha
    onnx.save(model, str(other))
    _, run5 = _small_manager(tmp_path).choose(spec, other)
    assert not any(run5.from_cache.values())


def test_corrupt_cache_is_set_aside_and_rebuilt(tmp_path, mobilenet):
    lines = []
    (tmp_path / 'backend_profiles.json').write_text('{"format": 1, "entries": ')
    mgr = _small_manager(tmp_path)
    mgr.cache = ProfileCache(tmp_path / 'backend_profiles.json', log=lines.append)
    mgr.choose(*mobilenet)
    assert (tmp_path / 'backend_profiles.corrupt').is_file()
    assert any('unreadable' in line for line in lines)
    assert json.loads((tmp_path / 'backend_profiles.json').read_text())['entries']


def test_a_full_disk_writes_no_half_cache_says_so_once_and_keeps_the_entries(tmp_path):
    lines = []
    path = tmp_path / 'backend_profiles.json'
    cache = ProfileCache(path, log=lines.append)
    cache.put('a', {'p50': 1.0})
    before = path.read_text()
    tmp = tmp_path / f'backend_profiles.json.{os.getpid()}.tmp'
    for key in ('b', 'c'):      # the temporary file's writes get ENOSPC from the kernel
        tmp.symlink_to('/dev/full')
        cache.put(key, {'p50': 2.0})
    assert path.read_text() == before and not tmp.exists()
    assert cache.get('b') == cache.get('c') == {'p50': 2.0}
    refused = [line for line in lines if 'not written' in line]
    assert len(refused) == 1 and 'No space left on device' in refused[0], lines
    cache.put('d', {'p50': 3.0})        # space again: everything reaches the disk
    assert 'written again' in lines[-1]
    assert set(json.loads(path.read_text())['entries']) == {'a', 'b', 'c', 'd'}


@contextlib.contextmanager
def _read_only(folder: pathlib.Path):
    """Make ``folder`` refuse writes: a read-only tmpfs as root, mode 555 otherwise."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield
        folder.chmod(0o755)
        return
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    if subprocess.run(['mount', '-t', 'tmpfs', 'tmpfs', str(folder)]).returncode:
        pytest.skip('root without the right to mount a tmpfs')
    try:
        for name, data in files.items():
            (folder / name).write_bytes(data)
        subprocess.run(['mount', '-o', 'remount,ro', str(folder)], check=True)
        yield
    finally:
        subprocess.run(['umount', '-l', str(folder)], check=False)


def test_a_read_only_corrupt_cache_is_not_trusted_and_the_node_goes_on(tmp_path):
    folder = tmp_path / 'cache'
    folder.mkdir()
    (folder / 'backend_profiles.json').write_text('{"format": 1, "entries": ')
    lines = []
    with _read_only(folder):
        cache = ProfileCache(folder / 'backend_profiles.json', log=lines.append)
        assert cache.get('a') is None       # unreadable, and it cannot be set aside
        cache.put('a', {'p50': 1.0})
        cache.put('b', {'p50': 2.0})
        assert cache.get('a') == {'p50': 1.0} and len(cache) == 2
        assert (folder / 'backend_profiles.json').read_text() == '{"format": 1, "entries": '
    assert any('unreadable' in line and 'cannot be set aside' in line for line in lines)
    assert len([line for line in lines if 'not written' in line]) == 1, lines


def test_forced_backend_is_measured_alone_and_unknown_names_fail(tmp_path, mobilenet):
    mgr = _small_manager(tmp_path)
    backend, run = mgr.choose(*mobilenet, force='opencv-dnn/cpu')
    assert backend.name == 'opencv-dnn/cpu' and [r.backend for r in run.results] == \
        ['opencv-dnn/cpu'] and 'forced' in run.why
    with pytest.raises(BackendError, match="'tflite/cpu' is not a candidate"):
        mgr.choose(*mobilenet, force='tflite/cpu')


def test_config_rejects_unknown_keys(tmp_path):
    bad = tmp_path / 'backends.yaml'
    bad.write_text('budget_s: 1\nbugdet: 2\n')
    with pytest.raises(ValueError, match="unknown keys \\['bugdet'\\]"):
        manager_mod.load_config(bad)
    assert manager_mod.load_config()['budget_s'] > 0     # the shipped file loads


# ------------------------------------------------------------------------ drift
def test_drift_fires_on_sustained_slowdown_only():
    mon = DriftMonitor(expected_ms=10.0, threshold=1.5, window_s=2.0, min_samples=5,
                       cooldown_s=5.0)
    t = 0.0
    fired = []
    for i in range(40):                  # 4 s at 10 Hz, normal, with one 100 ms outlier
        t += 0.1
        fired.append(mon.add(100.0 if i == 20 else 10.5, now=t))
    assert not any(fired)
    for _ in range(9):                   # slow for 0.9 s: under half the 2 s window
        t += 0.1
        fired.append(mon.add(20.0, now=t))
    assert not any(fired)
    hits = []
    for _ in range(10):                  # slow for most of the window: fires, once
        t += 0.1
        hits.append(mon.add(20.0, now=t))
    assert hits.count(True) == 1 and hits.index(True) <= 2
    assert mon.fired == 1 and mon.last_median_ms == 20.0
    assert not any(mon.add(20.0, now=t + 0.1 * k) for k in range(1, 40))   # cooldown
    mon.rebase(20.0)
    assert not any(mon.add(21.0, now=t + 10 + 0.1 * k) for k in range(60))
    with pytest.raises(ValueError, match='> 1'):
        DriftMonitor(10.0, threshold=0.9)


def test_an_accepted_level_stops_the_alarm_and_follows_the_latency_down():
    mon = DriftMonitor(expected_ms=10.0, threshold=1.5, window_s=1.0, min_samples=5,
                       cooldown_s=2.0)
    t, fired = 0.0, 0
    for _ in range(100):                 # 10 s at 2x: fires once per cooldown
        t += 0.1
        fired += mon.add(20.0, now=t)
    assert fired >= 3
    mon.accept(mon.last_median_ms)       # the runners-up were timed at this load: kept
    assert mon.expected_ms == 20.0 and not mon.in_episode
    assert not any(mon.add(20.0 + (k % 3), now=t + 0.1 * k) for k in range(1, 100))
    t += 10
    for k in range(1, 40):               # the load goes: the expectation comes down with it
        mon.add(11.0, now=t + 0.1 * k)
    assert mon.expected_ms == 10.0       # clearly back (11 < sqrt(1.5) x 10): the measured one
    t += 4
    hits = [mon.add(20.0, now=t + 0.1 * k) for k in range(1, 20)]
    assert any(hits)                     # so the same load fires again when it returns
    mon.rebase(12.0)                     # a switch: the new choice's own figure
    assert mon.expected_ms == mon.floor_ms == 12.0


def test_a_level_straddling_the_threshold_is_one_episode_and_one_accept():
    # the pose model in the warm container: 4.0 ms alone, 5.7-6.9 ms beside the
    # other three models (threshold 6.0); each window's median on either side
    mon = DriftMonitor(expected_ms=4.0, threshold=1.5, window_s=5.0, min_samples=10,
                       cooldown_s=30.0)
    t, fired, accepted = 0.0, 0, 0
    for k in range(6000):                # 10 minutes at 10 Hz; the level alternates every 8 s
        t += 0.1                         # (without hysteresis: 19 episodes, 0 accepts)
        level = 6.5 if (k // 80) % 2 else 5.7
        if mon.add(level, now=t):
            fired += 1
            if not mon.new_episode:      # what LiveChoice does once a look kept the choice
                mon.accept(mon.last_median_ms)
                accepted += 1
    assert mon.episodes == 1 and accepted == 1 and fired == 2
    assert 5.7 <= mon.expected_ms <= 6.5
    for k in range(1, 100):              # the other models stop: clearly back
        mon.add(4.1, now=t + 0.1 * k)
    assert mon.expected_ms == 4.0 and not mon.in_episode
    t += 10
    hits = [mon.add(6.5, now=t + 0.1 * k) for k in range(1, 60)]
    assert sum(hits) == 1 and mon.new_episode and mon.episodes == 2   # they start again


def test_results_round_trip_and_edp():
    r = CandidateResult('x', p50_ms=20.0, energy_j=0.5, status='ok')
    assert r.edp == pytest.approx(0.01)
    assert CandidateResult.from_dict({**r.to_dict(), 'future_field': 1}) == r
    assert math.isnan(CandidateResult('y').p50_ms)


def test_thread_budget_leaves_out_candidates_that_need_more_cores(tmp_path, mobilenet):
    import cv2
    before = cv2.getNumThreads()
    mgr = _small_manager(tmp_path, ort_threads=[1, 2], variants=['fp16'])
    mgr.cap_threads(1, '2 models share 2 cores in this process')
    try:
        backend, run = mgr.choose(*mobilenet)
        by = {r.backend: r for r in run.results}
        assert by['onnxruntime/cpu/t2'].status == 'unavailable'
        assert 'thread budget 1 per model (2 models share' in by['onnxruntime/cpu/t2'].reason
        assert 'onnxruntime/cpu/t1/fp16' in by             # the variant runs within the cap
        assert backend.name != 'onnxruntime/cpu/t2'
        assert cv2.getNumThreads() == 1                    # OpenCV's pool capped as well
        # the budget is the manager's: another one in the process keeps every candidate
        other = _small_manager(tmp_path / 'other', ort_threads=[1, 2])
        assert not other.over_budget(OrtBackend(intra_op_threads=2))
    finally:
        mgr.cap_threads(0)
        cv2.setNumThreads(before)


def test_variant_chosen_under_a_thread_budget_is_loadable_by_name(tmp_path, mobilenet):
    """A variant's name under the budget is the same wherever the manager lists it."""
    mgr = _small_manager(tmp_path, ort_threads=[1], opencv_targets=[], variants=['fp16'],
                         min_accuracy={'classification': 0.0})
    mgr.cap_threads(1)
    try:
        backend, run = mgr.choose(*mobilenet, force='onnxruntime/cpu/t1/fp16')
        assert backend.name == run.chosen == 'onnxruntime/cpu/t1/fp16'
        assert {b.name for b in mgr.candidates(*mobilenet)} >= {r.backend for r in run.results}
    finally:
        mgr.cap_threads(0)


def test_detector_agreement_punishes_a_frame_that_loses_all_its_objects():
    from edge_infer.backends.measure.agreement import _detection_agreement
    from edge_infer.core.postprocess import Detections

    def dets(boxes, cls):
        b = np.array(boxes, np.float32).reshape(-1, 4)
        return Detections(b, np.full(len(b), 0.8, np.float32), np.array(cls, np.int64))
    crowd = dets([[i * 20, 0, i * 20 + 10, 10] for i in range(20)], [0] * 20)
    lone = dets([[0, 0, 100, 200]], [0])
    f1_box, _ = _detection_agreement([crowd, lone], [crowd, lone])
    assert f1_box == 1.0
    f1, detail = _detection_agreement([crowd, lone], [crowd, dets([], [])])
    assert 2 * 20 / 41 * 0.5 == pytest.approx(f1)           # not 0.98: the photo lost its person
    assert 'every object missed on 1 of 2 frames' in detail


def test_freed_profile_memory_goes_back_to_the_os_on_glibc():
    import platform
    from edge_infer.backends.measure.memory import release_freed_memory
    glibc = platform.libc_ver()[0] == 'glibc'
    assert release_freed_memory() is glibc


def test_classifier_agreement_counts_clear_frames_and_reports_near_ties_apart():
    from edge_infer.backends.measure.agreement import _top1, _top1_agreement
    from edge_infer.core.postprocess import Classes

    def top(ids, scores):
        return Classes(np.array(ids, np.int64), np.array(scores, np.float32))
    # the street frame seen for real: flagpole 0.128, swing 0.126 in the fp32 reference
    tied = top([557, 794, 880], [0.128, 0.126, 0.111])
    near = top([733, 868, 880], [0.31, 0.25, 0.1])      # "pole 0.31", "tripod 0.25"
    clear = top([285, 282, 281], [0.708, 0.156, 0.128])
    flipped = top([868, 733], [0.3, 0.28])
    v = _top1([tied, near, clear], [top([794, 557], [0.13, 0.12]), flipped, clear])
    assert v.value == 1.0 and v.frames == 1
    assert 'same on 1/1 frames with a clear reference top-1' in v.detail
    assert 'near ties (reference top-2 within 0.1) apart: same on 0/2' in v.detail
    # a flip away from a clear winner (0.708 vs 0.156) is a loss
    acc, detail = _top1_agreement([tied, clear], [tied, top([282, 285], [0.5, 0.4])])
    assert acc == 0.0 and 'same on 0/1 frames with a clear' in detail
    # no clear frame at all: every frame counts, a flip within 0.01 excused
    acc, detail = _top1_agreement([tied, near], [top([794, 557], [0.13, 0.12]), flipped])
    assert acc == 0.5 and '+1 flip(s) between classes tied within 0.01' in detail
    acc, _ = _top1_agreement([tied], [top([3], [0.2])])
    assert acc == 0.0


def test_each_verdict_carries_an_interval_that_narrows_with_more_frames():
    from edge_infer.backends.measure.agreement import _detection, _top1, wilson
    from edge_infer.core.postprocess import Classes, Detections
    assert wilson(6, 6)[0] == pytest.approx(0.61, abs=0.01)     # 6 of 6 proves little
    assert wilson(24, 24)[0] == pytest.approx(0.862, abs=0.01)
    low, high = wilson(4, 6)
    assert low < 4 / 6 < high

    def top(i):
        return Classes(np.array([i, 999], np.int64), np.array([0.9, 0.05], np.float32))
    few = _top1([top(1)] * 6, [top(1)] * 5 + [top(2)])
    many = _top1([top(1)] * 24, [top(1)] * 20 + [top(2)] * 4)
    assert few.value == many.value == pytest.approx(5 / 6)
    assert many.high - many.low < few.high - few.low
    assert '95 % interval' in few.detail and 'over 6 clear frames' in few.detail

    def dets(n):
        b = np.array([[i * 20, 0, i * 20 + 10, 10] for i in range(n)], np.float32).reshape(-1, 4)
        return Detections(b, np.full(n, 0.8, np.float32), np.zeros(n, np.int64))
    ref = [dets(3)] * 10
    v = _detection(ref, [dets(3)] * 8 + [dets(0)] * 2)
    assert v.low < v.value < v.high and v.frames == 10
    assert _detection(ref, ref)[:3] == (1.0, 1.0, 1.0)
    assert _detection(ref, [dets(3)] * 8 + [dets(0)] * 2) == v     # seeded: the same each time


class _SlowSession(Session):
    def __init__(self, inner, delay_s):
        self.inner, self.delay_s = inner, delay_s
        self.calls = 0

    def run(self, tensor):
        self.calls += 1
        time.sleep(self.delay_s)
        return self.inner.run(tensor)

    def close(self):
        self.inner.close()


class _SlowBackend(OrtBackend):
    def __init__(self, delay_s):
        super().__init__(intra_op_threads=1)
        self.name = 'test/slow'
        self.delay_s = delay_s
        self.session = None

    def open_session(self, model_path, strict=False, input_spec=None):
        self.session = _SlowSession(super().open_session(model_path, strict, input_spec),
                                    self.delay_s)
        return self.session


def test_a_slow_candidate_is_judged_on_fewer_frames_and_its_interval_says_so(mobilenet):
    spec, path = mobilenet
    frames, what = calibration_frames(8)
    ref = Reference(spec, path, frames, what)
    fast = profile_candidate(OrtBackend(intra_op_threads=1), spec, path, ref, budget_s=0.1,
                             judge_min_frames=3, judge_s=5.0)
    slow = _SlowBackend(0.06)
    res = profile_candidate(slow, spec, path, ref, budget_s=0.1, warmup=1, min_runs=1,
                            judge_min_frames=3, judge_s=0.1)
    assert slow.session.calls - 1 - res.runs == 3       # 3 of the 8 frames judged
    assert 'judged on 3 of 8 frames' in res.accuracy_detail
    assert 'judged on' not in fast.accuracy_detail
    assert res.status == fast.status == 'ok'
    assert res.accuracy_high - res.accuracy_low >= fast.accuracy_high - fast.accuracy_low


def test_a_clearly_slower_candidate_is_cut_short_but_still_accuracy_checked(mobilenet):
    spec, path = mobilenet
    frames, what = calibration_frames(2)
    ref = Reference(spec, path, frames, what)
    slow = _SlowBackend(0.05)
    res = profile_candidate(slow, spec, path, ref, budget_s=2.0, warmup=1, min_runs=5,
                            cut_ms=10.0, cut_runs=3)
    assert res.cut_short and res.runs == 3 and res.p50_ms > 50
    assert slow.session.calls == 2 + 1 + 3       # accuracy frames, warm-up, 3 timed runs
    assert res.status == 'ok' and res.accuracy == 1.0
    assert 'cut short after 3 runs' in res.reason and res.max_ms >= res.p50_ms
    # the same candidate with no faster one seen so far is measured in full
    full = profile_candidate(_SlowBackend(0.05), spec, path, ref, budget_s=0.4, warmup=1,
                             min_runs=5)
    assert not full.cut_short and full.runs >= 5
