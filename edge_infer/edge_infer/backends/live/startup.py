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

The profile then runs in the background (:class:`.choice.LiveChoice`) and the
measured choice takes over between two frames, with one log line and a
``BackendReport`` (trigger ``profiled``); every result names the backend
that ran it, so a subscriber sees the switch.

Our own frames must not slow the candidates being timed (the figures would
describe a busy board and be cached as the board's profile), nor the other
way round: :data:`.gate.GATE` keeps them apart.
"""

from typing import Optional, Tuple

from ..measure.profiling import describe, ProfileRun
from ..measure.settle import settle_set
from ...core.backend import first_line


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


class ProvisionalStart:
    """The provisional start of :class:`.choice.LiveChoice` (its methods, on its state)."""

    def _start_provisional(self) -> Optional[ProfileRun]:
        """Open a provisional backend and start the background profile; None: not needed."""
        pick = provisional(self.manager, self.spec, self.model_path, self.settings)
        if pick is None:
            return None
        backend, run = pick
        self.model = self._open_model(backend)
        self.run, self.provisional = run, True
        self.report(run, 'provisional')
        self.manager.settle_queue.enter(self, self.spec.name)
        with self._resuming:
            self._profiling = True
            self._spawn(self._profile_behind, 'profile')
        return run

    def resume(self) -> None:
        """Go on with a background profile that a cancel stopped before it was complete.

        The profile thread may still be ending (inside a measurement when the
        cancel came, a deactivation that did not wait for it): it then sees
        the cancel lifted and profiles on (what it measured is cached);
        otherwise a new one starts.
        """
        if not (self.provisional or self._completion_due) or self.model is None:
            return
        with self._resuming:
            self._cancel.clear()
            self._served.clear()
            if not self._profiling:
                if self.provisional:
                    self.manager.settle_queue.enter(self, self.spec.name)
                self._profiling = True
                self._spawn(self._profile_behind, 'profile')

    def _profile_behind(self) -> None:
        """Profile while the provisional backend serves, again if resumed while ending."""
        try:
            while True:
                done = self._profile_once()
                with self._resuming:
                    if done or self._cancel.is_set():
                        self._profiling = False
                        return
        finally:
            self.manager.settle_queue.leave(self)

    def _profile_once(self) -> bool:
        """Settle, then complete the profile (:mod:`..measure.settle`); False: cancelled."""
        st = self.settings
        # the first frame first: started at once, the profile's model loads and ncnn
        # conversions took the cores the camera driver, DDS discovery and the first
        # inference needed (first detection 3.6-4.1 s after `ros2 launch` instead of
        # 2.4 s on this VM)
        self._served.wait(st.profile_after_s)
        if self.provisional:
            step = self._measure(self._likely if st.settle_first else None, 'done')
            if step is not True:
                return step is None
            self.manager.settle_queue.leave(self)
        if not self._completion_due:
            return True
        # the rest (int8 and fp16 files, the unlikely ones) once no model of the
        # process is still settling: a completion must not delay another's choice
        if not self.manager.settle_queue.wait_settled(self._cancel):
            return False
        step = self._measure(None, 'completed')
        if step is True:
            self._completion_due = False
        return step is not False

    def _likely(self):
        """Return the settle set (decided when this model's profile starts); None: all."""
        cands = self.manager.candidates(self.spec, self.model_path)
        only = settle_set(self.manager, self.spec, cands)
        everything = {b.name for b in cands if not self.manager.over_budget(b)}
        self._completion_due = bool(only) and not everything <= set(only)
        self._candidate_count = len(everything)
        self._settle_only = list(only) if self._completion_due else None
        return self._settle_only

    def _measure(self, only, phase: str):
        """Measure (``only`` these), hand the choice over between two frames.

        Returns True when handed over, False when cancelled, None when the
        profile failed (the choice stays; said in one line).
        """
        st = self.settings
        t0 = self.clock.monotonic()
        try:
            if self._cancel.is_set():
                return False
            backend, run = self.manager.choose(
                self.spec, self.model_path, objective=st.objective,
                max_latency_ms=st.max_latency_ms, min_accuracy=st.min_accuracy,
                latency_percentile=st.latency_percentile, cancel=self._cancel, only=only)
            new = None
            if backend.name != self.model.backend_name:
                new = self._open_model(backend)
        except Exception as exc:  # keep serving on the backend serving now
            if self._cancel.is_set():
                return False
            if 'profile cancelled' in str(exc):     # resumed while it ended: again
                return False
            if only is not None and self._settle_only:  # none of the likely ones: all
                self._completion_due = False
                return self._measure(None, phase)
            self.warn(f'profile failed ({type(exc).__name__}: {first_line(exc)}): '
                      f'staying on {self.backend_name}')
            return None
        with self._frame_lock:      # between two frames
            if self._cancel.is_set() or self.model is None:
                if new is not None:
                    new.close()
                return False
            old = self.model.backend_name
            first = self.provisional
            self.run, self.provisional = run, False
            if new is not None:
                previous, self.model = self.model, new
                previous.close()
                self.runners.drop(backend.name)     # it serves now: no runner-up twice
            took = self.clock.monotonic() - t0
            if first:
                self.settled_s = took
            measured = sum(1 for r in run.results if r.status != 'unavailable' and
                           not run.from_cache.get(r.backend, True))
            if new is None and not first:   # a completion that kept the choice
                self.log(f'profile completed in {took:.1f} s ({measured} more candidate(s) '
                         f'measured): keeping {old}')
                self.report(run, 'profiled')    # the whole table now
                return True
            self.pacing.new_choice()    # the provisional one's frames say nothing of it
            self.load_watch.new_choice()
            self.runners.new_choice()
            self.switches.append({'t': self.clock.monotonic(), 'from': old, 'to': run.chosen,
                                  'trigger': 'profiled', 'evidence': run.why})
            rest = (f' (the likely ones first: {len(self._settle_only)} of '
                    f'{self._candidate_count} candidates; the others follow)'
                    if first and self._settle_only and self._completion_due else '')
            self.log(f'profile {phase} in {took:.1f} s: '
                     + (f'switching backend {old} -> {run.chosen}' if new is not None else
                        f'keeping {old}') + f' (profiled){rest}')
            self.report(run, 'profiled')
            if first:
                self._watch()
            else:
                if self.drift is not None:
                    res = self._result(run.chosen)
                    if res is not None:
                        self.drift.rebase(res.p50_ms)
                if self.runners or not self.hours.lazy:
                    self._spawn(self._open_runners, 'runners')
                else:   # a look at the new ranking, opened by a frame within the budget
                    self.hours.cue(self.clock.monotonic())
        return True
