# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A first start serves at once on a provisional backend, then takes the measured choice.

Real models, real backends (ONNX Runtime, OpenCV DNN), a real profile in the
background; an empty cache stands for a robot's first start.
"""

import threading
import time

from edge_infer import paths
from edge_infer.backends.live.choice import LiveChoice, LiveSettings
from edge_infer.backends.manager import BackendManager
from edge_infer.backends.measure.gate import ComputeGate
from edge_infer.backends.measure.profiling import calibration_frames
from edge_infer.core.registry import load_registry
from edge_infer.testing.config import fast_cpu
import pytest


@pytest.fixture(scope='module')
def mobilenet(data_home):
    spec = load_registry(paths.config_dir() / 'models.yaml')['mobilenet_v2']
    return spec, data_home / 'models' / spec.file


@pytest.fixture(scope='module')
def frames():
    return calibration_frames(2)[0]


def _manager(cache_dir, **cfg):
    return BackendManager(cache_dir, config=fast_cpu(**{'ort_threads': [1, 2], **cfg}),
                          log=lambda s: None)


def _live(manager, spec, path, reports, **settings):
    return LiveChoice(manager, spec, path, settings=LiveSettings(duty=0, **settings),
                      log=lambda s: None,
                      report=lambda run, trigger: reports.append((trigger, run.chosen)))


def _serve_until_settled(live, frames, timeout=120.0):
    """Serve frames at a camera's pace until the background profile is applied."""
    served = []
    deadline = time.monotonic() + timeout
    camera = threading.Event()      # never set: wait() paces the frames
    while live.provisional:
        assert time.monotonic() < deadline, 'the background profile never settled'
        served.append(live.infer(frames[len(served) % len(frames)]).backend)
        camera.wait(0.02)
    return served


def test_a_first_start_serves_at_once_then_switches_to_the_measured_choice(
        tmp_path, mobilenet, frames):
    spec, path = mobilenet
    reports = []
    live = _live(_manager(tmp_path), spec, path, reports)
    try:
        run = live.start()
        # nothing measured: the first of start_order, and every candidate is still to measure
        assert live.provisional and live.backend_name == 'onnxruntime/cpu/t2'
        assert run.chosen == 'onnxruntime/cpu/t2' and 'start_order' in run.why
        assert {r.status for r in run.results} <= {'unmeasured', 'unavailable'}
        assert reports == [('provisional', 'onnxruntime/cpu/t2')]
        first = live.infer(frames[0])     # a result before any candidate was measured
        assert first.backend == 'onnxruntime/cpu/t2' and len(first.output) > 0
        served = _serve_until_settled(live, frames)
        assert set(served) == {'onnxruntime/cpu/t2'}
        chosen = live.run.chosen
        assert [t for t, _ in reports] == ['provisional', 'profiled']
        assert reports[-1][1] == chosen and live.backend_name == chosen
        assert live.infer(frames[0]).backend == chosen
        assert live.switches[-1]['trigger'] == 'profiled'
        assert live.settled_s > 0
    finally:
        live.close()
    # the profile went into the cache: the next start chooses from it, no provisional step
    reports2 = []
    again = _live(_manager(tmp_path), spec, path, reports2)
    try:
        run = again.start()
        assert not again.provisional and reports2 == [('configure', chosen)]
        assert all(run.from_cache[r.backend] for r in run.results if r.status == 'ok')
    finally:
        again.close()


@pytest.mark.slow
def test_the_settled_choice_is_the_one_a_blocking_profile_makes(tmp_path, mobilenet, frames):
    """Same candidates, same cache rules: the provisional path changes when, not what."""
    spec, path = mobilenet
    reports = []
    live = _live(_manager(tmp_path / 'a'), spec, path, reports)
    try:
        live.start()
        _serve_until_settled(live, frames)
        settled = {r.backend: r.status for r in live.run.results}
    finally:
        live.close()
    blocking = _live(_manager(tmp_path / 'b'), spec, path, [], provisional=False)
    try:
        run = blocking.start()
        assert not blocking.provisional
        # the same candidates measured, with the same verdicts (the winner between
        # two close ones may differ with the machine's noise: not asserted)
        assert {r.backend: r.status for r in run.results} == settled
    finally:
        blocking.close()


def test_a_partly_cached_profile_starts_on_the_cached_choice(tmp_path, mobilenet, frames):
    """A new library on the board: the old choice serves while only the new one is timed."""
    spec, path = mobilenet
    small = _manager(tmp_path, ort_threads=[1], opencv_targets=[])
    _, cached = small.choose(spec, path)
    assert cached.chosen == 'onnxruntime/cpu/t1'
    reports = []
    live = _live(_manager(tmp_path), spec, path, reports)
    try:
        run = live.start()
        assert live.provisional and run.chosen == 'onnxruntime/cpu/t1'
        assert "cached profile's choice" in run.why and '2 candidate(s) not measured' in run.why
        by = {r.backend: r.status for r in run.results}
        assert by == {'onnxruntime/cpu/t1': 'ok', 'onnxruntime/cpu/t2': 'unmeasured',
                      'opencv-dnn/cpu': 'unmeasured'}
        _serve_until_settled(live, frames)
        assert {r.status for r in live.run.results} == {'ok'}
        assert live.run.from_cache['onnxruntime/cpu/t1'] and \
            not live.run.from_cache['opencv-dnn/cpu']
    finally:
        live.close()


def test_provisional_off_profiles_before_serving(tmp_path, mobilenet):
    spec, path = mobilenet
    reports = []
    live = _live(_manager(tmp_path), spec, path, reports, provisional=False)
    try:
        run = live.start()
        assert not live.provisional and [t for t, _ in reports] == ['configure']
        assert all(r.status == 'ok' for r in run.results)
    finally:
        live.close()


