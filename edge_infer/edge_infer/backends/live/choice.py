# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The run-time choice of one model's backend, frame by frame (no ROS).

    live = LiveChoice(manager, spec, model_path, models_dir, LiveSettings(), report=...)
    live.start()                       # choose (profile or cache) and open the model
    result = live.infer(frame)         # on the chosen backend (falls back if it raises)
    ... publish the result ...
    live.after_frame()                 # decide: load, drift, a switch, a runner-up timed
    live.close()

A profile says what was best when it was measured; the robot's load then
changes. :class:`LiveChoice` keeps the choice right while running. It is
two parts: what serves (the Model, its run, the frame lock, every switch)
is its :class:`.server.Server`; what decides is its
:class:`.selector.Selector`, which has the pieces below:

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

import pathlib
import threading
import time
from typing import Callable, List, Optional

from .background import BackgroundWork
from .batching import BatchPlan, plan_batch
from .context import ChoiceContext, Log, Manager, Runtime
from .load_watch import Foreign, Observer
from .rule import LiveSettings
from .selector import Selector
from .server import Server
from .startup import provisional
from ..measure.profiling import ProfileRun
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
                 clock=time, observer: Optional[Observer] = None,
                 runtime: Optional[Runtime] = None):
        """Keep one model's backend right at run time.

        ``foreign_load``: returns the cores other processes used since its last
        call (None: unknown); default: from /proc (:class:`.load_watch.ForeignLoad`).
        ``log`` / ``warn``: info and warning lines; ``scope``: a context manager
        factory entered around background work (a node routes the manager's
        lines under itself with it). ``clock``: ``monotonic()`` and
        ``perf_counter()``, the time module's by default. ``observer``: told
        what happens (:class:`Observer`), when given. ``runtime``: what the
        process's models share (``backends.runtime.Runtime``); default: the
        manager's.
        """
        self.manager = manager
        self.spec = spec
        self.model_path = pathlib.Path(model_path)
        self.models_dir = pathlib.Path(models_dir) if models_dir else self.model_path.parent
        self.settings = settings or LiveSettings()
        self.overrides = dict(overrides or {})
        self.log = log
        self.warn = warn or log
        self.report = report or (lambda run, trigger: None)
        self.clock = clock
        self.runtime = runtime or manager.runtime
        self._cancel = threading.Event()
        self._deciding = threading.Lock()   # one frame thread decides at a time
        self.background = BackgroundWork(spec.name, scope)
        # log, warn and report are read at each line: a caller may route them elsewhere later
        self.server = Server(clock, lambda run, trigger: self.report(run, trigger),
                             lambda: self.log, lambda: self.warn, spec.name)
        self.ctx = ChoiceContext(
            manager, spec, self.model_path, self.settings, lambda line: self.log(line),
            lambda line: self.warn(line), clock, self._cancel, self._open_model,
            self.background.spawn, self.runtime)
        self.selector = Selector(self.ctx, self.server, foreign_load, observer)
        self.batch = BatchPlan()    # frames one at a time until plan_batch says otherwise

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
                self.selector.startup.begin()
                return run
        if backend is None:
            backend, run = self.manager.choose(
                self.spec, self.model_path, objective=st.objective,
                max_latency_ms=st.max_latency_ms, min_accuracy=st.min_accuracy, force=force,
                use_cache=use_cache, latency_percentile=st.latency_percentile)
        if run is None:
            raise ValueError('LiveChoice.start(backend=...) needs the run that chose it')
        self.selector.fixed = bool(force)
        self.server.serve(self._open_model(backend), run, 'forced' if force else 'configure')
        self.selector.watch()
        return run

    def fix(self, backend, run: ProfileRun) -> ProfileRun:
        """Open ``backend`` as a fixed choice (no re-selection: e.g. the shared executor)."""
        self.selector.fixed = True
        self.selector.can_fall_back = False
        self.server.serve(self._open_model(backend), run, 'configure')
        return run

    @property
    def provisional(self) -> bool:
        """Return True while a provisional backend serves (the profile runs behind it)."""
        return self.selector.startup.provisional

    @property
    def settled_s(self) -> float:
        """Return how long the profile behind a provisional start took to settle (nan: none)."""
        return self.selector.startup.settled_s

    def resume(self) -> None:
        """Go on with a background profile that a cancel stopped before it was complete."""
        if self.server.model is not None:
            self.selector.startup.resume()

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

    # ------------------------------------------------------------------ frames
    def infer(self, frame, around_run=None) -> Result:
        """Run one frame on the backend the selector chose; fall back if it raises.

        ``around_run``: Model.infer's hook, called for each run (again when the
        frame is run a second time after a fallback). What the run took is
        kept for :meth:`after_frame`: nothing is decided on the frame's path.
        """
        server = self.server
        with server.frame, self.runtime.gate.shared(self.spec.name):
            try:
                result = server.infer(frame, around_run)
            except Exception as exc:
                if isinstance(exc, (ImageError, OutputError)) or \
                        not self.selector.fall_back(exc):
                    raise
                result = server.infer(frame, around_run)   # the next best one
        self.selector.startup.first_served.set()
        return result

    def plan_batch(self, cameras: int, mode: str) -> BatchPlan:
        """Measure (or read) whether ``cameras``' frames run in batches here (:mod:`.batching`).

        ``mode``: ``auto``, ``on`` or ``off``; BackendError where ``on`` cannot be.
        """
        self.batch.close()
        model = self.server.model
        assert model is not None    # started
        with self.runtime.gate.shared(self.spec.name):
            self.batch = plan_batch(model, cameras, mode, self.manager)
        return self.batch

    def infer_batch(self, frames, around_run=None) -> Optional[List[Result]]:
        """Run ``frames`` (one per camera) as one batch; None: run them one at a time.

        One at a time where the plan says a batch of so many does not pay,
        the serving backend is not the one the batch was measured on, or the
        batch session raised (then batching stops, said once; the frames are
        not lost: the caller runs them). A frame's own fault (ImageError,
        OutputError) is raised: run one at a time, only that frame is rejected.
        """
        plan, server = self.batch, self.server
        with server.frame, self.runtime.gate.shared(self.spec.name):
            if not plan.serves(server.backend_name, len(frames)):
                if plan.wanted(server.backend_name, len(frames)) and not plan.opening:
                    plan.opening = True     # the load calls for batches: open the session
                    self.background.spawn(lambda: self._open_batch(plan), 'batch')
                return None
            assert plan.model is not None
            try:
                results = plan.model.infer_batch(frames, around_run)
            except (ImageError, OutputError):
                raise
            except Exception as exc:
                self.warn(f'batches stopped, frames run one at a time: {plan.backend} at '
                          f'batch {plan.size} raised {type(exc).__name__}: {exc}')
                plan.close()
                self.batch = BatchPlan(why=f'stopped: {type(exc).__name__}: {exc}')
                return None
            server.ran_batch(results)
        self.selector.startup.first_served.set()
        return results

    def _open_batch(self, plan: BatchPlan) -> None:
        """Open ``plan``'s batch session (background); a failure stops batching, said once."""
        try:
            with self.runtime.gate.shared(self.spec.name):
                plan.reopen()
        except Exception as exc:
            self.warn(f'batches stopped, frames run one at a time: opening {plan.backend} at '
                      f'batch {plan.size} raised {type(exc).__name__}: {exc}')
            if self.batch is plan:
                self.batch = BatchPlan(why=f'stopped: {type(exc).__name__}: {exc}')
            return
        if self.batch is not plan:      # closed or planned again meanwhile
            plan.close()

    def after_frame(self) -> bool:
        """Decide after the frame's result is out (:meth:`.selector.Selector.after_frame`).

        Returns True if a runner-up was timed on the frame's input. Call it
        after each frame (or every few): switches, load and drift are judged here.
        """
        if not self._deciding.acquire(blocking=False):
            return False    # another frame thread decides now: its look takes this run too
        try:
            return self.selector.after_frame()
        finally:
            self._deciding.release()

    @property
    def shadow_runs(self) -> int:
        """Return how many runner-up samples were taken (served frames among them)."""
        return self.selector.sampling.shadow_runs

    @property
    def served_frames(self) -> int:
        """Return how many frames a runner-up served."""
        return self.selector.sampling.served_frames

    # ------------------------------------------------------------------ close
    def cancel(self) -> None:
        """Stop background work at its next check (re-evaluation between candidates)."""
        self._cancel.set()
        self.selector.startup.first_served.set()    # a profile waiting for the first frame stops

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
        self.selector.close()
        self.batch.close()
        self.batch = BatchPlan()    # a batch session still opening is closed when it is
        self.server.close()
        return left

    def overhead(self, since_start: bool = False) -> float:
        """Return the runners-up's extra time / the chosen one's (the duty actually spent).

        Over the last ``horizon_s`` (the bound), or ``since_start``. A frame a
        runner-up ran counts what it took beyond the chosen one's level as extra.
        """
        return self.selector.pacing.overhead(self.clock.monotonic(), since_start)
