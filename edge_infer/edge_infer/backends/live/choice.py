# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The run-time choice of one model's backend, frame by frame (no ROS).

    live = LiveChoice(manager, spec, model_path, models_dir, LiveSettings(), report=...)
    live.start()                       # choose (profile or cache) and open the model
    result = live.infer(frame)         # between frames: switch, fall back, observe
    ... publish the result ...
    live.after_frame()                 # maybe time one runner-up on the same input
    live.close()

A profile says what was best when it was measured; the robot's load then
changes. :class:`LiveChoice` keeps the choice right while running and
orchestrates the pieces that do it:

- **online re-selection** (objective ``latency`` only): the runners-up stay
  open (:mod:`.runners_up`), are sampled on real frames at a pace within
  ``duty`` (:mod:`.pacing`), eagerly when the load changed
  (:mod:`.load_watch`), and one takes over when the switch rule says it was
  faster (:mod:`.rule`);
- **drift** (:mod:`.drift`): a latency that stays over ``drift_threshold``
  x the profile times the runners-up at once, or (none open) measures every
  candidate again in the background;
- **fallback**: a backend that raises is replaced by the next best measured
  one and the frame is run again on it: no frame is lost;
- **provisional start** (:mod:`.startup`): an incomplete profile runs in
  the background while a provisional backend serves.