def test_closing_during_the_background_profile_stops_it_without_a_switch(
        tmp_path, mobilenet, frames):
    spec, path = mobilenet
    reports = []
    live = _live(_manager(tmp_path, budget_s=5.0), spec, path, reports)
    live.start()
    live.infer(frames[0])
    live.close()        # cancels the profile and waits for its thread
    assert [t for t, _ in reports] == ['provisional']
    assert not any(t.is_alive() for t in live.background.threads)


def test_gate_frames_share_it_a_timed_run_holds_it_alone():
    gate = ComputeGate()
    order = []
    in_frames = threading.Barrier(2)        # two frames inside at once: shared
    release = threading.Event()

    def frame(name, meet=True):
        with gate.shared():
            order.append(f'{name} in')
            if meet:
                in_frames.wait(10)
                release.wait(10)
            order.append(f'{name} out')

    def timed_run():
        with gate.exclusive():
            order.append('run')

    frames = [threading.Thread(target=frame, args=(n,)) for n in ('a', 'b')]
    for t in frames:
        t.start()
    while order.count('a in') + order.count('b in') < 2:
        threading.Event().wait(0.001)
    runner = threading.Thread(target=timed_run)
    runner.start()
    # the timed run waits for the frames in flight; a new frame waits behind it
    while not gate._waiting:
        threading.Event().wait(0.001)
    late = threading.Thread(target=frame, args=('c', False))
    late.start()
    late.join(0.3)      # it would be in within microseconds if the gate let it
    assert 'run' not in order and 'c in' not in order
    release.set()
    for t in frames + [runner, late]:
        t.join(10)
    assert order.index('run') > max(order.index('a out'), order.index('b out'))
    assert order.index('c in') > order.index('run')


def test_a_profile_stopped_by_a_deactivation_goes_on_when_resumed(tmp_path, mobilenet, frames):
    spec, path = mobilenet
    reports = []
    live = _live(_manager(tmp_path), spec, path, reports)
    try:
        live.start()
        live.join()         # what a deactivation does: the profile stops
        assert live.provisional and [t for t, _ in reports] == ['provisional']
        live.resume()       # activated again
        _serve_until_settled(live, frames)
        assert [t for t, _ in reports] == ['provisional', 'profiled']
        # the hand-over ends the provisional phase from the profile thread, which
        # then returns: wait for it (a condition), then check a resume starts none
        ending = [t for t in live.background.threads if t.name.endswith('-profile')]
        for t in ending:
            t.join(30)
        assert not any(t.is_alive() for t in ending)
        live.resume()       # settled: nothing to resume
        assert not any(t.is_alive() and t.name.endswith('-profile')
                       for t in live.background.threads)
    finally:
        live.close()


def test_a_profile_waiting_for_another_models_profile_can_be_cancelled(tmp_path, mobilenet):
    """Two detectors in a container profile one at a time; a shutdown must not wait for both."""
    from edge_infer.core.backend import BackendError
    spec, path = mobilenet
    mgr = _manager(tmp_path)
    cancel, outcome = threading.Event(), []

    def second():
        try:
            mgr.choose(spec, path, cancel=cancel)
            outcome.append('profiled')
        except BackendError as exc:
            outcome.append(str(exc))
    with mgr._lock:         # the first model's profile holds the manager
        waiter = threading.Thread(target=second)
        waiter.start()
        waiter.join(0.3)
        assert waiter.is_alive() and not outcome     # waiting its turn
        cancel.set()
        waiter.join(10)
        assert not waiter.is_alive(), 'the cancelled profile still waits for the lock'
    assert outcome == ["model 'mobilenet_v2': profile cancelled"]


@pytest.mark.slow      # the not-slow subset keeps under 3 min (202 s here at 06d0517)
def test_a_stop_during_a_measurement_does_not_wait_and_a_resume_goes_on(
        tmp_path, mobilenet, frames):
    """A candidate's load cannot be interrupted (ncnn Vulkan on lavapipe: 32 s): never wait."""
    from edge_infer.backends.libs.ort import OrtCpuBackend
    from edge_infer.backends.live.background import still_running
    spec, path = mobilenet
    entered, release = threading.Event(), threading.Event()

    class Blocking(OrtCpuBackend):
        """ONNX Runtime whose load blocks, deaf to any cancel, until the test releases it."""

        def __init__(self):
            super().__init__(1)
            self.name = 'onnxruntime/cpu/t1/blocking'

        def open_session(self, model_path, strict=False, input_spec=None):
            entered.set()
            release.wait(60)
            return super().open_session(model_path, strict, input_spec)
    mgr = _manager(tmp_path)
    listed = mgr.candidates
    mgr.candidates = lambda spec=None, model_path=None: listed(spec, model_path) + [Blocking()]
    reports = []
    live = _live(mgr, spec, path, reports, profile_after_s=0.0)
    try:
        live.start()
        live.infer(frames[0])
        assert entered.wait(60), 'the profile never reached the blocking candidate'
        t0 = time.monotonic()
        left = live.join(timeout=0.5)       # a deactivation or a stop
        assert time.monotonic() - t0 < 2.0
        assert left == ['mobilenet_v2-profile'] and left[0] in still_running()
        live.resume()       # activated again while that thread is still inside the load
        release.set()
        _serve_until_settled(live, frames)
        assert [t for t, _ in reports] == ['provisional', 'profiled']
        assert 'onnxruntime/cpu/t1/blocking' in {r.backend for r in live.run.results}
    finally:
        release.set()
        assert live.close() == []
    assert not [n for n in still_running() if n.startswith('mobilenet_v2-')]
