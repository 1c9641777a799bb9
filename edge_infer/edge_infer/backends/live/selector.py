# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What decides one model's backend at run time: the :class:`Selector` (no ROS).

The :class:`.server.Server` serves; the Selector decides what, from the
frames' timings and its parts: the runners-up (:mod:`.runners_up`, opened by
:mod:`.looks`, timed by :mod:`.sampling` within the duty of :mod:`.pacing`),
the load watch, drift (:mod:`.drift`, :mod:`.graph_level`), fallback and the
background profile behind a provisional start (:mod:`.startup`). The parts
answer by what they return or leave for it (``sampling.won``,
``reevaluation.take()``); only the background profile calls it, to hand
over under the server's frame lock. Every switch goes to the server.
"""

from typing import Callable, Optional

from .context import ChoiceContext
from .drift import DriftMonitor, Reevaluated, Reevaluation
from .fallback import Failures, fall_back
from .graph_level import GraphLevel
from .load_watch import Foreign, LoadWatch, Observer
from .looks import RunnerLooks
from .pacing import Pacing
from .runners_up import RunnerHours, RunnerPool
from .sampling import RunnerSampling
from .server import Server
from .startup import BackgroundProfile
from ..measure.profiling import ProfileRun
from ...core.model import Model


class Selector:
    """One model's run-time decisions: runners-up, load, drift, fallback, the hand-over."""

    def __init__(self, ctx: ChoiceContext, server: Server,
                 foreign_load: Optional[Foreign] = None, observer: Optional[Observer] = None):
        st = ctx.settings
        self.ctx, self.server, self.observer = ctx, server, observer
        # read on every frame
        self.clock, self.manager, self.openings = ctx.clock, ctx.manager, ctx.runtime.openings
        self.fixed = False                  # forced / executor: never switched by measurement
        self.can_fall_back = True           # False for a fixed executor backend
        self.drift: Optional[DriftMonitor] = None
        self.failed = Failures(ctx.clock, st.remote_retry_s)
        self.runners = RunnerPool(st)
        self.hours = RunnerHours(st)
        self._drift_look = float('-inf')    # a drift alarm's look began then
        self.pacing = Pacing(st)
        self.load_watch = LoadWatch(st, foreign_load, observer)
        self.startup = BackgroundProfile(ctx, lambda: server.backend_name, self.handover)
        self.sampling = RunnerSampling(ctx, self.runners, self.pacing, server, observer)
        # the process's runner-up memory is shared by its models' looks
        self.looks = RunnerLooks(ctx, self.runners, self.hours, ctx.runtime.runner_memory)
        self.reevaluation = Reevaluation(ctx, server, self.failed, observer)
        self.graph = GraphLevel(ctx, self.startup, self.reevaluation, self.runners, self.hours)

    # ------------------------------------------------------------- watching
    def watch(self) -> None:
        """Start keeping the measured choice right: the drift monitor, the runners-up."""
        st = self.ctx.settings
        run = self.server.run
        chosen = self.server.result(run.chosen if run else None)
        if st.drift_threshold and not self.fixed and chosen is not None:
            self.drift = DriftMonitor(self.graph.expect(chosen.backend, chosen.p50_ms),
                                      st.drift_threshold, st.drift_window_s)
        # the switch rule compares time: for the energy / edp objectives it would
        # override the measured choice, so they keep drift and fallback only
        if st.duty > 0 and st.objective == 'latency' and not self.fixed and \
                self.ctx.manager is not None:
            self.load_watch.start()
            self.looks.watching = True
            self.hours.cue(self.ctx.clock.monotonic())      # a fresh choice: look for a while
            self.hours.standby = (chosen.backend if chosen else '').startswith('triton/')
            if not self.hours.lazy:     # always open; else the first frame opens them
                self.ctx.spawn(self.open_runners, 'runners')    # within the memory budget

    def open_runners(self) -> None:
        """Open the best runners-up (background: the first frames do not wait for them)."""
        self.looks.open_best(self.server, self.failed)

    # ------------------------------------------------- between frames
    def after_frame(self) -> bool:
        """Decide, after a frame's result is out; True if a runner-up was timed on its input.

        Takes what the frames since the last call ran on (the server's
        :meth:`~.server.Server.ran`): load, drift, the runners-up's due; applies
        a re-evaluation done in the background; then may time one runner-up
        on the last frame's input, or ask the server to serve the next frame
        on one, within the duty. A frame never waits for any of it.
        """
        for ran in self.server.ran():
            if ran.runner_up:
                self.sampling.took(ran)
            else:
                self.pacing.frames_since_served += 1
                self.observe(ran.t, ran.inference_ms, ran.preprocess_ms)
        self._act()
        done = self.reevaluation.take()
        if done is not None:
            self.reevaluated(done)
        if self.fixed:
            return False
        timed = self.sampling.after_frame()
        self._act()
        return timed

    def observe(self, now: float, ms: float, pre_ms: float = 0.0) -> None:
        """Take the chosen backend's timing of a frame that ended at ``now``: load, drift, due."""
        openings = self.openings
        self.pacing.chosen_ran(now, ms, (openings.busy, openings.ended), frame_ms=ms + pre_ms)
        why = self.load_watch.latency(now, ms)
        if why is not None:     # a cue to look, not proof: pairs are kept
            self.alert(now, why)
        looking = bool(self.runners) or (self.looks.watching and self.hours.lazy)
        if looking and self.load_watch.due(now):
            change = self.load_watch.poll(now)
            if change is not None:
                self.alert(now, *change)
        if not self.manager.profiling():    # the process's own profile loads the cores
            self.graph.frame(self.drift, ms, now)     # the level in this graph, learned
            if self.drift is not None and self.drift.add(ms, now):
                self._drift_fired(now, looking)
        sampling = self.sampling
        sampling.judge_served()
        if sampling.won is not None or sampling.failed:
            self._act()
        todo = self.looks.tend(now)     # open the runners-up when due, close them when idle
        if todo in ('close', 'next'):
            self.server.serve_once('', None)
        if todo in ('open', 'next'):
            self.pacing.cue(now)
            self.ctx.spawn(self.open_runners, 'runners')

    def alert(self, now: float, why: str, since: Optional[float] = None) -> None:
        """Look now (eager runs); with ``since`` (the load changed then) forget older pairs."""
        self.pacing.cue(now)
        self.hours.cue(now)
        if since is not None:
            self.runners.forget_before(since)
        if self.observer is not None:
            self.observer.alert(now, why)

    # ------------------------------------------------------------ switching
    def _act(self) -> None:
        """Drop the runners-up that failed; promote one that passed both looks."""
        if self.sampling.won is None and not self.sampling.failed:
            return
        failed, self.sampling.failed = self.sampling.failed, []
        for name in failed:
            self.drop_runner(name)
        won, self.sampling.won = self.sampling.won, None
        run, model = self.server.run, self.server.model
        if won is None or run is None or not run.chosen or model is None:
            return
        name, v, evidence = won
        old = run.chosen        # the old choice is now watched as a runner-up
        sess = self.runners.promote(name, old, model.session, v.time_ratio,
                                    self.ctx.clock.monotonic())
        self.server.swap(model.with_session(sess), close_old=False)
        self.switched(old, name, 'online', evidence, expected_ms=v.runner_ms)

    def drop_runner(self, name: str) -> None:
        """Stop watching runner-up ``name``."""
        if self.server.once == name:
            self.server.serve_once(name, None)      # not on the next frame either
        self.runners.drop(name)
        self.pacing.forget(name)

    def new_choice(self) -> None:
        """Forget what was measured of the old choice: it says nothing of the new one."""
        self.runners.new_choice()
        self.load_watch.new_choice()
        self.pacing.new_choice()

    def switched(self, old: str, new: str, trigger: str, evidence: str,
                 expected_ms: Optional[float] = None) -> None:
        """Record a switch; ``expected_ms``: the new backend's latency as just measured."""
        self.new_choice()
        self.server.serve_once('', None)
        res = self.server.result(new)
        if self.drift is not None:     # expect what the new backend was measured at
            self.graph.rebase(self.drift, new, expected_ms if expected_ms is not None else
                              res.p50_ms if res else self.drift.expected_ms)
        self.hours.cue(self.ctx.clock.monotonic())
        self.hours.standby = new.startswith('triton/')     # a server: the runners-up stay open
        self.server.record(old, new, trigger, evidence)    # the run's chosen flags, the report

    def handover(self, new: Optional[Model], run: ProfileRun, took: float, phase: str,
                 rest: str, settled: Callable[[], bool]) -> bool:
        """Take a background profile's choice between two frames (:mod:`.startup`)."""
        server, log = self.server, self.ctx.log
        with server.frame:     # between two frames
            if self.ctx.cancel.is_set() or server.model is None:
                if new is not None:
                    new.close()
                return False
            old = server.backend_name
            first = settled()
            server.swap(new, run)
            if new is not None:
                self.runners.drop(new.backend_name)     # it serves now: no runner-up twice
            if new is None and not first:   # a completion that kept the choice
                measured = sum(1 for r in run.results if r.status != 'unavailable' and
                               not run.from_cache.get(r.backend, True))
                log(f'profile completed in {took:.1f} s ({measured} more candidate(s) '
                    f'measured): keeping {old}')
                server.report(run, 'profiled')    # the whole table now
                return True
            self.new_choice()           # the provisional one's frames say nothing of it
            log(f'profile {phase} in {took:.1f} s: '
                + (f'switching backend {old} -> {run.chosen}' if new is not None else
                   f'keeping {old}') + f' (profiled){rest if first else ""}')
            server.record(old, run.chosen or '', 'profiled', run.why, chosen=False)
            if first:
                self.watch()
            else:
                res = server.result(run.chosen)
                if res is not None:
                    self.graph.rebase(self.drift, res.backend, res.p50_ms)
                if self.runners or not self.hours.lazy:
                    self.ctx.spawn(self.open_runners, 'runners')
                else:   # a look at the new ranking, opened by a frame within the budget
                    self.hours.cue(self.ctx.clock.monotonic())
        return True

    def _drift_fired(self, now: float, looking: bool) -> None:
        """Act on a firing: time the open runners-up on real frames, or re-measure all."""
        d = self.drift
        assert d is not None
        if not (looking and self.ctx.settings.duty > 0):
            self.reevaluation.start(d)
        elif d.new_episode:
            # online re-selection is on: compare the runners-up on the next real
            # frames (paired, same load) rather than re-profile every candidate
            # in the background, which competes with the frames for the cores
            self.ctx.log(f'latency drift: median {d.last_median_ms:.1f} ms vs '
                         f'{d.expected_ms:.1f} ms expected; timing the runners-up on the '
                         f'next frames')
            self.alert(now, 'latency drift', since=now - d.window_s)
            self._drift_look = now
        elif self.hours.lazy and self.hours.answered_at < self._drift_look:
            return      # the look has not been answered yet (waiting for memory, or timing)
        else:   # a cooldown of looks kept the choice: this load is the level now
            self.graph.accept(d)    # and stored: the next start expects it
            self.ctx.log(f'latency {d.expected_ms:.1f} ms under this load: the runners-up '
                         f'were timed beside {self.server.backend_name} and none won; '
                         f'expected now')

    def reevaluated(self, done: Reevaluated) -> None:
        """Apply a background re-evaluation (frame thread): switch, or keep and rebase."""
        if done.model is None:      # the choice stays: expect what it was just measured at
            self.server.swap(None, done.run)
            self.graph.rebase(self.drift, done.backend, done.p50_ms, ends_episode=False)
            self.server.report(done.run, 'drift')
            return
        old_name = done.run.chosen or ''
        self.server.swap(done.model, done.run)      # the old model closed
        self.drop_runner(done.backend)
        self.switched(old_name, done.backend, 'drift', done.why)

    def fall_back(self, exc: Exception) -> bool:
        """Replace a backend that raised by the next best measured one; False if none left."""
        got = fall_back(self.ctx, self.server, self.failed, self.runners, exc,
                        self.can_fall_back)
        if got is None:
            return False
        failed, name, evidence = got
        self.pacing.forget(failed)
        self.switched(failed, name, 'fallback', evidence)
        return True

    def close(self) -> None:
        """Close the runners-up and a switch's model that no frame took; leave the graph."""
        self.looks.close()
        self.reevaluation.close()
        self.graph.leave()