Every switch calls ``report(run, trigger)`` (``online``, ``drift``,
``fallback``, ``profiled``) with the evidence in ``run.why``, and logs one
line. Time is read from ``clock`` (the time module; tests and benchmarks
give a simulated one, :mod:`edge_infer.testing.simulated`), and an optional
:class:`Observer` is told every sample, load reading and cue. The reasons
and figures: docs/backend_choice.md, "A choice that stays right while the
load changes".
"""

import contextlib
import math
import pathlib
import threading
import time
from typing import Callable, List, Optional, Tuple

from .background import BackgroundWork
from .budget import rss_mb, RunnerBudget
from .drift import DriftMonitor, DriftReevaluation
from .fallback import fall_back
from .load_watch import Foreign, LoadWatch, Observer
from .pacing import expected_ratio, Pacing, pre_delta, SERVE
from .rule import dwell_margin, LiveSettings, two_looks
from .runners_up import OPENINGS, RunnerHours, RunnerPool, wanted
from .startup import ProvisionalStart
from ..measure.gate import GATE
from ..measure.profiling import CandidateResult, ProfileRun
from ..measure.selection import latency_at, stalls
from ...core.backend import first_line, input_kind
from ...core.model import Model, Result
from ...core.registry import ModelSpec

Log = Callable[[str], None]


class LiveChoice(ProvisionalStart, DriftReevaluation):
    """One model's backend at run time: chosen, watched, switched between frames."""

    def __init__(self, manager, spec: ModelSpec, model_path: pathlib.Path,
                 models_dir: Optional[pathlib.Path] = None,
                 settings: Optional[LiveSettings] = None, overrides: Optional[dict] = None,
                 log: Log = print, report: Optional[Callable[[ProfileRun, str], None]] = None,
                 warn: Optional[Log] = None, scope=None, foreign_load: Optional[Foreign] = None,
                 clock=time, observer: Optional[Observer] = None):
        """Keep one model's backend right at run time.

        ``foreign_load``: returns the cores other processes used since its last
        call (None: unknown); default: from /proc (:class:`.load_watch.ForeignLoad`).
        ``log`` / ``warn``: info and warning lines; ``scope``: a context manager
        factory entered around background work (a node routes the manager's
        lines under itself with it). ``clock``: ``monotonic()`` and
        ``perf_counter()``, the time module's by default. ``observer``: told
        what happens (:class:`Observer`), when given.
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
        self.clock = clock
        self.observer = observer
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
        self.shadow_runs = 0                # runner-up samples (served frames among them)
        self.served_frames = 0
        self._failed: set = set()
        self._pending: Optional[Model] = None     # set by a background re-evaluation
        self._pending_why: Tuple[str, str] = ('', '')
        self._pending_run: Optional[ProfileRun] = None
        self._pending_keep = None     # (run, p50): a re-evaluation kept the choice
        self.runners = RunnerPool(self.settings)
        self.hours = RunnerHours(self.settings)
        # the process's runner-up memory is shared by its models' looks (one manager)
        self.budget: RunnerBudget = getattr(manager, 'runner_budget', None) or RunnerBudget()
        self._runners_mb: Optional[float] = None    # what opening them added (last look)
        self._drift_look = float('-inf')    # a drift alarm's look began then
        self._opening = threading.Lock()    # one thread opens runners-up at a time
        self._watching = False              # online re-selection runs (see _watch)
        self.pacing = Pacing(self.settings)
        self.load_watch = LoadWatch(self.settings, foreign_load, observer)
        self._serve_next: Optional[str] = None     # the runner-up that runs the next frame
        self._cancel = threading.Event()
        self.background = BackgroundWork()
        self._reevaluating = threading.Lock()
        self._resuming = threading.Lock()       # the profile thread's end vs a resume
        self._profiling = False                 # a background profile thread runs
        self._completion_due = False            # settled on the likely ones; the rest to come
        self._candidate_count = 0
        self._settle_only: Optional[List[str]] = None     # what the settle phase measured

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
        self.model = self._open_model(backend)
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
            self.load_watch.start()
            self._watching = True
            self.hours.cue(self.clock.monotonic())      # a fresh choice: look for a while
            if not self.hours.lazy:     # always open; else the first frame opens them
                self._spawn(self._open_runners, 'runners')      # within the memory budget

    def fix(self, backend, run: ProfileRun) -> ProfileRun:
        """Open ``backend`` as a fixed choice (no re-selection: e.g. the shared executor)."""
        self.fixed = True
        self._can_fall_back = False
        self.model = self._open_model(backend)
        self.run = run
        self.report(run, 'configure')
        return run

    @property
    def backend_name(self) -> str:
        """Return the name of the backend the next frame runs on."""
        return self.model.backend_name if self.model else ''

    def _open_model(self, backend) -> Model:
        return Model(self.spec, backend, self.models_dir, verify_checksum=False,
                     clock=self.clock, **self.overrides)

    def _result(self, name: Optional[str]) -> Optional[CandidateResult]:
        return next((r for r in self.run.results if r.backend == name), None) \
            if self.run else None

    def _spawn(self, target, what: str) -> None:
        def scoped():
            with self.scope():
                target()
        self.background.spawn(scoped, f'{self.spec.name}-{what}')

    @property
    def _threads(self) -> List[threading.Thread]:
        return self.background.threads

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
        if not self._opening.acquire(blocking=False):
            return      # another thread opens them
        try:
            by_name = {b.name: b for b in self.manager.candidates(self.spec, self.model_path)}
            ranked = [r.backend for r in self._ranked()
                      if r.backend != self.run.chosen and r.backend in by_name]
            threads = {n: getattr(b, 'intra_op_threads', None) for n, b in by_name.items()}
            want = wanted(ranked, threads, self.run.chosen, self.settings.runners_up)
            before, whole = rss_mb(), not self.runners     # a whole look's size, not a top-up
            self.runners.open_sessions(want, by_name, self.model_path,
                                       self.model.spec.input_spec, self._cancel, self.log)
            if self.runners and whole:
                self._runners_mb = max(1.0, rss_mb() - before)
                self.budget.measured(self, self._runners_mb)
        except Exception as exc:  # keep serving on the chosen backend
            self.log(f'online re-selection off: {type(exc).__name__}: {exc}')
        finally:
            if not self.runners:    # none could open: this look ends, its memory is free
                self.budget.release(self)
                self.hours.until = self.hours.answered_at = self.clock.monotonic()
            self._opening.release()

    def _tend_runners(self, now: float) -> None:
        """Open the runners-up when due, close them when idle (frame thread: none in use)."""
        if not self._watching or self._opening.locked():
            return
        todo = self.hours.tend(now, self.runners)
        if todo == 'open':
            if not self.budget.acquire(self, self._runners_mb, self.settings.runners_memory_mb):
                self.hours.wait(now)    # another model's look holds the memory: in turn
                return
            self.hours.cue(now)     # the look begins now: its pairs count from here
            self.pacing.cue(now)
            self._spawn(self._open_runners, 'runners')
        elif todo == 'close':
            self.runners.close()
            self.budget.release(self)
            self._serve_next = None
            from ..measure.memory import release_freed_memory
            # closed, so nothing for the collector: a gc pass would hold every frame's GIL
            self._spawn(lambda: release_freed_memory(collect=False), 'trim')

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
            self.drift.rebase(p50, ends_episode=False)     # no switch: the same episode
            self.report(run, 'drift')
        name, self._serve_next = self._serve_next, None
        if name is not None:
            result = self._serve(name, frame, around_run)
            if result is not None:
                return result
        self.pacing.frames_since_served += 1
        try:
            result = self.model.infer(frame, around_run=around_run)
        except Exception as exc:
            from ...core.image import ImageError
            from ...core.postprocess import OutputError
            if isinstance(exc, (ImageError, OutputError)) or not self._fall_back(exc):
                raise
            result = self.model.infer(frame, around_run=around_run)
        self._observe(result.inference_ms, result.preprocess_ms)
        return result

    def _serve(self, name: str, frame, around_run) -> Optional[Result]:
        """Run the frame on runner-up ``name`` (its result goes out); None: it could not."""
        if not self.pacing.reference_full():
            return None
        model = self.runners.model(name, self.model)
        if model is None:
            return None
        now = self.clock.monotonic()
        try:
            result = model.infer(frame, around_run=around_run)
        except Exception as exc:
            from ...core.image import ImageError
            if isinstance(exc, ImageError):
                raise       # the frame's fault, not the backend's
            self.log(f'runner-up {name} failed ({first_line(exc)}): no longer watched')
            self._drop_runner(name)
            return None     # the chosen one runs the frame: none is lost
        self.pacing.frames_since_served = 0
        self.served_frames += 1
        # the frame's own cost, preprocessing included: a +pre candidate's input differs,
        # and under load the CPU preprocessing is no longer what the profile said
        self.pacing.served(name, now, result.preprocess_ms + result.inference_ms)
        return result

    def _observe(self, ms: float, pre_ms: float = 0.0) -> None:
        now = self.clock.monotonic()
        self.pacing.chosen_ran(now, ms, (OPENINGS.busy, OPENINGS.ended), frame_ms=ms + pre_ms)
        why = self.load_watch.latency(now, ms)
        if why is not None:     # a cue to look, not proof: pairs are kept
            self._alert(now, why)
        looking = bool(self.runners) or (self._watching and self.hours.lazy)
        if looking and self.load_watch.due(now):
            change = self.load_watch.poll(now)
            if change is not None:
                self._alert(now, *change)
        if self.drift is not None and self.drift.add(ms, now):
            self._drift_fired(now, looking)
        for name, t, ref, runner_ms in self.pacing.judged():     # served frames, now judged
            if self.run is not None and name in self.runners:
                self._sampled(name, t, ref, runner_ms, max(0.0, runner_ms - ref), served=True)
        self._tend_runners(now)

    def _alert(self, now: float, why: str, since: Optional[float] = None) -> None:
        """Look now (eager runs); with ``since`` (the load changed then) forget older pairs."""
        self.pacing.cue(now)
        self.hours.cue(now)
        if since is not None:
            self.runners.forget_before(since)
        if self.observer is not None:
            self.observer.alert(now, why)

    def after_frame(self) -> bool:
        """Time one runner-up on the last frame's input when the duty allows; True if it did."""
        # after a served frame no chosen run is there to pair with
        if self.fixed or not self.runners or self.model is None or \
                not self.pacing.may_pair() or getattr(self.model, 'last_input', None) is None:
            return False
        now = self.clock.monotonic()
        picked = self.runners.pick(now)
        if picked is None:
            return False
        name, ratio = picked
        if not self.pacing.due(now, ratio, len(self.runners.pairs(name))):
            return False
        how = self.pacing.allows(now, self._expected_ratio(name))
        if how is None:
            return False
        self.runners.rotation += 1
        if how == SERVE:
            self._serve_next = name     # the next frame runs on it
            return False
        sess = self.runners.get(name)
        try:
            x = self.model.input_for(input_kind(sess))
            with GATE.shared():
                t = self.clock.perf_counter()
                sess.run(x)
                ms = (self.clock.perf_counter() - t) * 1e3 + self._pre_delta(name)
        except Exception as exc:  # a runner-up that fails is dropped, not fatal
            self.log(f'runner-up {name} failed ({first_line(exc)}): no longer watched')
            self._drop_runner(name)
            return False
        self._sampled(name, now, self.pacing.last_ms, ms, ms)
        return True

    def _expected_ratio(self, name: str) -> float:
        """Return runner-up ``name``'s time / the chosen one's: as last seen, else profiled."""
        return expected_ratio(self.runners.ratio(name), self._result(self.run.chosen),
                              self._result(name))

    def _pre_delta(self, name: str) -> float:
        """Return runner-up ``name``'s CPU preprocessing minus the chosen one's (profiled)."""
        return pre_delta(self._result(self.run.chosen), self._result(name))

    def _sampled(self, name: str, now: float, chosen_ms: float, ms: float, cost: float,
                 served: bool = False) -> None:
        """Record one sample of runner-up ``name`` (``cost``: the compute it added), judge."""
        if name not in self.runners:
            return
        self.shadow_runs += 1
        self.pacing.spent(name, now, cost, chosen_ms, served, len(self.runners))
        self.runners.record(name, now, chosen_ms, ms)
        if self.observer is not None:
            self.observer.paired(now, self.run.chosen, name, chosen_ms, ms)
        self._consider(name, now)

    def _drop_runner(self, name: str) -> None:
        self.runners.drop(name)
        self.pacing.forget(name)

    def _consider(self, name: str, now: float) -> None:
        """Switch to runner-up ``name`` when two looks at its pairs pass (:func:`two_looks`)."""
        decided = two_looks(self.runners, name, now, self.settings, self.run.chosen,
                            dwell_margin(self.settings, self.switches, name, now), self.log)
        if decided is None:
            return
        v, evidence = decided
        # the runner-up's open session takes over; the old choice is now watched as one
        old, old_model = self.run.chosen, self.model
        sess = self.runners.promote(name, old, old_model.session, v.time_ratio, now)
        self.model = old_model.with_session(sess)
        self._switched(old, name, 'online', evidence, expected_ms=v.runner_ms)

    def _switched(self, old: str, new: str, trigger: str, evidence: str,
                  expected_ms: Optional[float] = None) -> None:
        """Record a switch; ``expected_ms``: the new backend's latency as just measured."""
        run = self.run
        for r in run.results:
            r.chosen = r.backend == new
        run.chosen, run.why = new, f'{trigger}: {evidence}'
        # what was measured of the old choice says nothing of the new one
        self.runners.new_choice()
        self.load_watch.new_choice()
        self.pacing.new_choice()
        self._serve_next = None
        res = self._result(new)
        if self.drift is not None:     # expect what the new backend was measured at
            self.drift.rebase(expected_ms if expected_ms is not None else
                              res.p50_ms if res else self.drift.expected_ms)
        self.hours.cue(self.clock.monotonic())
        self.switches.append({'t': self.clock.monotonic(), 'from': old, 'to': new,
                              'trigger': trigger, 'evidence': evidence})
        if trigger == 'fallback':
            self.warn(f'{evidence}; falling back to {new}')
        else:
            self.warn(f'switching backend {old} -> {new} ({trigger}): {evidence}')
        self.report(run, trigger)

    def _fall_back(self, exc: Exception) -> bool:
        """Replace a backend that raised by the next best measured one; False if none left."""
        return fall_back(self, exc)

    # ------------------------------------------------------------------ close
    def cancel(self) -> None:
        """Stop background work at its next check (re-evaluation between candidates)."""
        self._cancel.set()
        self._served.set()      # a profile waiting for the first frame stops waiting

    def join(self, timeout: float = 30.0) -> List[str]:
        """Cancel background work, wait up to ``timeout`` s in all; return what still runs.

        A thread inside one measurement ends by itself after it (:mod:`.background`).
        """
        self.cancel()
        return self.background.join(timeout)

    def close(self, timeout: float = 30.0) -> List[str]:
        """Stop background work (waiting up to ``timeout`` s) and free every session.

        Returns the background threads still running (see :meth:`join`).
        """
        left = self.join(timeout)
        self.runners.close()
        self.budget.forget(self)
        for model in (self.model, self._pending):
            if model is not None:
                model.close()
        self.model = self._pending = None
        return left

    def overhead(self, since_start: bool = False) -> float:
        """Return the runners-up's extra time / the chosen one's (the duty actually spent).

        Over the last ``horizon_s`` (the bound), or ``since_start``. A frame a
        runner-up ran counts what it took beyond the chosen one's level as extra.
        """
        return self.pacing.overhead(self.clock.monotonic(), since_start)
