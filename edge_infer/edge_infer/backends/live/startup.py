# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A first result seconds after start: a provisional backend while the profile runs (no ROS).

Measuring every candidate on a first start (nothing cached) took 19-40 s per
model on a 2-core board, and the node served nothing meanwhile. Now a model
whose profile is incomplete starts on a **provisional** backend at once:

- the cache's choice among the candidates it already has figures for (a
  board that gained a library keeps its old choice meanwhile), else
- the first available candidate of ``start_order`` (config/backends.yaml)
  within the thread budget: OpenVINO's fp32 CPU session where OpenVINO is
  installed (0.1-0.17 s per model; the library most boards here serve
  with, so a first start imports no other into the serving process), else
  ONNX Runtime on the CPU (0.01-0.03 s).

The profile then runs in the background (:class:`BackgroundProfile`) and the
measured choice takes over between two frames, with one log line and a
``BackendReport`` (trigger ``profiled``); every result names the backend
that ran it, so a subscriber sees the switch.

Our own frames must not slow the candidates being timed (the figures would
describe a busy board and be cached as the board's profile), nor the other
way round: the compute gate (the runtime's) keeps them apart.
"""

import threading
from typing import Callable, List, Optional, Tuple

from .context import ChoiceContext
from ..measure.profiling import describe, ProfileRun
from ..measure.settle import settle_set
from ...core.backend import first_line
from ...core.model import Model

# (new model or None: kept, the run, seconds it took, phase, the settle-set note,
# settled: called between two frames, returns True for the first hand-over) -> True
# when handed over; False: cancelled or closed meanwhile (``new`` is closed then)
Handover = Callable[[Optional[Model], ProfileRun, float, str, str, Callable[[], bool]], bool]


def provisional(manager, spec, model_path, settings) -> Optional[Tuple[object, ProfileRun]]:
    """Return (backend, run) to serve on while the profile runs; None if it is complete.

    None too when no provisional candidate is usable: the caller then profiles
    before serving, as before. ``run`` holds the cached figures, an
    ``unmeasured`` entry for each candidate still to measure, and the reason.
    """
    run = manager.profile(spec, model_path, use_cache=True,
                          min_accuracy=settings.min_accuracy, measure=False)
    todo = [r.backend for r in run.results if r.status == 'unmeasured']
    if not todo:
        return None
    by_name = {b.name: b for b in manager.candidates(spec, model_path)}
    chosen, why = manager.select(run.results, spec, settings.objective,
                                 settings.max_latency_ms, settings.min_accuracy,
                                 settings.latency_percentile)
    later = f'{len(todo)} candidate(s) not measured yet, profiling in the background'
    if chosen is not None and chosen.backend in by_name:
        name, why = chosen.backend, f"the cached profile's choice ({why}); {later}"
    else:
        name = next((n for n in manager.config['start_order']
                     if n in by_name and not manager.over_budget(by_name[n]) and
                     by_name[n].available()[0]), None)
        if name is None:
            return None
        why = f'{name}: first usable of start_order (nothing cached yet); {later}'
    for r in run.results:
        r.chosen = r.backend == name
    if not any(r.chosen for r in run.results):
        run.results.append(describe(by_name[name], status='unmeasured', chosen=True,
                                    reason='not profiled yet'))
    run.chosen, run.why = name, why
    return by_name[name], run


class BackgroundProfile:
    """The profile that runs behind a provisional backend: a part of :class:`.choice.LiveChoice`.

    It measures in a background thread and hands each result over through
    ``handover`` (the chooser switches between two frames); ``serving`` names
    the backend serving now.
    """

    def __init__(self, ctx: ChoiceContext, serving: Callable[[], str], handover: Handover):
        self.ctx = ctx
        self._serving = serving
        self._handover = handover
        self.provisional = False            # serving while the profile runs
        self.settled_s = float('nan')       # how long the settle phase took
        self.first_served = threading.Event()   # a first frame was served
        self.profiling = False              # a background profile thread runs
        self.completion_due = False         # settled on the likely ones; the rest to come
        self._resuming = threading.Lock()   # the profile thread's end vs a resume
        self._candidate_count = 0
        self._settle_only: Optional[List[str]] = None     # what the settle phase measured

    def begin(self) -> None:
        """Start the background profile: a provisional backend serves now."""
        self.provisional = True
        self._enter_queue()
        with self._resuming:
            self.profiling = True
            self.ctx.spawn(self._behind, 'profile')

    def resume(self) -> None:
        """Go on with a background profile that a cancel stopped before it was complete.

        The profile thread may still be ending (inside a measurement when the
        cancel came, a deactivation that did not wait for it): it then sees
        the cancel lifted and profiles on (what it measured is cached);
        otherwise a new one starts.
        """
        if not (self.provisional or self.completion_due):
            return
        with self._resuming:
            self.ctx.cancel.clear()
            self.first_served.clear()
            if not self.profiling:
                if self.provisional:
                    self._enter_queue()
                self.profiling = True
                self.ctx.spawn(self._behind, 'profile')

    def _enter_queue(self, queue=None) -> None:
        """Enter the settle ``queue`` (or another), weighed by the model file's size."""
        try:
            weight = float(self.ctx.model_path.stat().st_size)
        except (OSError, AttributeError):
            weight = 0.0
        (queue or self.ctx.manager.settle_queue).enter(self, self.ctx.spec.name, weight)

    def _behind(self) -> None:
        """Profile while the provisional backend serves, again if resumed while ending."""
        try:
            while True:
                done = self._profile_once()
                with self._resuming:
                    if done or self.ctx.cancel.is_set():
                        self.profiling = False
                        return
        finally:
            self.ctx.manager.settle_queue.leave(self)
            self.ctx.manager.completion_queue.leave(self)

    def _profile_once(self) -> bool:
        """Settle, then complete the profile (:mod:`..measure.settle`); False: cancelled."""
        manager = self.ctx.manager
        # the first frame first: started at once, the profile's model loads and ncnn
        # conversions took the cores the camera driver, DDS discovery and the first
        # inference needed (first detection 3.6-4.1 s after `ros2 launch` instead of
        # 2.4 s on this VM)
        self.first_served.wait(self.ctx.settings.profile_after_s)
        if self.provisional:
            # the lightest model first; the settle set is decided when this
            # model's turn comes: the models measured before it are then in the
            # cache, and their prior cuts it
            if not manager.settle_queue.wait_turn(self, self.ctx.cancel):
                return False
            step = self._measure(self._likely if self.ctx.settings.settle_first else None,
                                 'done')
            if step is not True:
                return step is None
            manager.settle_queue.leave(self)
        if not self.completion_due:
            return True
        # the rest (int8 and fp16 files, the unlikely ones) once no model of the
        # process is still settling: a completion must not delay another's choice;
        # the lightest model first (what it measures screens the heavier ones' rest)
        self._enter_queue(manager.completion_queue)
        if not (manager.settle_queue.wait_settled(self.ctx.cancel) and
                manager.completion_queue.wait_turn(self, self.ctx.cancel)):
            return False
        step = self._measure(None, 'completed')
        manager.completion_queue.leave(self)
        if step is True:
            self.completion_due = False
        return step is not False

    def _likely(self) -> Optional[List[str]]:
        """Return the settle set (decided when this model's profile starts); None: all."""
        manager = self.ctx.manager
        cands = manager.candidates(self.ctx.spec, self.ctx.model_path)
        only = settle_set(manager, self.ctx.spec, cands)
        everything = {b.name for b in cands if not manager.over_budget(b)}
        self.completion_due = bool(only) and not everything <= set(only)
        self._candidate_count = len(everything)
        self._settle_only = list(only) if self.completion_due else None
        return self._settle_only

    def _settled(self, took: float) -> Callable[[], bool]:
        """Return what the hand-over calls between two frames: the provisional phase ends."""
        def settled() -> bool:
            first, self.provisional = self.provisional, False
            if first:
                self.settled_s = took
            return first
        return settled

    def _measure(self, only: Optional[Callable[[], Optional[List[str]]]],
                 phase: str) -> Optional[bool]:
        """Measure (``only`` these), hand the choice over between two frames.

        Returns True when handed over, False when cancelled, None when the
        profile failed (the choice stays; said in one line).
        """
        ctx, st = self.ctx, self.ctx.settings
        t0 = ctx.clock.monotonic()
        try:
            if ctx.cancel.is_set():
                return False
            backend, run = ctx.manager.choose(
                ctx.spec, ctx.model_path, objective=st.objective,
                max_latency_ms=st.max_latency_ms, min_accuracy=st.min_accuracy,
                latency_percentile=st.latency_percentile, cancel=ctx.cancel, only=only,
                screen=float(ctx.manager.config['screen_factor']) if phase == 'completed'
                else 0.0)
            new = ctx.open_model(backend) if backend.name != self._serving() else None
        except Exception as exc:  # keep serving on the backend serving now
            if ctx.cancel.is_set():
                return False
            if 'profile cancelled' in str(exc):     # resumed while it ended: again
                return False
            if only is not None and self._settle_only:  # none of the likely ones: all
                self.completion_due = False
                return self._measure(None, phase)
            ctx.warn(f'profile failed ({type(exc).__name__}: {first_line(exc)}): '
                     f'staying on {self._serving()}')
            return None
        rest = (f' (the likely ones first: {len(self._settle_only)} of '
                f'{self._candidate_count} candidates; the others follow)'
                if self._settle_only and self.completion_due else '')
        took = ctx.clock.monotonic() - t0
        return self._handover(new, run, took, phase, rest, self._settled(took))
