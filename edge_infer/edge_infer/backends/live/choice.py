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
orchestrates the pieces that do it; what serves (the Model, its run, the
frame lock, every switch) is its :class:`.server.Server`:

- **online re-selection** (objective ``latency`` only): the runners-up stay
  open (:mod:`.runners_up`), are sampled on real frames at a pace within
  ``duty`` (:mod:`.pacing`), eagerly when the load changed
  (:mod:`.load_watch`), and one takes over when the switch rule says it was
  faster (:mod:`.rule`);
- **drift** (:mod:`.drift`): a latency that stays over ``drift_threshold``
  x the profile (or the model's level in this graph of models, learned and
  cached: :mod:`.graph_level`) times the runners-up at once, or (none open)
  measures every candidate again in the background;
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
from typing import Callable, List, Optional

from .background import BackgroundWork
from .budget import RunnerBudget
from .context import ChoiceContext, Log, Manager
from .drift import DriftMonitor, Reevaluated, Reevaluation
from .fallback import Failures, next_best
from .graph_level import GraphLevel
from .load_watch import Foreign, LoadWatch, Observer
from .looks import RunnerLooks
from .pacing import Pacing
from .rule import LiveSettings, Verdict
from .runners_up import OPENINGS, RunnerHours, RunnerPool
from .sampling import RunnerSampling
from .server import Server
from .startup import BackgroundProfile, provisional
from ..measure.gate import GATE
from ..measure.profiling import CandidateResult, ProfileRun
from ..measure.selection import latency_at, stalls
from ...core.image import ImageError
from ...core.model import Model, Result
from ...core.postprocess import OutputError
from ...core.registry import ModelSpec


