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
  the others has one) stay open, are sampled on real frames (served or as
  an extra run) within a ``duty``, and one takes over when the switch rule
  says it was faster: :mod:`.live_rule` says how, and why so;
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
import math
import pathlib
import statistics
import threading
import time
from typing import Callable, Deque, Dict, List, Optional, Tuple

from .drift import DriftMonitor, DriftReevaluation
from .gate import GATE
from .live_rule import ForeignLoad, LiveSettings, paired_verdict, Window
from .profiling import CandidateResult, ProfileRun
from .selection import latency_at, stalls
from .startup import ProvisionalStart
from ..core.backend import first_line, input_kind, open_session
from ..core.model import Model, Result
from ..core.registry import ModelSpec

Log = Callable[[str], None]


class LiveChoice(ProvisionalStart, DriftReevaluation):
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
        self._primary = Window(self.settings.horizon_s)
        self._shadow = Window(self.settings.horizon_s)
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
            run = self._start_provisional()
            if run is not None:
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
                self._foreign = ForeignLoad()
            self._spawn(self._open_runners, 'runners')

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
                    sess = open_session(by_name[name], self.model_path, self.model.spec.input_spec)
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
        ms = result.inference_ms + self._pre_delta(name)
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
        if getattr(self.model, 'last_input', None) is None or not math.isfinite(self._last_ms):
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
            x = self.model.input_for(input_kind(sess))
            with GATE.shared():
                t = time.perf_counter()
                sess.run(x)
                ms = (time.perf_counter() - t) * 1e3 + self._pre_delta(name)
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
            return (other.p50_ms + self._pre_delta(name)) / mine.p50_ms
        return float('inf')

    def _pre_delta(self, name: str) -> float:
        """Return runner-up ``name``'s CPU preprocessing minus the chosen one's (profiled).

        Live times compare runs; a runner-up that takes another input kind
        (a ``+pre`` candidate) costs that much more or less per frame.
        """
        mine, other = self._result(self.run.chosen), self._result(name)
        if mine is None or other is None or mine.input_kind == other.input_kind:
            return 0.0
        return other.pre_ms - mine.pre_ms

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
    # ------------------------------------------------------------------ close
    def cancel(self) -> None:
        """Stop background work at its next check (re-evaluation between candidates)."""
        self._cancel.set()
        self._served.set()      # a profile waiting for the first frame stops waiting

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
