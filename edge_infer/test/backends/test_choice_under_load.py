# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A backend choice load cannot fool: interleaved profiling, load records, tail guard, cache."""

import multiprocessing
import time

from edge_infer import paths
from edge_infer.backends.libs.ort import OrtBackend
from edge_infer.backends.manager import BackendManager
from edge_infer.backends.measure.load_probe import LoadProbe
from edge_infer.backends.measure.profiling import (calibration_frames, CandidateResult, interleave,
                                                   Reference)
from edge_infer.backends.measure.selection import select
from edge_infer.core.registry import load_registry
import numpy as np
import pytest


def _burn(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


class Burners:
    """Foreign CPU load: N processes, each spinning one core."""

    def __init__(self, n: int, seconds: float = 60.0):
        ctx = multiprocessing.get_context('spawn')
        self.procs = [ctx.Process(target=_burn, args=(seconds,), daemon=True)
                      for _ in range(n)]

    def __enter__(self):
        for p in self.procs:
            p.start()
        time.sleep(0.3)
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.terminate()
            p.join(5)


@pytest.fixture(scope='module')
def mobilenet(data_home):
    spec = load_registry(paths.config_dir() / 'models.yaml')['mobilenet_v2']
    return spec, data_home / 'models' / spec.file


def test_the_load_probe_sees_another_process_spinning_a_core():
    with Burners(1):
        probe = LoadProbe().start()
        time.sleep(1.0)
        cond = probe.stop()
    assert 0.6 <= cond['foreign_cores'] <= 2.05, cond
    assert cond['window_s'] >= 0.9


def test_our_own_child_processes_are_not_foreign_load():
    """The int8 quantizer runs in a child: its CPU time is the profile's own."""
    import subprocess
    import sys
    probe = LoadProbe().start()
    subprocess.run([sys.executable, '-c', 'import time\nt = time.process_time()\n'
                    'while time.process_time() - t < 1.0: pass'], check=True)
    cond = probe.stop()
    assert cond['window_s'] >= 0.9
    # the child's busy second is ours (the window stays under 2 s unless two more
    # processes keep both cores busy); foreign_cores is what others used, and a
    # test beside this one on a 2-core machine may use a whole core of it
    assert cond['own_cores'] >= 0.5, cond


class _Delayed:
    def __init__(self, inner, delay_s):
        self.inner, self.delay_s = inner, delay_s

    def run(self, x):
        time.sleep(self.delay_s)
        return self.inner.run(x)

    def close(self):
        self.inner.close()


def test_interleaved_rounds_settle_the_ranking_and_replace_the_alone_figures(mobilenet):
    spec, path = mobilenet
    frames, what = calibration_frames(1)
    ref = Reference(spec, path, frames, what)
    fast = OrtBackend(intra_op_threads=1).open_session(path)
    slow = _Delayed(OrtBackend(intra_op_threads=1).open_session(path), 0.004)
    results = {'fast': CandidateResult('fast', status='ok', p50_ms=99.0),
               'slow': CandidateResult('slow', status='ok', p50_ms=1.0)}
    try:
        ranking = interleave({'slow': slow, 'fast': fast}, results, ref.inputs[0][0],
                             budget_s=20.0, runs_per_round=3, min_rounds=4, confidence=0.8)
    finally:
        fast.close()
        slow.close()
    assert ranking.leader == 'fast' and ranking.runner_up == 'slow'
    assert ranking.settled and ranking.wins >= 0.8 and ranking.rounds >= 4
    assert 'settled' in ranking.describe()
    # the figures now come from the rounds, not from what was passed in
    # (passed in: fast 99, slow 1). Slow sleeps 4 ms each run, whatever the load; the
    # gap between the two medians is not asserted: under load it shrank to 2.5 ms
    assert results['fast'].p50_ms < results['slow'].p50_ms
    assert results['slow'].p50_ms >= 4.0 and results['fast'].p50_ms < 99.0
    assert results['fast'].rounds == ranking.rounds == results['slow'].rounds


def _res(name, p50, p99, runs=100):
    return CandidateResult(name, status='ok', p50_ms=p50, p90_ms=p50 * 1.1, p99_ms=p99,
                           runs=runs, accuracy=1.0)


def test_a_candidate_that_stalls_loses_to_a_steady_one_and_the_report_says_why():
    stalling = _res('ncnn/cpu/t2', 8.0, 400.0)       # OpenMP stalls: p99 50x p50
    steady = _res('onnxruntime/cpu/t2', 9.0, 12.0)
    chosen, why = select([stalling, steady], tail_guard=4.0)
    assert chosen is steady
    assert 'tail guard' in why and 'ncnn/cpu/t2 p99 400.0 ms = 50.0x p50' in why
    # without the guard the median alone decides
    chosen, why = select([stalling, steady], tail_guard=0.0)
    assert chosen is stalling and 'best p50 latency' in why
    # a chosen percentile decides instead of the median, and says so
    chosen, why = select([stalling, steady], latency_percentile=99)
    assert chosen is steady and 'best p99 latency' in why
    # when every candidate stalls, the figure ranks them all
    chosen, _ = select([stalling, _res('x', 9.0, 100.0)], tail_guard=4.0)
    assert chosen is stalling
    with pytest.raises(ValueError, match='latency_percentile'):
        select([steady], latency_percentile=75)


def _manager(cache_dir, **cfg):
    config = {'ort_threads': [1, 2], 'ort_providers_always_listed': [],
              'opencv_targets': [], 'blas': False, 'variants': [], 'openvino_threads': [],
              'ncnn_threads': [], 'ncnn_vulkan': False,
              'torch_precisions': [], 'budget_s': 0.3, 'screen_s': 0.2,
              'warmup': 1, 'min_runs': 3, 'calibration_frames': 2, 'min_rounds': 2,
              'quiet_foreign_cores': 0.9}
    config.update(cfg)
    return BackendManager(cache_dir, config=config, log=lambda s: None)


@pytest.mark.slow      # the not-slow subset keeps under 3 min (202 s here at 06d0517)
def test_a_measurement_under_foreign_load_never_becomes_the_boards_profile(tmp_path,
                                                                           mobilenet):
    """The cache-poisoning scenario, with two real processes spinning both cores."""
    spec, path = mobilenet
    # the board's profile, measured with the threshold out of reach (treated as quiet)
    quiet = _manager(tmp_path, quiet_foreign_cores=99.0)
    _, run0 = quiet.choose(spec, path)
    assert not run0.notes and run0.conditions
    board = {r.backend: r.p50_ms for r in run0.results}
    with Burners(2):
        loaded = _manager(tmp_path)
        # a run-time re-evaluation under load: used in memory, never written
        rerun = loaded.profile(spec, path, use_cache=False, persist=False)
        assert rerun.conditions['foreign_cores'] > 0.9, rerun.conditions
        assert not rerun.notes
        # a start that measures under load says so and keeps it apart
        _, run1 = loaded.choose(spec, path, use_cache=False)
        assert any('NOT stored as the board' in n for n in run1.notes), run1.notes
        assert 'NOT stored' in run1.why
    # a restart reads the quiet profile: the same figures as before the load
    restart = _manager(tmp_path)
    _, run2 = restart.choose(spec, path)
    assert all(run2.from_cache.values()) and not run2.notes
    assert {r.backend: r.p50_ms for r in run2.results} == board
    assert run2.chosen == run0.chosen


def test_with_no_quiet_profile_the_loaded_entry_is_used_and_said_so(tmp_path, mobilenet):
    spec, path = mobilenet
    with Burners(2):
        _, run1 = _manager(tmp_path, ort_threads=[1]).choose(spec, path)
    assert any('NOT stored' in n for n in run1.notes)
    _, run2 = _manager(tmp_path, ort_threads=[1]).choose(spec, path)
    assert all(run2.from_cache.values())
    assert any('a loaded entry: no quiet profile yet' in n for n in run2.notes), run2.notes
    assert 'a loaded entry' in run2.why


def test_profiling_reports_progress_once_per_step_with_time_left(tmp_path, mobilenet):
    import io
    from edge_infer.backends.tool import ProgressBar
    spec, path = mobilenet
    events, lines = [], []
    # Every accepted candidate leads (no cut, no lead gap): the side-by-side step
    # always comes. With the defaults, a noise burst on a busy CI machine once
    # left a single leader, and rightly no side-by-side step.
    mgr = _manager(tmp_path, opencv_targets=['cpu', 'cuda'], quiet_foreign_cores=99.0,
                   lead_factor=1e3, cut_factor=1e3)
    mgr.log = lines.append
    mgr.choose(spec, path, progress=events.append)
    steps = [e['step'] for e in events]
    assert steps == sorted(steps) and events[0]['total'] == 4       # ort t1, t2, cv cpu, cuda
    assert [e['what'] for e in events[:3]] == ['onnxruntime/cpu/t1', 'onnxruntime/cpu/t2',
                                               'opencv-dnn/cpu']     # cuda: unavailable, no step
    assert events[-1]['doing'] == 'side by side in interleaved rounds'
    assert all(e['left_s'] >= 0 and e['elapsed_s'] >= 0 for e in events)
    assert not any('load, accuracy check' in ln for ln in lines)   # a bar OR lines, not both
    bar = io.StringIO()
    draw = ProgressBar(bar)
    draw(events[0])
    draw.close()
    assert bar.getvalue().startswith('\r[') and 'onnxruntime/cpu/t1' in bar.getvalue()
    assert 's left' in bar.getvalue()


def test_without_a_callback_each_step_is_one_log_line(tmp_path, mobilenet):
    spec, path = mobilenet
    lines = []
    mgr = _manager(tmp_path, ort_threads=[1], quiet_foreign_cores=99.0)
    mgr.log = lines.append
    mgr.choose(spec, path)
    steps = [ln for ln in lines if 'load, accuracy check, timing alone' in ln]
    assert len(steps) == 1 and steps[0].startswith('[profile mobilenet_v2] 1/1 '
                                                   'onnxruntime/cpu/t1') and 's left)' in steps[0]


class _U8Input(_Delayed):
    """A session taking the u8 kind: refuses anything else, runs like the float model."""

    input_kind = 'u8'

    def __init__(self, inner, float_input, delay_s):
        super().__init__(inner, delay_s)
        self.float_input = float_input

    def run(self, x):
        assert x.dtype == np.uint8, 'fed the wrong input kind'
        return super().run(self.float_input)


def test_candidates_are_ranked_on_preprocessing_plus_run(mobilenet):
    """A run 4 ms slower wins when its input kind saves 10 ms of CPU preprocessing.

    (2 and 5 ms once lost the first check to a robot stage beside 32 client
    processes on 2 cores: a 2 ms delay was under that load's noise.)
    """
    spec, path = mobilenet
    frames, what = calibration_frames(1)
    ref = Reference(spec, path, frames, what)
    feeds = ref.first_inputs()
    assert set(feeds) == {'float', 'u8'} and feeds['u8'].dtype == np.uint8
    plain = OrtBackend(intra_op_threads=1).open_session(path)
    in_graph = _U8Input(OrtBackend(intra_op_threads=1).open_session(path), feeds['float'], 0.004)
    results = {'plain': CandidateResult('plain', status='ok', preprocess_ms=10.0),
               'in-graph': CandidateResult('in-graph', status='ok', input_kind='u8',
                                           preprocess_ms=0.0)}
    try:
        ranking = interleave({'plain': plain, 'in-graph': in_graph}, results, feeds,
                             budget_s=20.0, runs_per_round=3, min_rounds=4, confidence=0.8)
    finally:
        plain.close()
        in_graph.close()
    assert results['plain'].p50_ms < results['in-graph'].p50_ms      # the runs alone
    assert ranking.leader == 'in-graph' and ranking.settled, ranking.describe()
    for r in results.values():
        r.accuracy = 1.0
    best, why = select(results.values())
    assert best.backend == 'in-graph' and 'preprocess 10.00' in why, why
    assert best.frame_ms == pytest.approx(best.p50_ms)