class LiveChoice:
    """One model's backend at run time: chosen, watched, switched between frames."""

    def __init__(self, manager: Manager, spec: ModelSpec, model_path: pathlib.Path,
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
        # what serves (the Model, its run, every switch); everything else here decides
        self.server = Server(clock, lambda run, trigger: self.report(run, trigger),
                             lambda: self.log, lambda: self.warn, spec.name)
        self.fixed = False                  # forced / executor: never switched by measurement
        self._can_fall_back = True          # False for a fixed executor backend
        self.drift: Optional[DriftMonitor] = None
        self._failed = Failures(self.clock, self.settings.remote_retry_s)
        self.runners = RunnerPool(self.settings)
        self.hours = RunnerHours(self.settings)
        self._drift_look = float('-inf')    # a drift alarm's look began then
        self.pacing = Pacing(self.settings)
        self.load_watch = LoadWatch(self.settings, foreign_load, observer)
        self._cancel = threading.Event()
        self.background = BackgroundWork()
        # log and warn are read at each line: a caller may route them elsewhere later
        self.ctx = ctx = ChoiceContext(
            manager, spec, self.model_path, self.settings, lambda line: self.log(line),
            lambda line: self.warn(line), clock, self._cancel, self._open_model, self._spawn)
        # the parts: the profile behind a provisional start, the drift re-evaluation
        self.startup = BackgroundProfile(ctx, lambda: self.backend_name, self._handover)
        # the process's runner-up memory is shared by its models' looks (one manager)
        self.sampling = RunnerSampling(ctx, self.runners, self.pacing,
                                       lambda: (self.model, self.run), self._promote,
                                       self._drop_runner, self.server.switches, observer)
        self.looks = RunnerLooks(ctx, self.runners, self.hours, getattr(
            manager, 'runner_budget', None) or RunnerBudget())
        self.reevaluation = Reevaluation(ctx, lambda: (self.run, self._failed), observer)
        self.graph = GraphLevel(ctx, self.startup, self.reevaluation, self.runners, self.hours)

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
            pick = provisional(self.manager, self.spec, self.model_path, st)
            if pick is not None:
                backend, run = pick
                self.server.serve(self._open_model(backend), run, 'provisional')
                self.startup.begin()
                return run
        if backend is None:
            backend, run = self.manager.choose(
                self.spec, self.model_path, objective=st.objective,
                max_latency_ms=st.max_latency_ms, min_accuracy=st.min_accuracy, force=force,
                use_cache=use_cache, latency_percentile=st.latency_percentile)
        if run is None:
            raise ValueError('LiveChoice.start(backend=...) needs the run that chose it')
        self.fixed = bool(force)
        self.server.serve(self._open_model(backend), run, 'forced' if force else 'configure')
        self._watch()
        return run

    def _watch(self) -> None:
        """Start keeping the measured choice right: the drift monitor, the runners-up."""
        st = self.settings
        chosen = self._result(self.run.chosen if self.run else None)
        if st.drift_threshold and not self.fixed and chosen is not None:
            self.drift = DriftMonitor(self.graph.expect(chosen.backend, chosen.p50_ms),
                                      st.drift_threshold, st.drift_window_s)
        # the switch rule compares time: for the energy / edp objectives it would
        # override the measured choice, so they keep drift and fallback only
        if st.duty > 0 and st.objective == 'latency' and not self.fixed and \
                self.manager is not None:
            self.load_watch.start()
            self.looks.watching = True
            self.hours.cue(self.clock.monotonic())      # a fresh choice: look for a while
            self.hours.standby = (chosen.backend if chosen else '').startswith('triton/')
            if not self.hours.lazy:     # always open; else the first frame opens them
                self._spawn(self._open_runners, 'runners')      # within the memory budget

    def fix(self, backend, run: ProfileRun) -> ProfileRun:
        """Open ``backend`` as a fixed choice (no re-selection: e.g. the shared executor)."""
        self.fixed = True
        self._can_fall_back = False
        self.server.serve(self._open_model(backend), run, 'configure')
        return run

    @property
    def provisional(self) -> bool:
        """Return True while a provisional backend serves (the profile runs behind it)."""
        return self.startup.provisional

    @property
    def settled_s(self) -> float:
        """Return how long the profile behind a provisional start took to settle (nan: none)."""
        return self.startup.settled_s

    def resume(self) -> None:
        """Go on with a background profile that a cancel stopped before it was complete."""
        if self.model is not None:
            self.startup.resume()

    @property
    def backend_name(self) -> str:
        """Return the name of the backend the next frame runs on."""
        return self.server.backend_name

    @property
    def model(self) -> Optional[Model]:
        """Return the Model the next frame runs on (the server's)."""
        return self.server.model

    @property
    def run(self) -> Optional[ProfileRun]:
        """Return the profile run behind the serving choice (the server's)."""
        return self.server.run

    @property
    def switches(self) -> List[dict]:
        """Return every switch so far: time, from, to, trigger, evidence."""
        return self.server.switches

    def _open_model(self, backend) -> Model:
        return Model(self.spec, backend, self.models_dir, verify_checksum=False,
                     clock=self.clock, **self.overrides)

    def _result(self, name: Optional[str]) -> Optional[CandidateResult]:
        return self.server.result(name)

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
        results = self.run.results if self.run else []
        ok = [r for r in results if r.status == 'ok' and not r.cut_short and
              r.backend not in self._failed and math.isfinite(r.p50_ms) and
              not (guard and stalls(r, guard))]    # a staller could win 10 calm pairs
        return sorted(ok, key=lambda r: latency_at(r, pct))

    def _open_runners(self) -> None:
        """Open the best runners-up (background: the first frames do not wait for them)."""
        run, model = self.run, self.model
        if run is not None and run.chosen and model is not None:
            self.looks.open_look([r.backend for r in self._ranked()], run.chosen,
                                 model.spec.input_spec)

    def _tend_runners(self, now: float) -> None:
        """Open the runners-up when due, close them when idle (frame thread: none in use)."""
        todo = self.looks.tend(now)
        if todo in ('close', 'next'):
            self.sampling.serve_next = None
        if todo in ('open', 'next'):
            self.pacing.cue(now)
            self._spawn(self._open_runners, 'runners')

    # ------------------------------------------------------------------ frames
    def infer(self, frame, around_run=None) -> Result:
        """Run one frame on the chosen backend; switch first if a switch is due.

        ``around_run``: Model.infer's hook, called for each run (again when the
        frame is run a second time after a fallback).
        """
        with self.server.frame, GATE.shared(self.spec.name):
            result = self._infer(frame, around_run)
        self.startup.first_served.set()
        return result

    def _infer(self, frame, around_run) -> Result:
        done = self.reevaluation.take()
        if done is not None:
            self._reevaluated(done)
        name, self.sampling.serve_next = self.sampling.serve_next, None
        if name is not None:
            result = self.sampling.serve(name, frame, around_run)
            if result is not None:
                return result
        self.pacing.frames_since_served += 1
        if self.model is None:
            raise RuntimeError(f'{self.spec.name}: no model open (not started, or closed)')
        try:
            result = self.server.infer(frame, around_run)
        except Exception as exc:
            if isinstance(exc, (ImageError, OutputError)) or not self._fall_back(exc):
                raise
            result = self.server.infer(frame, around_run)   # the next best one opened
        self._observe(result.inference_ms, result.preprocess_ms)
        return result

    def _observe(self, ms: float, pre_ms: float = 0.0) -> None:
        now = self.clock.monotonic()
        self.pacing.chosen_ran(now, ms, (OPENINGS.busy, OPENINGS.ended), frame_ms=ms + pre_ms)
        why = self.load_watch.latency(now, ms)
        if why is not None:     # a cue to look, not proof: pairs are kept
            self._alert(now, why)
        looking = bool(self.runners) or (self.looks.watching and self.hours.lazy)
        if looking and self.load_watch.due(now):
            change = self.load_watch.poll(now)
            if change is not None:
                self._alert(now, *change)
        if not self.manager.profiling():    # the process's own profile loads the cores
            self.graph.frame(self.drift, ms, now)     # the level in this graph, learned
            if self.drift is not None and self.drift.add(ms, now):
                self._drift_fired(now, looking)
        self.sampling.judge_served()
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
        return not self.fixed and self.sampling.after_frame()

    @property
    def shadow_runs(self) -> int:
        """Return how many runner-up samples were taken (served frames among them)."""
        return self.sampling.shadow_runs

    @property
    def served_frames(self) -> int:
        """Return how many frames a runner-up served."""
        return self.sampling.served_frames

    def _drop_runner(self, name: str) -> None:
        self.runners.drop(name)
        self.pacing.forget(name)

    def _promote(self, name: str, v: Verdict, evidence: str) -> None:
        """Switch to runner-up ``name``: its open session takes over (two looks passed)."""
        assert self.run is not None and self.run.chosen and self.model is not None
        # the old choice is now watched as a runner-up
        old, old_model = self.run.chosen, self.model
        sess = self.runners.promote(name, old, old_model.session, v.time_ratio,
                                    self.clock.monotonic())
        self.server.swap(old_model.with_session(sess), close_old=False)
        self._switched(old, name, 'online', evidence, expected_ms=v.runner_ms)

    def _switched(self, old: str, new: str, trigger: str, evidence: str,
                  expected_ms: Optional[float] = None) -> None:
        """Record a switch; ``expected_ms``: the new backend's latency as just measured."""
        # what was measured of the old choice says nothing of the new one
        self.runners.new_choice()
        self.load_watch.new_choice()
        self.pacing.new_choice()
        self.sampling.serve_next = None
        res = self._result(new)
        if self.drift is not None:     # expect what the new backend was measured at
            self.graph.rebase(self.drift, new, expected_ms if expected_ms is not None else
                              res.p50_ms if res else self.drift.expected_ms)
        self.hours.cue(self.clock.monotonic())
        self.hours.standby = new.startswith('triton/')     # a server: the runners-up stay open
        self.server.record(old, new, trigger, evidence)    # the run's chosen flags, the report

    def _handover(self, new: Optional[Model], run: ProfileRun, took: float, phase: str,
                  rest: str, settled: Callable[[], bool]) -> bool:
        """Take a background profile's choice between two frames (:mod:`.startup`)."""
        with self.server.frame:     # between two frames
            if self._cancel.is_set() or self.model is None:
                if new is not None:
                    new.close()
                return False
            old = self.backend_name
            first = settled()
            self.server.swap(new, run)
            if new is not None:
                self.runners.drop(new.backend_name)     # it serves now: no runner-up twice
            if new is None and not first:   # a completion that kept the choice
                measured = sum(1 for r in run.results if r.status != 'unavailable' and
                               not run.from_cache.get(r.backend, True))
                self.log(f'profile completed in {took:.1f} s ({measured} more candidate(s) '
                         f'measured): keeping {old}')
                self.report(run, 'profiled')    # the whole table now
                return True
            self.pacing.new_choice()    # the provisional one's frames say nothing of it
            self.load_watch.new_choice()
            self.runners.new_choice()
            self.log(f'profile {phase} in {took:.1f} s: '
                     + (f'switching backend {old} -> {run.chosen}' if new is not None else
                        f'keeping {old}') + f' (profiled){rest if first else ""}')
            self.server.record(old, run.chosen or '', 'profiled', run.why, chosen=False)
            if first:
                self._watch()
            else:
                res = self._result(run.chosen)
                if res is not None:
                    self.graph.rebase(self.drift, res.backend, res.p50_ms)
                if self.runners or not self.hours.lazy:
                    self._spawn(self._open_runners, 'runners')
                else:   # a look at the new ranking, opened by a frame within the budget
                    self.hours.cue(self.clock.monotonic())
        return True

    def _drift_fired(self, now: float, looking: bool) -> None:
        """Act on a firing: time the open runners-up on real frames, or re-measure all."""
        d = self.drift
        assert d is not None
        if not (looking and self.settings.duty > 0):
            self.reevaluation.start(d)
        elif d.new_episode:
            # online re-selection is on: compare the runners-up on the next real
            # frames (paired, same load) rather than re-profile every candidate
            # in the background, which competes with the frames for the cores
            self.log(f'latency drift: median {d.last_median_ms:.1f} ms vs '
                     f'{d.expected_ms:.1f} ms expected; timing the runners-up on the '
                     f'next frames')
            self._alert(now, 'latency drift', since=now - d.window_s)
            self._drift_look = now
        elif self.hours.lazy and self.hours.answered_at < self._drift_look:
            return      # the look has not been answered yet (waiting for memory, or timing)
        else:   # a cooldown of looks kept the choice: this load is the level now
            self.graph.accept(d)    # and stored: the next start expects it
            self.log(f'latency {d.expected_ms:.1f} ms under this load: the runners-up '
                     f'were timed beside {self.backend_name} and none won; expected now')

    def _reevaluated(self, done: Reevaluated) -> None:
        """Apply a background re-evaluation (frame thread): switch, or keep and rebase."""
        if done.model is None:      # the choice stays: expect what it was just measured at
            self.server.swap(None, done.run)
            self.graph.rebase(self.drift, done.backend, done.p50_ms, ends_episode=False)
            self.report(done.run, 'drift')
            return
        old_name = done.run.chosen or ''
        self.server.swap(done.model, done.run)      # the old model closed
        self._drop_runner(done.backend)
        self._switched(old_name, done.backend, 'drift', done.why)

    def _fall_back(self, exc: Exception) -> bool:
        """Replace a backend that raised by the next best measured one; False if none left."""
        failed = self.run.chosen if self.run and self.run.chosen else self.backend_name
        self._failed.add(failed)
        if self.run is None or not self._can_fall_back or self.model is None:
            return False
        self._drop_runner(failed)
        got = next_best(self.ctx, self.run, self._failed, self.runners, self.model, exc)
        if got is None:
            return False
        name, new, evidence = got
        old = self.server.swap(new, close_old=False)
        with contextlib.suppress(Exception):    # the failed session may not close cleanly
            if old is not None:
                old.close()
        self._switched(failed, name, 'fallback', evidence)
        return True

    # ------------------------------------------------------------------ close
    def cancel(self) -> None:
        """Stop background work at its next check (re-evaluation between candidates)."""
        self._cancel.set()
        self.startup.first_served.set()     # a profile waiting for the first frame stops

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
        self.looks.close()
        self.reevaluation.close()
        self.graph.leave()
        self.server.close()
        return left

    def overhead(self, since_start: bool = False) -> float:
        """Return the runners-up's extra time / the chosen one's (the duty actually spent).

        Over the last ``horizon_s`` (the bound), or ``since_start``. A frame a
        runner-up ran counts what it took beyond the chosen one's level as extra.
        """
        return self.pacing.overhead(self.clock.monotonic(), since_start)
