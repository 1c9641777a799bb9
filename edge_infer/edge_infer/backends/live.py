# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The run-time choice of one model's backend, frame by frame (no ROS).

    live = LiveChoice(manager, spec, model_path, models_dir, LiveSettings(), report=...)
    live.start()                       # choose (profile or cache) and open the model
    result = live.infer(frame)         # between frames: switch, fall back, observe
    ... publish the result ...
    live.after_frame()                 # maybe time one runner-up on the same input
    live.close()

A profile says what was best when it was measured; the robot's load then
changes (a SLAM node starts, a core frees up, another model stops). This
object keeps the choice right while running:

- **online re-selection on real frames** (objective ``latency`` only: the
  rule compares time, so for ``energy`` / ``edp`` it would override the
  measured choice; those keep drift and fallback): the runners-up (the next best
  candidates of the profile, at most ``runners_up``; the last place goes to
  the best one with another thread count than the chosen one's when none of
  the others has one) stay open and are sampled on real frames in one of two
  ways:

  * **served** (``serve``, the default): a runner-up expected within
    ``serve_max_ratio`` (1.25x) of the chosen one's time runs a frame
    itself, at most one in ``serve_every`` (3); its result goes out and
    names it (every :class:`Result` names the backend that ran it). It is
    compared with the mean of the chosen one's last ``reference_frames``
    (9) frames, and costs only what it takes beyond that: nothing when it
    is faster. Why: at 5 % of compute, extra runs give about one sample a
    second, and a runner-up 4 % faster needs 10-15 of them (the sign test
    below), so a choice took 10-20 s to follow a load change; a served
    frame of a close candidate costs ~0, so the same duty buys a sample
    every 3rd frame. Comparing with the chosen one's recent frames is as
    tight as pairing on the same frame: the robust spread of the log ratio
    was 0.055 vs 0.056 (a full core of foreign load), 0.083 vs 0.175 (half a
    core) in the regret benchmark's recordings;
  * **extra run** (a runner-up further behind, or ``serve`` off): after a
    frame's result is out it runs on that frame's preprocessed input (its
    output discarded), paired with the chosen one's run on the same frame.

  The switch rule
  (:func:`paired_verdict`) looks at a runner-up's last pairs (at most
  ``max_pairs``, none older than ``window_s``) and switches when both hold:

  * **effect**: the runner-up took under ``1 - min_margin`` (3 %) of the
    chosen one's time over those frames (sum over sum: time-weighted, as the
    robot pays it; a median hides a stall tail: measured under a full core of
    foreign load, OpenVINO t1 bf16 / t2 bf16 was 0.965 by median but 0.907 by
    time, t2's second thread waiting on the busy core);
  * **consistency**: a one-sided sign test says the runner-up is faster on
    the frames themselves, p <= ``alpha`` (0.05) that a candidate as fast as
    the chosen one wins that many: 5 of 5 pairs (p 0.031), 7 of 8 (0.035),
    9 of 10 (0.011). A few lucky frames or one stall of the chosen one do not
    decide.

  At least ``min_pairs`` pairs are needed (5: the fewest with which the test
  can reach 0.05). The runner-up then takes over between two frames and the
  old choice becomes a runner-up with no pairs: going back needs the same
  evidence, so two candidates within noise do not flip back and forth (with
  the test run after every pair, a false switch between equal ones came
  about once per 240 pairs: this object with a simulated clock, 6 runs of
  20 min, 10 % noise per run). Both directions (the chosen
  slowing down, another speeding up) are the same comparison.

  Which runner-up runs next: one not timed in the last ``window_s`` first,
  else the one with the lowest median ratio over its last ``min_pairs`` pairs
  (the most likely to win gathers its evidence; a clearly slower one costs
  one run per ``window_s``). Cost: runner-up time (served: beyond the chosen
  one's) stays under ``duty`` x the
  chosen one's time over the last ``horizon_s`` seconds, and the runs are
  spread evenly at that pace (a burst of pairs from one moment says little
  more than one pair, and spends the duty the next change needs; the pace
  follows a typical run, the median of the last ones): in steady
  state at most half the duty (one run per ``probe_interval_s`` / runners-up
  at most), so a reserve builds up; eager, the whole duty plus the reserve
  spread over ``reserve_s``, while the runner-up picked is ahead (median ratio
  under 1), for ``alert_s`` seconds after a cue that the load changed, and
  after such a cue (within ``window_s``) until the runner-up picked has
  ``max_pairs`` pairs (in a change's transient both run slow and noisy; a
  few early pairs against the eventual winner had sent it back to the steady
  pace, and in one recording the choice then never followed). The cue:
  the chosen one's median latency over its last ``level_frames`` frames and
  over the ``level_frames`` before both moved the same way by more than
  ``alert_change`` from its level. Pairs describe the load they were taken
  under and are forgotten (besides aging out after ``window_s``) when there
  is evidence that it changed: the CPU time other processes used (``/proc``,
  as the profile's load record) over two successive ``load_period_s``
  windows both moved the same way by more than ``load_change_cores`` (the
  pairs from before the older window), a drift alarm (those from before its
  window) and a switch (all). A move of the chosen one's latency alone does
  not forget them: under a busy core it swings by 30-90 % every second or
  two, and forgetting on it (a median of 5 frames moved by 20 %) kept every
  runner-up under 5 pairs through a whole 20 s phase in the benchmark. A
  load that slows a runner-up but not the chosen one (a 1-thread choice
  when a core frees up) moves no latency of the chosen one at all.
  The budget is the limit for extra runs: at 5 % of a 4-6 ms model's time
  at 15-25 frames a second, about one pair a second, so a runner-up 5-10 %
  faster on 70-80 % of the frames takes 5-20 s to be recognised that way;
  served frames of a close one (cost ~0) come every ``serve_every`` frames;
- **drift**: when the chosen one's median latency stays over
  ``drift_threshold`` x its profile, the runners-up are timed on the next
  frames at once (online re-selection on), or (re-selection off, or no
  runner-up open) every working candidate is measured again in the
  background (never written to the board's profile) and the best one taken
  between two frames;
- **fallback**: a backend that raises is replaced by the next best measured
  candidate and the frame is run again on it: no frame is lost.
- **provisional start** (:mod:`.startup`): when the cache lacks figures for
  some candidate, :meth:`LiveChoice.start` opens a provisional backend at
  once and the profile runs in a background thread from the first frame
  served (``profile_after_s`` at most); its choice takes over between two
  frames (trigger ``profiled``), and only then do drift and the runners-up
  start. A deactivation stops it, :meth:`LiveChoice.resume` restarts it.

Every switch calls ``report(run, trigger)`` (``online``, ``drift``,
``fallback``, ``profiled``) with the evidence in ``run.why``, and logs one line.
"""

from collections import deque
import contextlib
from dataclasses import dataclass
import math
import pathlib
import statistics
import threading
import time
from typing import Callable, Deque, Dict, List, Optional, Sequence, Tuple

from .drift import DriftMonitor
from .gate import GATE
from .load import LoadProbe
from .profiling import CandidateResult, ProfileRun
from .selection import latency_at, OBJECTIVES, PERCENTILES, stalls
from ..core.backend import first_line
from ..core.model import Model, Result
from ..core.registry import ModelSpec

Log = Callable[[str], None]
_REEVALUATION = threading.Lock()    # one at a time: two models measuring at once meet


@dataclass
class LiveSettings:
    """How the choice is kept right at run time (node parameters map onto these)."""

    objective: str = 'latency'
    max_latency_ms: float = 0.0
    min_accuracy: float = 0.0
    latency_percentile: int = 0         # 0 = config/backends.yaml's
    drift_threshold: float = 1.5        # 0 = off
    drift_window_s: float = 5.0
    duty: float = 0.05                  # 0 = no online re-selection
    runners_up: int = 2
    min_margin: float = 0.03            # the runner-up's time must be under 1 - this
    alpha: float = 0.05                 # sign test: the runner-up faster with p <= alpha
    min_pairs: int = 5                  # fewest pairs for a switch
    max_pairs: int = 10                 # the decision uses a runner-up's last max_pairs
    window_s: float = 15.0              # pairs older than this are forgotten
    probe_interval_s: float = 2.0
    alert_change: float = 0.2
    level_frames: int = 10              # the load moved: two medians of this many agree
    alert_s: float = 3.0
    horizon_s: float = 30.0
    reserve_s: float = 10.0             # eager runs spend the unused duty over this
    steady_share: float = 0.5           # steady pace: at most this share of the duty
    serve: bool = True                  # a close runner-up may run a frame (its result out)
    serve_max_ratio: float = 1.25       # ... when expected under this x the chosen one's time
    serve_every: int = 3                # ... on at most one frame in this many
    reference_frames: int = 9           # a served frame vs the mean of the chosen one's last
    load_change_cores: float = 0.2      # foreign load moved this much: the load changed
    load_period_s: float = 1.0          # (load_change_cores 0: /proc is not read)
    provisional: bool = True            # incomplete profile: serve at once, profile behind
    profile_after_s: float = 3.0        # ... from the first frame served, or after this long

    def check(self, names: Optional[Dict[str, str]] = None) -> 'LiveSettings':
        """Raise ValueError naming the first bad setting; return self.

        ``names``: the user-facing name of a field where it differs (a node's
        parameter ``reselect_duty`` is ``duty`` here).
        """
        def bad(field: str, use: str) -> ValueError:
            name = (names or {}).get(field, field)
            return ValueError(f"parameter '{name}' is {getattr(self, field)!r}: use {use}")
        if self.objective not in OBJECTIVES:
            raise bad('objective', f"one of {', '.join(OBJECTIVES)}")
        if self.max_latency_ms < 0:
            raise bad('max_latency_ms', '0 (no limit) or more')
        if not 0 <= self.min_accuracy <= 1:
            raise bad('min_accuracy', 'a value in [0, 1]')
        if self.drift_threshold != 0 and self.drift_threshold <= 1:
            raise bad('drift_threshold', '0 (off) or a ratio > 1')
        if self.drift_window_s <= 0:
            raise bad('drift_window_s', 'a positive number of seconds')
        if self.latency_percentile and self.latency_percentile not in PERCENTILES:
            raise bad('latency_percentile',
                      f"0 (the config's) or one of {', '.join(map(str, PERCENTILES))}")
        if not 0 <= self.duty <= 0.5:
            raise bad('duty', '0 (off) to 0.5')
        if self.profile_after_s < 0:
            raise bad('profile_after_s', '0 or more seconds')
        return self


def sign_test_p(wins: int, n: int) -> float:
    """Return P(at least ``wins`` of ``n`` fair coin flips): the one-sided sign test's p."""
    return sum(math.comb(n, k) for k in range(wins, n + 1)) / 2 ** n if n else 1.0


@dataclass
class Verdict:
    """The switch rule applied to one runner-up's pairs."""

    n: int                  # pairs
    wins: int               # pairs where the runner-up was faster
    p: float                # sign test, one-sided
    time_ratio: float       # runner-up time / chosen time over the pairs
    chosen_ms: float        # medians
    runner_ms: float
    switch: bool


def paired_verdict(pairs: Sequence[Tuple[float, float]], min_pairs: int = 5,
                   min_margin: float = 0.03, alpha: float = 0.05) -> Verdict:
    """Judge (chosen ms, runner-up ms) pairs, each from one frame: switch to the runner-up.

    Switch when there are at least ``min_pairs`` pairs, the runner-up's total
    time is under ``1 - min_margin`` x the chosen one's, and it was faster on
    so many of the frames that a candidate as fast as the chosen one would do
    that with probability at most ``alpha`` (one-sided sign test; a tie
    counts as a loss).
    """
    n = len(pairs)
    if not n:
        return Verdict(0, 0, 1.0, float('nan'), float('nan'), float('nan'), False)
    wins = sum(1 for c, r in pairs if r < c)
    p = sign_test_p(wins, n)
    mine = sum(c for c, _ in pairs)
    ratio = sum(r for _, r in pairs) / mine if mine > 0 else float('inf')
    return Verdict(n, wins, p, ratio, statistics.median(c for c, _ in pairs),
                   statistics.median(r for _, r in pairs),
                   n >= min_pairs and ratio < 1 - min_margin and p <= alpha)


class _ForeignLoad:
    """The cores other processes used since the last call, from /proc (None: unknown)."""

    def __init__(self):
        self.probe = LoadProbe().start()

    def __call__(self) -> Optional[float]:
        cond = self.probe.stop()
        self.probe.start()
        if not cond or cond.get('window_s', 0.0) < 0.2:
            return None
        return float(cond['foreign_cores'])


class _Window:
    """(time, value) samples over a sliding time window."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.items: Deque[Tuple[float, float]] = deque()

    def add(self, now: float, value: float) -> None:
        self.items.append((now, value))
        self.trim(now)

    def trim(self, now: float) -> None:
        while self.items and self.items[0][0] < now - self.seconds:
            self.items.popleft()

    def total(self, now: float) -> float:
        self.trim(now)
        return sum(v for _, v in self.items)


class LiveChoice:
    """One model's backend at run time: chosen, watched, switched between frames."""

    def __init__(self, manager, spec: ModelSpec, model_path: pathlib.Path,
                 models_dir: Optional[pathlib.Path] = None,
                 settings: Optional[LiveSettings] = None, overrides: Optional[dict] = None,
                 log: Log = print, report: Optional[Callable[[ProfileRun, str], None]] = None,
                 warn: Optional[Log] = None, scope=None,
                 foreign_load: Optional[Callable[[], Optional[float]]] = None):
        """Keep one model's backend right at run time.

        ``foreign_load``: returns the cores other processes used since its last
        call (None: unknown); default: from /proc (:class:`.load.LoadProbe`).
        ``log`` / ``warn``: info and warning lines; ``scope``: a context manager
        factory entered around background work (a node routes the manager's
        lines under itself with it).
        """
        self.manager = manager
        self.spec = spec
        self.model_path = pathlib.Path(model_path)
        self.models_dir = pathlib.Path(models_dir) if models_dir else self.model_path.parent
        self.settings = settings or LiveSettings()
        self.overrides = dict(overrides or {})
        self.log = log
        self.warn = warn or log
        self.scope = scope or contextlib.nullcontext
        self.report = report or (lambda run, trigger: None)
        self.model: Optional[Model] = None
        self.run: Optional[ProfileRun] = None
        self.fixed = False                  # forced / executor: never switched by measurement
        self.provisional = False            # serving while the profile runs in the background
        self.settled_s = float('nan')       # how long that profile took
        self._frame_lock = threading.Lock()     # held by a frame; a settled profile waits
        self._served = threading.Event()        # a first frame was served
        self._can_fall_back = True          # False for a fixed executor backend
        self.drift: Optional[DriftMonitor] = None
        self.switches: List[dict] = []      # every switch: time, from, to, trigger, evidence
        self.shadow_runs = 0
        self._failed: set = set()
        self._pending: Optional[Model] = None     # set by a background re-evaluation
        self._pending_why: Tuple[str, str] = ('', '')
        self._pending_run: Optional[ProfileRun] = None
        self._pending_keep = None     # (run, p50): a re-evaluation kept the choice
        self._runners: Dict[str, object] = {}     # name -> open session (runners-up)
        self._runners_lock = threading.Lock()
        self._pairs: Dict[str, Deque[Tuple[float, float, float]]] = {}
        self._known: Dict[str, Tuple[float, float]] = {}   # name -> (time, median ratio)
        self._rotation = 0
        self._primary = _Window(self.settings.horizon_s)
        self._shadow = _Window(self.settings.horizon_s)
        self._recent = deque(maxlen=2 * self.settings.level_frames)  # (t, ms): chosen
        self._level = float('nan')                # its level when last settled
        self._alert_until = 0.0
        self._changed_at = -math.inf              # the last cue that the load changed
        self._next_probe = 0.0
        self._next_eager = 0.0
        self._t_first = float('nan')              # the first frame's time
        self._last_ms = float('nan')
        self._chosen_ms: Deque[float] = deque(maxlen=self.settings.reference_frames)
        self._serve_next: Optional[str] = None     # the runner-up that runs the next frame
        self._frames_since_served = 0
        self._served_models: Dict[str, Model] = {}
        self._costs: Dict[str, Deque[float]] = {}  # name -> compute its last samples added
        self.served_frames = 0
        self.spent_ms = [0.0, 0.0]      # since start: the chosen one's time, runners-up's extra
        self._cancel = threading.Event()
        self._threads: List[threading.Thread] = []
        self._foreign = foreign_load
        self._next_load = 0.0
        self._load_level = float('nan')           # foreign cores when last settled
        self._load_last = float('nan')
        self.alerts: List[Tuple[float, str]] = []  # (time, why) of every load change seen
        self.pair_log: Deque[Tuple[float, str, str, float, float]] = deque(maxlen=5000)
        self.load_log: Deque[Tuple[float, float]] = deque(maxlen=5000)  # (t, foreign cores)
        self._reevaluating = threading.Lock()

    # ------------------------------------------------------------------- start
    def start(self, force: str = '', use_cache: bool = True, backend=None,
              run: Optional[ProfileRun] = None) -> ProfileRun:
        """Choose (unless ``backend``/``run`` are given: a fixed choice) and open the model.

        With ``settings.provisional`` and a profile the cache does not hold
        whole, a provisional backend opens at once and the profile runs in the
        background (:mod:`.startup`); the measured choice takes over between
        two frames.
        """
        st = self.settings
        if backend is None and not force and use_cache and st.provisional:
            from .startup import provisional
            pick = provisional(self.manager, self.spec, self.model_path, st)
            if pick is not None:
                backend, run = pick
                self.model = Model(self.spec, backend, self.models_dir, verify_checksum=False,
                                   **self.overrides)
                self.run, self.provisional = run, True
                self.report(run, 'provisional')
                self._spawn(self._profile_behind, 'profile')
                return run
        if backend is None:
            backend, run = self.manager.choose(
                self.spec, self.model_path, objective=st.objective,
                max_latency_ms=st.max_latency_ms, min_accuracy=st.min_accuracy, force=force,
                use_cache=use_cache, latency_percentile=st.latency_percentile)
        self.fixed = bool(force)
        self.model = Model(self.spec, backend, self.models_dir, verify_checksum=False,
                           **self.overrides)
        self.run = run
        self.report(run, 'forced' if force else 'configure')
        self._watch()
        return run

    def _watch(self) -> None:
        """Start keeping the measured choice right: the drift monitor, the runners-up."""
        st = self.settings
        chosen = self._result(self.run.chosen)
        if st.drift_threshold and not self.fixed and chosen is not None:
            self.drift = DriftMonitor(chosen.p50_ms, st.drift_threshold, st.drift_window_s)
        # the switch rule compares time: for the energy / edp objectives it would
        # override the measured choice, so they keep drift and fallback only
        if st.duty > 0 and st.objective == 'latency' and not self.fixed and \
                self.manager is not None:
            if self._foreign is None and st.load_change_cores > 0:
                self._foreign = _ForeignLoad()
            self._spawn(self._open_runners, 'runners')

    def resume(self) -> None:
        """Start the background profile again if a cancel stopped it before it settled."""
        if self.provisional and self.model is not None and not any(
                t.is_alive() and t.name.endswith('-profile') for t in self._threads):
            self._cancel.clear()
            self._served.clear()
            self._spawn(self._profile_behind, 'profile')

    def _profile_behind(self) -> None:
        """Profile while the provisional backend serves; hand the choice over (background)."""
        st = self.settings
        # the first frame first: started at once, the profile's model loads and ncnn
        # conversions took the cores the camera driver, DDS discovery and the first
        # inference needed (first detection 3.6-4.1 s after `ros2 launch` instead of
        # 2.4 s on this VM)
        self._served.wait(st.profile_after_s)
        t0 = time.monotonic()
        try:
            if self._cancel.is_set():
                return
            backend, run = self.manager.choose(
                self.spec, self.model_path, objective=st.objective,
                max_latency_ms=st.max_latency_ms, min_accuracy=st.min_accuracy,
                latency_percentile=st.latency_percentile, cancel=self._cancel)
            new = None
            if backend.name != self.model.backend_name:
                new = Model(self.spec, backend, self.models_dir, verify_checksum=False,
                            **self.overrides)
        except Exception as exc:  # keep serving on the provisional backend
            if not self._cancel.is_set():
                self.warn(f'profile failed ({type(exc).__name__}: {first_line(exc)}): '
                          f'staying on the provisional {self.backend_name}')
            return
        with self._frame_lock:      # between two frames
            if self._cancel.is_set():
                if new is not None:
                    new.close()
                return
            old = self.model.backend_name
            self.run, self.provisional = run, False
            if new is not None:
                previous, self.model = self.model, new
                previous.close()
            self._chosen_ms.clear()     # the provisional one's frames say nothing of it
            self._recent.clear()
            self._level = float('nan')
            self.settled_s = time.monotonic() - t0
            self.switches.append({'t': time.monotonic(), 'from': old, 'to': run.chosen,
                                  'trigger': 'profiled', 'evidence': run.why})
            self.log(f'profile done in {self.settled_s:.1f} s: '
                     + (f'switching backend {old} -> {run.chosen}' if new is not None else
                        f'keeping {old}') + ' (profiled)')
            self.report(run, 'profiled')
            self._watch()

    def fix(self, backend, run: ProfileRun) -> ProfileRun:
        """Open ``backend`` as a fixed choice (no re-selection: e.g. the shared executor)."""
        self.fixed = True
        self._can_fall_back = False
        self.model = Model(self.spec, backend, self.models_dir, verify_checksum=False,
                           **self.overrides)
        self.run = run
        self.report(run, 'configure')
        return run

    @property
    def backend_name(self) -> str:
        """Return the name of the backend the next frame runs on."""
        return self.model.backend_name if self.model else ''

    def _result(self, name: Optional[str]) -> Optional[CandidateResult]:
        return next((r for r in self.run.results if r.backend == name), None) \
            if self.run else None

    def _spawn(self, target, what: str) -> None:
        def scoped():
            with self.scope():
                target()
        t = threading.Thread(target=scoped, daemon=True, name=f'{self.spec.name}-{what}')
        self._threads = [x for x in self._threads if x.is_alive()] + [t]
        t.start()

    def _ranked(self) -> List[CandidateResult]:
        """Return the accepted candidates, best first by the objective's figure."""
        pct = int(self.settings.latency_percentile or
                  self.manager.config.get('latency_percentile', 50))
        guard = float(self.manager.config.get('tail_guard', 0) or 0)
        ok = [r for r in self.run.results if r.status == 'ok' and not r.cut_short and
              r.backend not in self._failed and math.isfinite(r.p50_ms) and
              not (guard and stalls(r, guard))]    # a staller could win 10 calm pairs
        return sorted(ok, key=lambda r: latency_at(r, pct))

    def _open_runners(self) -> None:
        """Open the best runners-up (background: the first frames do not wait for them)."""
        try:
            by_name = {b.name: b for b in self.manager.candidates(self.spec, self.model_path)}
            ranked = [r.backend for r in self._ranked()
                      if r.backend != self.run.chosen and r.backend in by_name]
            want = ranked[:self.settings.runners_up]

            def threads(name):
                return getattr(by_name.get(name), 'intra_op_threads', None)
            mine = threads(self.run.chosen)
            if want and mine is not None and all(threads(n) == mine for n in want):
                # foreign load mostly changes which thread count wins (measured: a busy
                # core makes 1-thread OpenVINO beat 2-thread by 5-10 %): watch the best
                # candidate with another thread count even when the quiet profile
                # ranks it lower
                other = next((n for n in ranked if threads(n) not in (None, mine)), None)
                if other is not None:
                    want[-1] = other
            for name in want:
                if self._cancel.is_set():
                    return
                if name in self._runners or name not in by_name:
                    continue
                try:
                    sess = by_name[name].load(self.model_path)
                except Exception as exc:  # a runner-up that cannot load is left out
                    self.log(f'runner-up {name} not opened: {first_line(exc)}')
                    continue
                with self._runners_lock:
                    self._runners[name] = sess
                    self._pairs[name] = deque()
        except Exception as exc:  # keep serving on the chosen backend
            self.log(f'online re-selection off: {type(exc).__name__}: {exc}')

    # ------------------------------------------------------------------ frames
    def infer(self, frame, around_run=None) -> Result:
        """Run one frame on the chosen backend; switch first if a switch is due.

        ``around_run``: Model.infer's hook, called for each run (again when the
        frame is run a second time after a fallback).
        """
        with self._frame_lock, GATE.shared():
            result = self._infer(frame, around_run)
        self._served.set()
        return result

    def _infer(self, frame, around_run) -> Result:
        if self._pending is not None:
            self._swap_pending()
        if self._pending_keep is not None:      # a re-evaluation kept the choice
            (run, p50), self._pending_keep = self._pending_keep, None
            self.run = run
            self.drift.rebase(p50)
            self.report(run, 'drift')
        name, self._serve_next = self._serve_next, None
        if name is not None:
            result = self._serve(name, frame, around_run)
            if result is not None:
                return result
        self._frames_since_served += 1
        try:
            result = self.model.infer(frame, around_run=around_run)
        except Exception as exc:
            from ..core.image import ImageError
            from ..core.postprocess import OutputError
            if isinstance(exc, (ImageError, OutputError)) or not self._fall_back(exc):
                raise
            result = self.model.infer(frame, around_run=around_run)
        self._observe(result.inference_ms)
        return result

    def _serve(self, name: str, frame, around_run) -> Optional[Result]:
        """Run the frame on runner-up ``name`` (its result goes out); None: it could not."""
        with self._runners_lock:
            sess = self._runners.get(name)
        if sess is None or len(self._chosen_ms) < self._chosen_ms.maxlen:
            return None
        model = self._served_models.get(name)
        if model is None or model.session is not sess:
            model = self._served_models[name] = self.model.with_session(sess)
        now = time.monotonic()
        # the chosen one's time over its last frames: a mean, as the robot pays it (a
        # median would leave out the stalls a busy core gives a 2-thread choice)
        ref = statistics.fmean(self._chosen_ms)
        try:
            result = model.infer(frame, around_run=around_run)
        except Exception as exc:
            from ..core.image import ImageError
            if isinstance(exc, ImageError):
                raise       # the frame's fault, not the backend's
            self.log(f'runner-up {name} failed ({first_line(exc)}): no longer watched')
            self._drop_runner(name)
            return None     # the chosen one runs the frame: none is lost
        self._frames_since_served = 0
        self.served_frames += 1
        ms = result.inference_ms
        self._sampled(name, now, ref, ms, max(0.0, ms - ref), served=True)
        return result

    def _observe(self, ms: float) -> None:
        now = time.monotonic()
        if not math.isfinite(self._t_first):
            self._t_first = now
        self._last_ms = ms
        self._chosen_ms.append(ms)
        self._primary.add(now, ms)
        self.spent_ms[0] += ms
        self._recent.append((now, ms))
        if len(self._recent) == self._recent.maxlen:
            items = [v for _, v in self._recent]
            k = len(items) // 2
            older, level = statistics.median(items[:k]), statistics.median(items[k:])
            if not math.isfinite(self._level):
                self._level = level
            else:
                moves = (older / self._level - 1, level / self._level - 1)
                if (min(moves) > self.settings.alert_change or
                        max(moves) < -self.settings.alert_change):
                    # a cue to look, not proof: under a busy core the chosen one's
                    # own latency swings by 30-90 % every second or two
                    self._alert(now, f'latency {self._level:.2f} -> {level:.2f} ms')
                    self._level = level
                    self._recent.clear()
        if self._foreign is not None and self._runners and now >= self._next_load:
            self._next_load = now + self.settings.load_period_s
            self._watch_load(now)
        if self.drift is not None and self.drift.add(ms, now):
            if self._runners and self.settings.duty > 0:
                # online re-selection is on: compare the runners-up on the next real
                # frames (paired, same load) rather than re-profile every candidate
                # in the background, which competes with the frames for the cores
                d = self.drift
                self.log(f'latency drift: median {d.last_median_ms:.1f} ms vs '
                         f'{d.expected_ms:.1f} ms profiled; timing the runners-up on the '
                         f'next frames')
                self._alert(now, 'latency drift', since=now - d.window_s)
            else:
                self._start_reevaluation()

    def _alert(self, now: float, why: str, since: Optional[float] = None) -> None:
        """Look now (eager runs); with ``since`` (the load changed then) forget older pairs."""
        self._alert_until = now + self.settings.alert_s
        self._changed_at = now
        if since is not None:
            with self._runners_lock:    # runners may still be opening (another thread)
                for pairs in self._pairs.values():
                    while pairs and pairs[0][0] < since:
                        pairs.popleft()     # they describe the load before the change
        self.alerts.append((now, why))
        del self.alerts[:-100]

    def _watch_load(self, now: float) -> None:
        """Alert when two successive load windows both moved the same way from the level."""
        try:
            cores = self._foreign()
        except Exception:  # /proc unreadable: the latency watch still works
            cores = None
        if cores is None:
            return
        self.load_log.append((now, cores))
        if not math.isfinite(self._load_level):
            self._load_level = self._load_last = cores
            return
        step = self.settings.load_change_cores
        moves = (self._load_last - self._load_level, cores - self._load_level)
        self._load_last = cores
        if min(moves) > step or max(moves) < -step:
            self._alert(now, f'foreign load {self._load_level:.2f} -> {cores:.2f} cores',
                        since=now - 2 * self.settings.load_period_s)  # both windows moved
            self._load_level = cores

    def after_frame(self) -> bool:
        """Time one runner-up on the last frame's input when the duty allows; True if it did."""
        if self.fixed or not self._runners or self.model is None or \
                self._frames_since_served == 0:     # a runner-up ran it: no chosen run to pair
            return False
        x = getattr(self.model, 'last_input', None)
        if x is None or not math.isfinite(self._last_ms):
            return False
        now = time.monotonic()
        st = self.settings
        with self._runners_lock:
            names = list(self._runners)
        if not names:
            return False
        name, ratio = self._pick(names, now)
        # eager (the whole duty): after the load changed, or while the runner-up picked
        # is ahead; otherwise the steady pace (half the duty at most)
        # and, after a load change, until the runner-up picked has a full set of pairs
        # (under the change's transient both run slow and noisy: a few early pairs
        # against it must not send it back to the steady pace)
        eager = (now < self._alert_until or ratio < 1.0 or
                 (now - self._changed_at < st.window_s and
                  len(self._pairs.get(name, ())) < st.max_pairs))
        if now < (self._next_eager if eager else self._next_probe):
            return False
        expect = self._expected_ratio(name)
        serve = (st.serve and expect <= st.serve_max_ratio and
                 len(self._chosen_ms) == self._chosen_ms.maxlen)
        if serve and self._frames_since_served + 1 < st.serve_every:
            return False
        # the bound: a run may take longer than the last one did (served: what it
        # takes beyond the chosen one's time is the cost)
        guess = self._last_ms * (max(0.0, expect - 1.0) if serve else expect)
        if self._shadow.total(now) + 1.5 * guess > st.duty * self._primary.total(now):
            return False
        self._rotation += 1
        if serve:
            self._serve_next = name     # the next frame runs on it
            return False
        sess = self._runners[name]
        try:
            with GATE.shared():
                t = time.perf_counter()
                sess.run(x)
                ms = (time.perf_counter() - t) * 1e3
        except Exception as exc:  # a runner-up that fails is dropped, not fatal
            self.log(f'runner-up {name} failed ({first_line(exc)}): no longer watched')
            self._drop_runner(name)
            return False
        self._sampled(name, now, self._last_ms, ms, ms)
        return True

    def _expected_ratio(self, name: str) -> float:
        """Return runner-up ``name``'s time / the chosen one's: as last seen, else profiled."""
        pairs = self._pairs.get(name)
        if pairs:
            return statistics.median(p[2] / p[1] for p in list(pairs)[-self.settings.min_pairs:])
        known = self._known.get(name)
        if known and known[1] > 0:
            return known[1]
        mine, other = self._result(self.run.chosen), self._result(name)
        if mine and other and mine.p50_ms > 0 and math.isfinite(other.p50_ms):
            return other.p50_ms / mine.p50_ms
        return float('inf')

    def _sampled(self, name: str, now: float, chosen_ms: float, ms: float, cost: float,
                 served: bool = False) -> None:
        """Record one sample of runner-up ``name`` (``cost``: the compute it added), judge."""
        st = self.settings
        with self._runners_lock:
            pairs = self._pairs.get(name)
            names = len(self._runners)
        if pairs is None:
            return
        self.shadow_runs += 1
        self._shadow.add(now, cost)
        self.spent_ms[1] += cost
        if served:      # the chosen one did not run this frame: count what it would take
            self._primary.add(now, chosen_ms)
            self.spent_ms[0] += chosen_ms
        # spread the runs evenly at the duty's pace (a burst of pairs from one moment
        # says little more than one pair, and spends the duty the next change needs);
        # eager, the reserve left under the bound is spent over reserve_s as well
        elapsed = min(st.horizon_s, max(now - self._t_first, 1.0))
        primary = self._primary.total(now)
        rate = primary / elapsed      # the chosen one's ms per second
        reserve = max(0.0, st.duty * primary - self._shadow.total(now))
        # a typical run sets the pace (one stall of 40 ms would stop the runs for 8 s;
        # the bound over the horizon still pays for it)
        costs = self._costs.setdefault(name, deque(maxlen=st.min_pairs))
        costs.append(cost)
        cost = statistics.median(costs)
        spacing = cost / (st.duty * rate) if rate > 0 else 0.0
        self._next_eager = now + (cost / (st.duty * rate + reserve / st.reserve_s)
                                  if rate > 0 else 0.0)
        self._next_probe = now + max(st.probe_interval_s / max(1, names),
                                     spacing / st.steady_share)
        pairs.append((now, chosen_ms, ms))
        self.pair_log.append((now, self.run.chosen, name, chosen_ms, ms))
        while len(pairs) > st.max_pairs:
            pairs.popleft()
        recent = list(pairs)[-st.min_pairs:]
        self._known[name] = (now, statistics.median(p[2] / p[1] for p in recent))
        self._consider(name, now)

    def _pick(self, names: List[str], now: float) -> Tuple[str, float]:
        """Return the runner-up to time next and its median ratio as last seen (0: unknown).

        One not timed in the last ``window_s`` first (in turn), else the lowest
        median ratio over its last ``min_pairs`` pairs: the one most likely to be
        faster gathers its evidence first, and a clearly slower one costs one
        run per ``window_s``. The ratio is remembered when pairs are forgotten
        (a load change): it still says which one to time first.
        """
        ratios = {}
        for name in names:
            pairs = self._pairs[name]
            while pairs and pairs[0][0] < now - self.settings.window_s:
                pairs.popleft()         # measured under the load of another moment
            known = self._known.get(name)
            ratios[name] = known[1] if known and known[0] >= now - self.settings.window_s \
                else 0.0
        start = self._rotation % len(names)
        order = names[start:] + names[:start]
        name = min(order, key=ratios.get)       # min keeps the first of equals: in turn
        return name, ratios[name]

    def _drop_runner(self, name: str) -> None:
        with self._runners_lock:
            sess = self._runners.pop(name, None)
            self._pairs.pop(name, None)
            self._known.pop(name, None)
            self._costs.pop(name, None)
            self._served_models.pop(name, None)
        if sess is not None:
            sess.close()

    def _consider(self, name: str, now: float) -> None:
        """Switch to runner-up ``name`` when its pairs pass the rule (:func:`paired_verdict`)."""
        st = self.settings
        pairs = self._pairs[name]
        v = paired_verdict([(p[1], p[2]) for p in pairs], st.min_pairs, st.min_margin,
                           st.alpha)
        if not v.switch:
            return
        old = self.run.chosen
        evidence = (f'{name} took {v.time_ratio:.2f}x the time of {old} over {v.n} frames '
                    f'paired in the last {now - pairs[0][0]:.1f} s (median {v.runner_ms:.2f} '
                    f'vs {v.chosen_ms:.2f} ms; margin {st.min_margin:.0%}), faster in '
                    f'{v.wins} of {v.n} (sign test p = {v.p:.3f} <= {st.alpha:g})')
        with self._runners_lock:
            sess = self._runners.pop(name)
            self._pairs.pop(name)
            self._known.pop(name, None)
            # what is known of the others, now relative to the new choice
            self._known = {n: (t, r / v.time_ratio) for n, (t, r) in self._known.items()}
            self._known[old] = (now, 1 / v.time_ratio)
        old_model = self.model
        self.model = old_model.with_session(sess)   # the runner-up's open session takes over
        with self._runners_lock:      # the old choice is now watched as a runner-up
            self._runners[old] = old_model.session
            self._pairs[old] = deque()
        self._switched(old, name, 'online', evidence, expected_ms=v.runner_ms)

    def _switched(self, old: str, new: str, trigger: str, evidence: str,
                  expected_ms: Optional[float] = None) -> None:
        """Record a switch; ``expected_ms``: the new backend's latency as just measured."""
        run = self.run
        for r in run.results:
            r.chosen = r.backend == new
        run.chosen, run.why = new, f'{trigger}: {evidence}'
        with self._runners_lock:    # runners may still be opening (another thread)
            for pairs in self._pairs.values():
                pairs.clear()       # pairs measured against the old choice
        self._recent.clear()
        self._chosen_ms.clear()     # the new choice's level is measured from its own frames
        self._costs.clear()
        self._served_models.clear()
        self._serve_next = None
        self._level = float('nan')
        res = self._result(new)
        if self.drift is not None:     # expect what the new backend was measured at
            self.drift.rebase(expected_ms if expected_ms is not None else
                              res.p50_ms if res else self.drift.expected_ms)
        self.switches.append({'t': time.monotonic(), 'from': old, 'to': new,
                              'trigger': trigger, 'evidence': evidence})
        if trigger == 'fallback':
            self.warn(f'{evidence}; falling back to {new}')
        else:
            self.warn(f'switching backend {old} -> {new} ({trigger}): {evidence}')
        self.report(run, trigger)

    # ---------------------------------------------------------------- fallback
    def _fall_back(self, exc: Exception) -> bool:
        """Replace a backend that raised by the next best measured one; False if none left."""
        failed = self.run.chosen if self.run else self.backend_name
        self._failed.add(failed)
        if self.run is None or not self._can_fall_back:
            return False
        self._drop_runner(failed)
        left = [r for r in self.run.results if r.backend not in self._failed]
        chosen, why = self.manager.select(left, self.spec, self.settings.objective,
                                          self.settings.max_latency_ms,
                                          self.settings.min_accuracy,
                                          self.settings.latency_percentile)
        first = f'{type(exc).__name__}: {first_line(exc)}'
        if chosen is None:
            self.warn(f'backend {failed} failed ({first}) and no other candidate is usable: '
                      f'{why}')
            return False
        with self._runners_lock:    # already open as a runner-up: no load on this frame
            sess = self._runners.pop(chosen.backend, None)
            self._pairs.pop(chosen.backend, None)
            self._known.pop(chosen.backend, None)
        if sess is not None:
            new = self.model.with_session(sess)
        else:
            backend = {b.name: b for b in self.manager.candidates(
                self.spec, self.model_path)}[chosen.backend]
            new = Model(self.spec, backend, self.models_dir, verify_checksum=False,
                        **self.overrides)
        old, self.model = self.model, new
        try:
            old.close()
        except Exception:  # the failed session may not close cleanly either
            pass
        self._switched(failed, chosen.backend, 'fallback', f'backend {failed} failed ({first})')
        return True

    # ------------------------------------------------------------------- drift
    def _start_reevaluation(self) -> None:
        if not self._reevaluating.acquire(blocking=False):
            return
        d = self.drift
        self.warn(f'latency drift: median {d.last_median_ms:.1f} ms over {d.window_s:g} s vs '
                  f'{d.expected_ms:.1f} ms profiled (x{d.last_median_ms / d.expected_ms:.2f}); '
                  f're-evaluating backends in the background')
        self._cancel.clear()
        self._spawn(self._reevaluate, 'reeval')

    def _reevaluate(self) -> None:
        try:
            with _REEVALUATION:
                names = [r.backend for r in self.run.results
                         if r.status == 'ok' and r.backend not in self._failed]
                run = self.manager.profile(self.spec, self.model_path, use_cache=False,
                                           min_accuracy=self.settings.min_accuracy,
                                           only=names, cancel=self._cancel, persist=False)
            if self._cancel.is_set():
                return
            chosen, why = self.manager.select(run.results, self.spec, self.settings.objective,
                                              self.settings.max_latency_ms,
                                              self.settings.min_accuracy,
                                              self.settings.latency_percentile)
            if chosen is None:
                self.log(f're-evaluation found no usable backend: {why}')
                return
            # keep the figures of candidates the re-run could not measure
            measured = {r.backend for r in run.results}
            run.results += [r for r in self.run.results if r.backend not in measured]
            for r in run.results:
                r.chosen = r is chosen
            old = self.run.chosen
            run.chosen, run.why = old, why
            if chosen.backend != old:
                backend = {b.name: b for b in self.manager.candidates(
                    self.spec, self.model_path)}[chosen.backend]
                self._pending_why = (chosen.backend, why)
                self._pending_run = run
                self._pending = Model(self.spec, backend, self.models_dir,
                                      verify_checksum=False, **self.overrides)
            else:   # applied between frames: drift.add() runs on the frame thread
                self._pending_keep = (run, chosen.p50_ms)
        except Exception as exc:  # keep serving on the current backend
            self.log(f're-evaluation failed: {type(exc).__name__}: {exc}')
        finally:
            self._reevaluating.release()

    def _swap_pending(self) -> None:
        new, self._pending = self._pending, None
        name, why = self._pending_why
        old_name = self.run.chosen
        old, self.model = self.model, new
        self.run = self._pending_run
        old.close()
        self._drop_runner(name)
        self._switched(old_name, name, 'drift', why)

    # ------------------------------------------------------------------ close
    def cancel(self) -> None:
        """Stop background work at its next check (re-evaluation between candidates)."""
        self._cancel.set()
        self._served.set()      # a profile waiting for the first frame stops waiting

    def wait_reevaluation(self, timeout: float = 120.0) -> bool:
        """Wait for a background re-evaluation to end, not cancelling it; False if none ran.

        For a benchmark that runs several runtimes side by side in one process:
        one's re-profiling would otherwise slow the others' frames.
        """
        running = [x for x in self._threads if x.name.endswith('-reeval') and x.is_alive()]
        for th in running:
            th.join(timeout=timeout)
        return bool(running)

    def join(self, timeout: float = 30.0) -> None:
        """Wait for background work to end."""
        self.cancel()
        for t in self._threads:
            t.join(timeout=timeout)
        self._threads = []

    def close(self) -> None:
        """Stop background work and free every session."""
        self.join()
        with self._runners_lock:
            runners, self._runners = dict(self._runners), {}
            self._pairs = {}
        for sess in runners.values():
            sess.close()
        for model in (self.model, self._pending):
            if model is not None:
                model.close()
        self.model = self._pending = None

    def overhead(self, since_start: bool = False) -> float:
        """Return the runners-up's extra time / the chosen one's (the duty actually spent).

        Over the last ``horizon_s`` (the bound), or ``since_start``. A frame a
        runner-up ran counts what it took beyond the chosen one's level as extra.
        """
        if since_start:
            return self.spent_ms[1] / self.spent_ms[0] if self.spent_ms[0] else 0.0
        now = time.monotonic()
        primary = self._primary.total(now)
        return self._shadow.total(now) / primary if primary else 0.0
