# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A cold start settles on the likely winners first and completes the profile after.

The prior and the settle set on a profile cache written by the test; then
real models on real backends (ONNX Runtime, OpenCV DNN, an fp16 variant)
through LiveChoice with an empty cache, as on a robot's first start.
"""

import threading
import time

from edge_infer import paths
from edge_infer.backends.live.choice import LiveChoice, LiveSettings
from edge_infer.backends.manager import BackendManager
from edge_infer.backends.measure.cache import ProfileCache
from edge_infer.backends.measure.profiling import calibration_frames
from edge_infer.backends.measure.settle import board_prior, settle_set, SettleQueue
from edge_infer.core.registry import load_registry
import pytest

BOARD = {'cpu': 'test'}


def _put(cache, model, backend, ms, status='ok', board=BOARD, lasting=False, loaded=False):
    parts = {'kind': 'profile', 'model': model, 'backend': backend, 'board': board}
    if loaded:      # figures taken under foreign load: kept apart from the board's profile
        parts['loaded'] = True
    value = {'backend': backend, 'status': status, 'p50_ms': ms, 'preprocess_ms': 0.0,
             'lasting': lasting}
    cache.put(f'{model}/{backend}/{loaded}', value, parts)


def test_the_prior_is_each_candidates_distance_from_the_best_on_other_models(tmp_path):
    cache = ProfileCache(tmp_path / 'c.json')
    _put(cache, 'a', 'fast', 2.0)
    _put(cache, 'a', 'slow', 8.0)
    _put(cache, 'b', 'fast', 3.0)
    _put(cache, 'b', 'slow', 3.0 * 2.0)
    _put(cache, 'c', 'slow', 1.0, board={'cpu': 'other'})   # another board says nothing
    _put(cache, 'me', 'slow', 1.0)                       # nor the model itself
    _put(cache, 'b', 'broken', float('nan'), status='failed')
    prior = board_prior(cache, BOARD, 'me')
    assert prior['fast'] == pytest.approx(1.0)
    assert prior['slow'] == pytest.approx((4.0 * 2.0) ** 0.5)     # geometric mean
    assert 'broken' not in prior
    # rejected by b's own accuracy check: its speed still tells (b's best is now 1.5 ms)
    _put(cache, 'b', 'reduced', 1.5, status='rejected')
    prior = board_prior(cache, BOARD, 'me')
    assert prior['reduced'] == pytest.approx(1.0)
    assert prior['fast'] == pytest.approx((1.0 * 2.0) ** 0.5)


def test_figures_taken_under_load_inform_the_prior_where_no_quiet_ones_exist(tmp_path):
    """A robot is never quiet: a busy first start still gives the next models a prior."""
    cache = ProfileCache(tmp_path / 'c.json')
    _put(cache, 'a', 'fast', 4.0, loaded=True)
    _put(cache, 'a', 'slow', 20.0, loaded=True)
    assert board_prior(cache, BOARD, 'me') == pytest.approx({'fast': 1.0, 'slow': 5.0})
    _put(cache, 'a', 'slow', 8.0)       # a quiet figure wins over the loaded one
    _put(cache, 'a', 'fast', 2.0)
    assert board_prior(cache, BOARD, 'me') == pytest.approx({'fast': 1.0, 'slow': 4.0})


class _Cand:
    def __init__(self, name, variant=False, ok=True, precision='fp32'):
        self.name, self._ok, self.precision = name, ok, precision
        self.base = object() if variant else None

    def available(self):
        return self._ok, '' if self._ok else 'absent'


class _Mgr:
    def __init__(self, cache, names):
        self.cache, self.board, self._cands = cache, BOARD, names

    def candidates(self, spec, path):
        return self._cands

    def over_budget(self, b):
        return 'too many threads' if b.name.endswith('/t2') else ''


def test_the_settle_set_is_the_likely_winners_and_what_the_prior_does_not_know(tmp_path):
    spec = load_registry(paths.config_dir() / 'models.yaml')['mobilenet_v2']
    cache = ProfileCache(tmp_path / 'c.json')
    cands = [_Cand(n) for n in ('ov/t1', 'ov/t1+pre', 'ort/t1', 'blas', 'ov/t2', 'new/lib')]
    cands += [_Cand('ov/t1/int8', variant=True), _Cand('absent', ok=False)]
    mgr = _Mgr(cache, cands)
    # no prior on this board: every candidate that needs no file made first
    assert settle_set(mgr, spec, cands) == ['ov/t1', 'ov/t1+pre', 'ort/t1', 'blas', 'new/lib']
    times_by_model = {'nanodet': (2.0, 2.2, 5.0, 40.0), 'selfie': (1.0, 1.0, 2.5, 30.0)}
    for model, times in times_by_model.items():
        for name, ms in zip(('ov/t1', 'ov/t1+pre', 'ort/t1', 'blas'), times):
            _put(cache, model, name, ms)
    # the likely winners (within 1.5x elsewhere), best first, and the unknown library
    assert settle_set(mgr, spec, cands) == ['ov/t1', 'ov/t1+pre', 'new/lib']
    assert settle_set(mgr, spec, cands, limit=1) == ['ov/t1', 'new/lib']


def test_likely_winners_all_at_a_reduced_precision_settle_beside_the_best_fp32(tmp_path):
    spec = load_registry(paths.config_dir() / 'models.yaml')['movenet_lightning']
    cache = ProfileCache(tmp_path / 'c.json')
    cands = [_Cand('ov/t1/bf16', precision='bf16'), _Cand('ov/t1/bf16+pre', precision='bf16'),
             _Cand('ov/t1'), _Cand('ort/t1')]
    mgr = _Mgr(cache, cands)
    for model in ('nanodet', 'mobilenet_v2'):     # bf16 wins elsewhere by 2x
        for name, ms in zip(('ov/t1/bf16', 'ov/t1/bf16+pre', 'ov/t1', 'ort/t1'),
                            (2.1, 2.0, 4.0, 5.0)):
            _put(cache, model, name, ms)
    # this model's accuracy check may reject bf16: the likeliest fp32 one settles too
    assert settle_set(mgr, spec, cands) == ['ov/t1/bf16+pre', 'ov/t1/bf16', 'ov/t1']
    # an fp32 one among the likely winners: nothing added
    assert settle_set(mgr, spec, cands, factor=2.5, limit=3) == [
        'ov/t1/bf16+pre', 'ov/t1/bf16', 'ov/t1']


def test_a_library_new_here_settles_unless_it_could_not_run_another_model(tmp_path):
    spec = load_registry(paths.config_dir() / 'models.yaml')['nanodet']
    cache = ProfileCache(tmp_path / 'c.json')
    cands = [_Cand('ov/t1'), _Cand('ncnn/vulkan'), _Cand('new/lib')]
    mgr = _Mgr(cache, cands)
    _put(cache, 'movenet_lightning', 'ov/t1', 2.0)
    _put(cache, 'movenet_lightning', 'ncnn/vulkan', float('nan'), status='failed', lasting=True)
    assert settle_set(mgr, spec, cands) == ['ov/t1', 'new/lib']     # ncnn: the completion


def test_a_completion_waits_until_no_model_settles():
    queue, cancel = SettleQueue(), threading.Event()
    a, b = object(), object()
    queue.enter(a, 'nanodet')
    queue.enter(b, 'selfie')
    waited = []
    waiter = threading.Thread(target=lambda: waited.append(queue.wait_settled(cancel)))
    waiter.start()
    queue.leave(a)
    waiter.join(0.3)
    assert waiter.is_alive() and queue.settling() == ['selfie']
    queue.leave(b)
    queue.leave(b)          # idempotent
    waiter.join(10)
    assert waited == [True]
    queue.enter(a, 'nanodet')
    cancel.set()
    assert queue.wait_settled(cancel) is False


def test_the_lightest_model_settles_first():
    """The first model measures every library: a light one does it in seconds."""
    queue, cancel = SettleQueue(), threading.Event()
    heavy, light, lone = object(), object(), object()
    queue.enter(heavy, 'nanodet', 3.8e6)
    queue.enter(light, 'selfie', 0.4e6)
    assert queue.wait_turn(light, cancel) is True
    turns = []
    waiter = threading.Thread(target=lambda: turns.append(queue.wait_turn(heavy, cancel)))
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive() and turns == []       # the lighter one settles first
    queue.leave(light)
    waiter.join(10)
    assert turns == [True]
    assert queue.wait_turn(lone, cancel) is True    # not settling: nothing to wait for
    queue.enter(light, 'selfie', 0.4e6)
    cancel.set()
    assert queue.wait_turn(heavy, cancel) is False


def test_a_software_vulkan_device_waits_for_the_completion(tmp_path):
    """Lavapipe is the CPU in disguise: 5-6 s per NanoDet candidate, never a winner here."""
    from edge_infer.backends.measure.settle import software_gpu

    class _Cand:
        def __init__(self, name, device, gpu_name=''):
            self.name, self.device, self.gpu_name = name, device, gpu_name

        def available(self):
            return True, ''
    cands = [_Cand('ncnn/cpu/t1', 'cpu'),
             _Cand('ncnn/vulkan:llvmpipe', 'vulkan:llvmpipe', 'llvmpipe (LLVM 15.0.6)'),
             _Cand('ncnn/vulkan:mali', 'vulkan:mali', 'Mali-G52')]
    assert [software_gpu(c) for c in cands] == [False, True, False]
    mgr = BackendManager(tmp_path, log=lambda s: None)
    assert settle_set(mgr, load_registry(paths.config_dir() / 'models.yaml')['selfie'],
                      cands) == ['ncnn/cpu/t1', 'ncnn/vulkan:mali']


@pytest.fixture(scope='module')
def models(data_home):
    reg = load_registry(paths.config_dir() / 'models.yaml')
    return {n: (reg[n], data_home / 'models' / reg[n].file) for n in ('mobilenet_v2', 'selfie')}


def _manager(cache_dir):
    config = {'ort_threads': [1, 2], 'ort_providers_always_listed': [],
              'opencv_targets': ['cpu'], 'blas': False, 'variants': ['fp16'],
              'budget_s': 0.1, 'warmup': 1, 'min_runs': 3, 'calibration_frames': 2,
              'openvino_threads': [], 'ncnn_threads': [], 'ncnn_vulkan': False,
              'torch_precisions': [],
              'quiet_foreign_cores': 99.0}
    return BackendManager(cache_dir, config=config, log=lambda s: None)


@pytest.mark.slow      # the not-slow subset keeps under 3 min (202 s here at 06d0517)
def test_a_completion_screens_what_the_board_showed_cannot_win(tmp_path, models):
    """A candidate 3x the best elsewhere is cached as screened: the next start measures nothing."""
    mgr = _manager(tmp_path)
    spec, path = models['selfie']
    mgr.choose(spec, path)          # the board's first model: every candidate measured
    names = [b.name for b in mgr.candidates(spec, path) if not mgr.over_budget(b)]
    slow = 'opencv-dnn/cpu'
    for name in names:      # what the board showed: OpenCV 5x the best on two more models
        for other in ('a', 'b'):
            _put(mgr.cache, other, name, 5.0 if name == slow else 1.0, board=mgr.board)
    spec, path = models['mobilenet_v2']
    run = mgr.profile(spec, path, screen=3.0)
    res = {r.backend: r for r in run.results}
    assert res[slow].status == 'screened' and 'the best on the other models' in res[slow].reason
    assert all(res[n].status in ('ok', 'rejected') for n in names if n != slow)
    again = mgr.profile(spec, path, measure=False)      # the next start
    assert not [r.backend for r in again.results if r.status == 'unmeasured']
    assert {r.backend: r.status for r in again.results}[slow] == 'screened'
    chosen, _ = mgr.choose(spec, path)
    assert chosen.name != slow
    # a backend the user forces is measured, not refused for a completion's guess
    forced, run = mgr.choose(spec, path, force=slow)
    res = {r.backend: r for r in run.results}
    assert forced.name == slow and res[slow].status == 'ok' and res[slow].frame_ms > 0
    assert {r.backend: r.status for r in mgr.profile(spec, path, measure=False).results
            }[slow] == 'ok'     # the measurement replaced the guess in the cache


def test_a_settle_report_lists_what_the_cache_measured_outside_the_settle_set(tmp_path, models):
    """A candidate measured before (it may have served provisionally) is not 'unmeasured'."""
    mgr = _manager(tmp_path)
    spec, path = models['mobilenet_v2']
    mgr.profile(spec, path, only=['opencv-dnn/cpu'])
    run = mgr.profile(spec, path, only=['onnxruntime/cpu/t1'], others='later')
    res = {r.backend: r for r in run.results}
    assert res['opencv-dnn/cpu'].status == 'ok' and run.from_cache['opencv-dnn/cpu']
    assert res['onnxruntime/cpu/t1'].status == 'ok'
    assert {r.status for n, r in res.items() if n not in ('opencv-dnn/cpu',
                                                          'onnxruntime/cpu/t1')} <= {
        'unmeasured', 'unavailable'}
    # the choice weighs both measured ones
    chosen, run = mgr.choose(spec, path, only=['onnxruntime/cpu/t1'])
    ok = {r.backend: r.frame_ms for r in run.results if r.status == 'ok'}
    assert set(ok) == {'opencv-dnn/cpu', 'onnxruntime/cpu/t1'}
    assert ok[chosen.name] == min(ok.values())


@pytest.mark.slow
def test_a_cold_start_settles_on_the_likely_ones_then_completes(tmp_path, models):
    mgr = _manager(tmp_path)
    spec, path = models['selfie']
    mgr.choose(spec, path)      # another model of this board measured: a prior
    spec, path = models['mobilenet_v2']
    frames = calibration_frames(2)[0]
    reports, lines = [], []
    live = LiveChoice(mgr, spec, path, settings=LiveSettings(duty=0, profile_after_s=0.0),
                      log=lines.append,
                      report=lambda run, trigger: reports.append(
                          (trigger, {r.backend: r.status for r in run.results})))
    try:
        live.start()
        assert live.provisional and mgr.settle_queue.settling() == ['mobilenet_v2']
        deadline = time.monotonic() + 120
        tick = threading.Event()
        k = 0
        startup = live.selector.startup
        while startup.completion_due or live.provisional or startup.profiling:
            assert time.monotonic() < deadline, lines
            live.infer(frames[k % 2])
            k += 1
            tick.wait(0.02)
        settled = next(ln for ln in lines if ln.startswith('profile done in'))
        assert 'the likely ones first' in settled, lines
        # then the rest, once no model settles: one line, and a report with every candidate
        done = [ln for ln in lines if ln.startswith('profile completed in')]
        assert len(done) == 1, lines
        assert [t for t, _ in reports] == ['provisional', 'profiled', 'profiled']
        # the settled report names every candidate: those still to come as unmeasured
        every = {b.name for b in mgr.candidates(spec, path)}
        settled_report = reports[1][1]
        assert set(settled_report) == every, settled_report
        assert 'unmeasured' in settled_report.values(), settled_report
        assert set(reports[2][1]) == every and 'unmeasured' not in reports[2][1].values()
        assert mgr.settle_queue.settling() == []
        # the full profile is there now: the fp16 file measured too
        assert any(r.backend.endswith('/fp16') and r.status in ('ok', 'rejected')
                   for r in live.run.results), [(r.backend, r.status) for r in live.run.results]
        # and the choice is the blocking profile's (or within 5 % of its frame cost)
        _, blocking = mgr.choose(spec, path)
        full = {r.backend: r for r in blocking.results}
        assert full[live.backend_name].frame_ms <= 1.05 * full[blocking.chosen].frame_ms
    finally:
        live.close()


def test_a_profile_holds_only_the_sessions_that_can_still_lead():
    """Screened sessions that cannot lead are closed at once (nanodet: 1270 -> 646 MB peak)."""
    from edge_infer.backends.measure.memory import keep_leaders
    from edge_infer.backends.measure.profiling import CandidateResult

    class Sess:
        closed = False

        def close(self):
            self.closed = True
    results = {n: CandidateResult(n, status='ok', p50_ms=ms, runs=5)
               for n, ms in [('a', 10.0), ('b', 12.0), ('c', 15.0), ('d', 30.0), ('e', 11.0),
                             ('f', 11.5)]}
    results['r'] = CandidateResult('r', status='rejected', p50_ms=1.0, runs=5)
    sessions = {n: Sess() for n in results}
    held = dict(sessions)
    assert keep_leaders(sessions, results, best_ms=10.0, lead_factor=1.6, max_leaders=4)
    # d is over 1.6x the best, r failed the accuracy check, c is fifth of the rest
    assert sorted(sessions) == ['a', 'b', 'e', 'f']
    assert [n for n, s in held.items() if s.closed] == ['c', 'd', 'r']
    assert not keep_leaders(sessions, results, best_ms=10.0, lead_factor=1.6, max_leaders=4)
