# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A first result seconds after start: a provisional backend while the profile runs (no ROS).

Measuring every candidate on a first start (nothing cached) took 19-40 s per
model on a 2-core board, and the node served nothing meanwhile. Now a model
whose profile is incomplete starts on a **provisional** backend at once:

- the cache's choice among the candidates it already has figures for (a
  board that gained a library keeps its old choice meanwhile), else
- the first available candidate of ``start_order`` (config/backends.yaml)
  within the thread budget: ONNX Runtime on the CPU, the reference every
  candidate's accuracy is judged against (exact by definition), which loads
  in about 0.1 s.

The profile then runs in the background (:class:`.live.LiveChoice`) and the
measured choice takes over between two frames, with one log line and a
``BackendReport`` (trigger ``profiled``); every result names the backend
that ran it, so a subscriber sees the switch.

Our own frames must not slow the candidates being timed (the figures would
describe a busy board and be cached as the board's profile), nor the other
way round: :data:`.gate.GATE` keeps them apart.
"""

from typing import Optional, Tuple

from .profiling import describe, ProfileRun
from ..core.backend import first_line


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
    """The provisional start of :class:`.live.LiveChoice` (its methods, on its state)."""

    def _start_provisional(self) -> Optional[ProfileRun]:
        """Open a provisional backend and start the background profile; None: not needed."""
        pick = provisional(self.manager, self.spec, self.model_path, self.settings)
        if pick is None:
            return None
        backend, run = pick
        self.model = self._open_model(backend)
        self.run, self.provisional = run, True
        self.report(run, 'provisional')
        with self._resuming:
            self._profiling = True
            self._spawn(self._profile_behind, 'profile')
        return run

    def resume(self) -> None:
        """Go on with a background profile that a cancel stopped before it settled.

        The profile thread may still be ending (inside a measurement when the
        cancel came, a deactivation that did not wait for it): it then sees
        the cancel lifted and profiles on (what it measured is cached);
        otherwise a new one starts.
        """
        if not self.provisional or self.model is None:
            return
        with self._resuming:
            self._cancel.clear()
            self._served.clear()
            if not self._profiling:
                self._profiling = True
                self._spawn(self._profile_behind, 'profile')

    def _profile_behind(self) -> None:
        """Profile while the provisional backend serves, again if resumed while ending."""
        while True:
            done = self._profile_once()
            with self._resuming:
                if done or self._cancel.is_set():
                    self._profiling = False
                    return

    def _profile_once(self) -> bool:
        """Profile and hand the choice over between two frames; False: cancelled."""
        st = self.settings
        # the first frame first: started at once, the profile's model loads and ncnn
        # conversions took the cores the camera driver, DDS discovery and the first
        # inference needed (first detection 3.6-4.1 s after `ros2 launch` instead of
        # 2.4 s on this VM)
        self._served.wait(st.profile_after_s)
        t0 = self.clock.monotonic()
        try:
            if self._cancel.is_set():
                return False
            backend, run = self.manager.choose(
                self.spec, self.model_path, objective=st.objective,
                max_latency_ms=st.max_latency_ms, min_accuracy=st.min_accuracy,
                latency_percentile=st.latency_percentile, cancel=self._cancel)
            new = None
            if backend.name != self.model.backend_name:
                new = self._open_model(backend)
        except Exception as exc:  # keep serving on the provisional backend
            if self._cancel.is_set():
                return False
            if 'profile cancelled' in str(exc):     # resumed while it ended: again
                return False
            self.warn(f'profile failed ({type(exc).__name__}: {first_line(exc)}): '
                      f'staying on the provisional {self.backend_name}')
            return True
        with self._frame_lock:      # between two frames
            if self._cancel.is_set() or self.model is None:
                if new is not None:
                    new.close()
                return False
            old = self.model.backend_name
            self.run, self.provisional = run, False
            if new is not None:
                previous, self.model = self.model, new
                previous.close()
            self.pacing.new_choice()    # the provisional one's frames say nothing of it
            self.load_watch.new_choice()
            self.settled_s = self.clock.monotonic() - t0
            self.switches.append({'t': self.clock.monotonic(), 'from': old, 'to': run.chosen,
                                  'trigger': 'profiled', 'evidence': run.why})
            self.log(f'profile done in {self.settled_s:.1f} s: '
                     + (f'switching backend {old} -> {run.chosen}' if new is not None else
                        f'keeping {old}') + ' (profiled)')
            self.report(run, 'profiled')
            self._watch()
        return True
