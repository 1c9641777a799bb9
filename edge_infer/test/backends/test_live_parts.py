# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The pieces of the run-time choice on their own: pacing, load watch, runner pool.

No ROS, no model, no inference: each piece is given the time (``now``) and
the latencies; the runner pool opens simulated sessions
(edge_infer.testing.simulated). LiveChoice as a whole: test_live_rule.py.
"""

import threading

from edge_infer.backends.live.load_watch import LoadWatch
from edge_infer.backends.live.looks import open_sessions
from edge_infer.backends.live.pacing import Pacing, RUN, SERVE
from edge_infer.backends.live.rule import LiveSettings
from edge_infer.backends.live.runners_up import Openings, RunnerPool, wanted
from edge_infer.testing.observer import RecordingObserver
from edge_infer.testing.simulated import Clock, SimBackend, SimSession
import pytest


# -------------------------------------------------------------------- pacing
def _pace(pacing, seconds, ms, expect, now=0.0, fps=20.0):
    """Run the chosen one at ``ms`` a frame; sample a runner-up whenever allowed.

    Return (the time the frames ended, the sample times).
    """
    samples = []
    for _ in range(int(seconds * fps)):
        pacing.frames_since_served += 1
        pacing.chosen_ran(now, ms)
        if pacing.may_pair() and pacing.due(now, 1.0, len(samples)):
            if pacing.allows(now, expect) == RUN:
                pacing.spent('b', now, ms * expect, ms, served=False, runners=1)
                samples.append(now)
        now += 1.0 / fps
    return now, samples


def test_runner_up_time_stays_under_the_duty_and_is_spread_out():
    st = LiveSettings(serve=False)
    pacing = Pacing(st)
    now, samples = _pace(pacing, 2 * st.horizon_s, ms=5.0, expect=1.5)
    assert len(samples) >= 3
    assert pacing.overhead(now) <= st.duty
    assert pacing.overhead(now, since_start=True) <= st.duty
    # steady: no two samples closer than probe_interval_s (one runner-up)
    gaps = [b - a for a, b in zip(samples, samples[1:])]
    assert min(gaps) >= st.probe_interval_s


def test_a_cue_makes_the_pace_eager_for_alert_s():
    st = LiveSettings(serve=False, alert_s=5.0)
    steady, eager = Pacing(st), Pacing(st)
    now, _ = _pace(steady, st.horizon_s, ms=5.0, expect=1.5)
    _, calm = _pace(steady, st.alert_s, ms=5.0, expect=1.5, now=now)
    now, _ = _pace(eager, st.horizon_s, ms=5.0, expect=1.5)
    eager.cue(now)
    assert eager.eager_until == now + st.alert_s and eager.changed_at == now
    _, looked = _pace(eager, st.alert_s, ms=5.0, expect=1.5, now=now)
    assert len(looked) > len(calm)


def test_a_runner_up_ahead_is_sampled_eagerly():
    st = LiveSettings()
    pacing = Pacing(st)
    pacing.chosen_ran(0.0, 5.0)
    pacing.spent('b', 0.0, 5.0, 5.0, served=False, runners=1)
    assert pacing.next_eager < pacing.next_probe
    between = (pacing.next_eager + pacing.next_probe) / 2
    assert pacing.due(between, 0.9, st.max_pairs)          # ahead: the eager pace
    assert not pacing.due(between, 1.1, st.max_pairs)      # behind: the steady pace
    pacing.cue(between - st.window_s / 2)   # after a cue, until it has max_pairs pairs
    assert pacing.eager_until < between
    assert pacing.due(between, 1.1, st.max_pairs - 1)
    assert not pacing.due(between, 1.1, st.max_pairs)


def test_a_close_runner_up_is_served_once_in_serve_every_frames():
    st = LiveSettings(duty=0.5)     # the bound aside
    pacing = Pacing(st)
    close = st.serve_max_ratio
    for k in range(st.reference_frames - 1):
        pacing.frames_since_served += 1
        pacing.chosen_ran(k * 0.05, 5.0)
    assert pacing.allows(k * 0.05, close) == RUN   # no reference to compare with yet
    pacing.frames_since_served = 0      # a runner-up ran the last frame
    for k in range(st.reference_frames, st.reference_frames + st.serve_every):
        pacing.frames_since_served += 1
        pacing.chosen_ran(k * 0.05, 5.0)
        assert pacing.reference_full()
        ready = pacing.frames_since_served + 1 >= st.serve_every
        assert pacing.allows(k * 0.05, close) == (SERVE if ready else None)
    # further behind: an extra run, never served
    assert pacing.allows(k * 0.05, close * 1.01) == RUN
    pacing.frames_since_served = 0
    assert not pacing.may_pair()        # no chosen run on the last frame to pair with
    pacing.new_choice()
    assert not pacing.reference_full() and pacing.allows(k * 0.05, close) == RUN


def test_a_run_over_the_bound_waits():
    st = LiveSettings(serve=False)
    pacing = Pacing(st)
    pacing.frames_since_served = 1
    pacing.chosen_ran(0.0, 5.0)
    affordable = st.duty / 1.5      # the bound counts a run at 1.5x its guess
    assert pacing.allows(0.0, affordable * 0.99) == RUN
    assert pacing.allows(0.0, affordable * 1.01) is None


# ---------------------------------------------------------------- load watch
def _feed(watch, levels, now=0.0, step=0.05):
    """Give the watch frames of ``levels`` ms; return [(frame index, why)] of the cues."""
    cues = []
    for k, ms in enumerate(levels):
        why = watch.latency(now + k * step, ms)
        if why is not None:
            cues.append((k, why))
    return cues


def test_a_move_of_the_latency_level_is_a_cue_once():
    st = LiveSettings()
    frames = 2 * st.level_frames
    moved = 5.0 * (1 + 2 * st.alert_change)
    cues = _feed(LoadWatch(st), [5.0] * frames + [moved] * 2 * frames)
    assert len(cues) == 1 and cues[0][1] == f'latency 5.00 -> {moved:.2f} ms', cues
    assert cues[0][0] - frames < frames     # within 2 x level_frames of the move
    # a move under alert_change, and a lone stall, are no cue
    small = 5.0 * (1 + st.alert_change / 2)
    assert _feed(LoadWatch(st), [5.0] * frames + [small] * 2 * frames) == []
    assert _feed(LoadWatch(st), [5.0] * frames + [50.0] + [5.0] * frames) == []


def test_new_choice_measures_the_level_again():
    st = LiveSettings()
    watch = LoadWatch(st)
    frames = 2 * st.level_frames
    _feed(watch, [5.0] * frames)
    watch.new_choice()      # a new backend at another level: its own frames set it
    assert _feed(watch, [9.0] * 2 * frames) == []


class _Readings:
    """A foreign load source that returns the given readings in turn."""

    def __init__(self, readings):
        self.readings = list(readings)

    def __call__(self):
        value = self.readings.pop(0)
        if isinstance(value, Exception):
            raise value
        return value


def _poll(watch, n, now=0.0):
    """Poll the watch for ``n`` load periods; return [(t, (why, since))] of the changes."""
    out = []
    for _ in range(n):
        now += watch.settings.load_period_s
        assert watch.due(now)
        change = watch.poll(now)
        assert not watch.due(now)       # the next read waits a period
        if change is not None:
            out.append((now, change))
    return out


def test_two_load_windows_that_moved_the_same_way_are_a_change():
    st = LiveSettings()
    low, high = 0.05, 0.05 + 2 * st.load_change_cores
    observer = RecordingObserver()
    watch = LoadWatch(st, _Readings([low, low, high, low, high, high, low, low]), observer)
    changes = _poll(watch, 8)
    # one window up (a spike) is not; two are (the 6th and 8th readings), and the
    # pairs from before the older window go
    period = st.load_period_s
    assert [t for t, _ in changes] == [6 * period, 8 * period], changes
    (t_up, (why_up, since)), (_, (why_down, _)) = changes
    assert why_up == f'foreign load {low:.2f} -> {high:.2f} cores'
    assert since == t_up - 2 * st.load_period_s
    assert why_down == f'foreign load {high:.2f} -> {low:.2f} cores'
    assert [c for _, c in observer.loads] == [low, low, high, low, high, high, low, low]


def test_an_unknown_or_unreadable_load_is_skipped():
    st = LiveSettings()
    observer = RecordingObserver()
    watch = LoadWatch(st, _Readings([None, OSError('no /proc'), 0.1]), observer)
    assert _poll(watch, 3) == [] and watch.foreign_level == 0.1
    assert len(observer.loads) == 1
    assert not LoadWatch(st).due(1e9)           # no source: never polled
    off = LoadWatch(LiveSettings(load_change_cores=0))
    off.start()
    assert off.foreign is None                  # /proc is not read when off


# --------------------------------------------------------------- runner pool
def test_wanted_keeps_a_place_for_another_thread_count():
    threads = {'a/t2': 2, 'b/t2': 2, 'c/t2': 2, 'd/t1': 1, 'e': None}
    assert wanted(['b/t2', 'c/t2', 'd/t1'], threads, 'a/t2', 2) == ['b/t2', 'd/t1']
    assert wanted(['d/t1', 'b/t2', 'c/t2'], threads, 'a/t2', 2) == ['d/t1', 'b/t2']
    assert wanted(['b/t2', 'c/t2'], threads, 'a/t2', 2) == ['b/t2', 'c/t2']   # none other
    assert wanted(['b/t2', 'd/t1'], threads, 'e', 1) == ['b/t2']      # chosen's unknown
    assert wanted([], threads, 'a/t2', 2) == []


class _BrokenBackend(SimBackend):
    def open_session(self, model_path, strict=False, input_spec=None):
        raise RuntimeError('no device')


def _pool(names, settings=None):
    clock = Clock()
    backends = {n: SimBackend(n, clock, lambda t: 5.0) for n in names}
    pool = RunnerPool(settings or LiveSettings())
    open_sessions(pool, names, backends, 'model.onnx', None, threading.Event(), print,
                  Openings())
    return pool, clock


def test_the_pool_opens_what_it_can_and_stops_on_cancel():
    clock, lines = Clock(), []
    backends = {'ok': SimBackend('ok', clock, lambda t: 5.0),
                'broken': _BrokenBackend('broken', clock, lambda t: 5.0)}
    pool, openings = RunnerPool(LiveSettings()), Openings()
    open_sessions(pool, ['broken', 'ok', 'unknown'], backends, 'model.onnx', None,
                  threading.Event(), lines.append, openings)
    assert pool.names() == ['ok'] and isinstance(pool.get('ok'), SimSession)
    assert lines == ['runner-up broken not opened: no device']
    assert openings.busy == 0 and openings.ended == 2     # both tries marked, then ended
    cancelled = threading.Event()
    cancelled.set()
    open_sessions(pool, ['ok2'], {'ok2': backends['ok']}, 'model.onnx', None, cancelled,
                  lines.append, openings)
    assert 'ok2' not in pool and len(pool) == 1


def test_pairs_are_kept_up_to_max_pairs_and_give_the_ratio():
    st = LiveSettings()
    pool, _ = _pool(['b'], st)
    assert pool.ratio('b') is None          # never seen
    for k in range(st.max_pairs + 3):
        pool.record('b', float(k), 10.0, 9.0 if k % 2 else 8.0)
    pairs = pool.pairs('b')
    assert len(pairs) == st.max_pairs and pairs[-1][0] == st.max_pairs + 2
    last = sorted(p[2] / p[1] for p in pairs[-st.min_pairs:])
    assert pool.ratio('b') == pytest.approx(last[len(last) // 2])
    pool.record('gone', 0.0, 10.0, 9.0)     # not open: nothing kept
    assert pool.pairs('gone') == []


def test_pick_takes_turns_among_the_unseen_then_the_lowest_ratio():
    st = LiveSettings()
    pool, _ = _pool(['b', 'c', 'd'], st)
    assert pool.pick(0.0) == ('b', 0.0)
    pool.rotation += 1
    assert pool.pick(0.0) == ('c', 0.0)
    for name, ms in (('b', 9.0), ('c', 12.0), ('d', 8.0)):
        pool.record(name, 1.0, 10.0, ms)
    assert pool.pick(1.0) == ('d', pytest.approx(0.8))
    # pairs older than window_s are forgotten; the ratio is remembered while it is recent
    later = 1.0 + st.window_s + 0.1
    assert pool.pick(later)[1] == 0.0       # too old to say which first: in turn
    assert all(pool.pairs(n) == [] for n in pool.names())
    assert pool.ratio('d') == pytest.approx(0.8)


def test_forget_before_and_new_choice_forget_pairs():
    pool, _ = _pool(['b', 'c'])
    for t in (1.0, 2.0, 3.0):
        pool.record('b', t, 10.0, 9.0)
        pool.record('c', t, 10.0, 11.0)
    pool.forget_before(2.0)
    assert [p[0] for p in pool.pairs('b')] == [2.0, 3.0] == [p[0] for p in pool.pairs('c')]
    pool.new_choice()
    assert pool.pairs('b') == [] == pool.pairs('c') and len(pool) == 2


def test_promote_hands_the_session_over_and_watches_the_old_choice():
    pool, clock = _pool(['b', 'c'])
    sess_b = pool.get('b')
    old = SimSession('a', clock, lambda t: 5.0)
    pool.record('b', 1.0, 10.0, 9.0)
    pool.record('c', 1.0, 10.0, 12.0)
    assert pool.promote('b', 'a', old, 0.9, 2.0) is sess_b
    assert set(pool.names()) == {'a', 'c'} and pool.get('a') is old
    assert pool.pairs('a') == []
    pool.new_choice()               # (a switch forgets every pair)
    assert pool.ratio('a') == pytest.approx(1 / 0.9)          # relative to the new choice
    assert pool.ratio('c') == pytest.approx(1.2 / 0.9)


class _Closing(SimSession):
    def __init__(self, name, clock, closed):
        super().__init__(name, clock, lambda t: 5.0)
        self.closed = closed

    def close(self):
        self.closed.append(self.backend_name)


class _Base:
    """The chosen one's Model, as far as the pool uses it."""

    def with_session(self, session):
        model = _Base()
        model.session = session
        return model


def test_take_keeps_the_session_open_drop_and_close_close_it():
    pool, clock = _pool([])
    closed = []
    for name in ('b', 'c', 'd'):
        pool.add(name, _Closing(name, clock, closed))
    first = pool.model('b', _Base())
    assert first.session is pool.get('b') and pool.model('b', _Base()) is first
    assert pool.model('x', _Base()) is None
    pool.new_choice()       # a new chosen Model: the runners-up serve with its processing
    served = pool.model('b', _Base())
    assert served is not first and pool.model('b', _Base()) is served
    taken = pool.take('b')
    assert taken is served.session and 'b' not in pool and closed == []
    pool.drop('c')
    assert 'c' not in pool and closed == ['c']
    pool.close()
    assert len(pool) == 0 and closed == ['c', 'd']
