# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The runners-up timed on real frames, and the switch rule on their pairs (no ROS).

A part of the :class:`.selector.Selector`. After a frame, one open
runner-up may run the same input (a *pair*: its time beside the chosen
one's, same load), or run the next frame itself (a *served* frame: the
server runs it, :meth:`.server.Server.serve_once`, and the selector hands
what it took to :meth:`RunnerSampling.took`; judged against the chosen
one's frames around it), at a pace within ``duty``
(:mod:`.pacing`). Every pair goes to the switch rule (:func:`.rule.two_looks`).
It reads what serves from the :class:`.server.Server` and calls no one back:
a runner-up that passed both looks waits in :attr:`RunnerSampling.won`, one
that failed in :attr:`RunnerSampling.failed`, for the selector to act on.
"""

from typing import List, Optional, Tuple

from .context import ChoiceContext
from .pacing import expected_ratio, Pacing, pre_delta, SERVE
from .rule import dwell_margin, two_looks, Verdict
from .runners_up import RunnerPool
from .server import Ran, Server
from ..measure.profiling import CandidateResult
from ...core.backend import first_line, input_kind


class RunnerSampling:
    """Time one model's open runners-up on its frames; promote one that wins."""

    def __init__(self, ctx: ChoiceContext, pool: RunnerPool, pacing: Pacing, server: Server,
                 observer=None):
        self.ctx = ctx
        self.pool = pool
        self.pacing = pacing
        self._server = server       # what serves, and every switch (the dwell rule reads them)
        self._observer = observer
        self.won: Optional[Tuple[str, Verdict, str]] = None     # passed both looks: promote
        self.failed: List[str] = []     # runners-up that raised: drop them
        self.shadow_runs = 0        # runner-up samples (served frames among them)
        self.served_frames = 0

    def _result(self, name: Optional[str]) -> Optional[CandidateResult]:
        return self._server.result(name)

    def took(self, ran: Ran) -> None:
        """Take a frame a runner-up ran at the selector's ask (:meth:`.server.Server.infer`)."""
        if ran.error:
            self.ctx.log(f'runner-up {ran.backend} failed ({ran.error}): no longer watched')
            self.failed.append(ran.backend)
            return      # the chosen one ran the frame: none was lost
        self.pacing.frames_since_served = 0
        self.served_frames += 1
        # the frame's own cost, preprocessing included: a +pre candidate's input differs,
        # and under load the CPU preprocessing is no longer what the profile said
        self.pacing.served(ran.backend, ran.t, ran.preprocess_ms + ran.inference_ms)

    def serve_next(self, name: str) -> None:
        """Have runner-up ``name`` run the next frame (its result goes out), when it can."""
        if self.pacing.reference_full():
            self._server.serve_once(name, self.pool.model(name, self._server.model))

    def judge_served(self) -> None:
        """Record the served frames that the chosen one's frames around them now judge."""
        for name, t, ref, runner_ms in self.pacing.judged():
            if self._server.run is not None and name in self.pool:
                self._sampled(name, t, ref, runner_ms, max(0.0, runner_ms - ref), served=True)

    def after_frame(self) -> bool:
        """Time one runner-up on the last frame's input when the duty allows; True if it did."""
        model, run = self._server.model, self._server.run
        # after a served frame no chosen run is there to pair with
        if not self.pool or model is None or run is None or \
                not self.pacing.may_pair() or getattr(model, 'last_input', None) is None:
            return False
        now = self.ctx.clock.monotonic()
        picked = self.pool.pick(now)
        if picked is None:
            return False
        name, ratio = picked
        if not self.pacing.due(now, ratio, len(self.pool.pairs(name))):
            return False
        how = self.pacing.allows(now, expected_ratio(
            self.pool.ratio(name), self._result(run.chosen), self._result(name)))
        if how is None:
            return False
        self.pool.rotation += 1
        if how == SERVE:
            self.serve_next(name)      # the next frame runs on it
            return False
        sess = self.pool.get(name)
        clock = self.ctx.clock
        try:
            x = model.input_for(input_kind(sess))
            with self.ctx.runtime.gate.shared():
                t = clock.perf_counter()
                sess.run(x)
                ms = (clock.perf_counter() - t) * 1e3 + pre_delta(
                    self._result(run.chosen), self._result(name))
        except Exception as exc:  # a runner-up that fails is dropped, not fatal
            self.ctx.log(f'runner-up {name} failed ({first_line(exc)}): no longer watched')
            self.failed.append(name)
            return False
        self._sampled(name, now, self.pacing.last_ms, ms, ms)
        return True

    def _sampled(self, name: str, now: float, chosen_ms: float, ms: float, cost: float,
                 served: bool = False) -> None:
        """Record one sample of runner-up ``name`` (``cost``: the compute it added), judge."""
        run = self._server.run
        if name not in self.pool or run is None or run.chosen is None:
            return
        self.shadow_runs += 1
        self.pacing.spent(name, now, cost, chosen_ms, served, len(self.pool))
        self.pool.record(name, now, chosen_ms, ms)
        if self._observer is not None:
            self._observer.paired(now, run.chosen, name, chosen_ms, ms)
        st = self.ctx.settings
        decided = two_looks(self.pool, name, now, st, run.chosen,
                            dwell_margin(st, self._server.switches, name, now), self.ctx.log)
        if decided is not None and self.won is None:    # one switch at a time
            self.won = (name, *decided)
