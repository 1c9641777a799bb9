# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The serving side of one model's run-time choice: the Model a frame runs on (no ROS).

A :class:`Server` holds the serving :class:`~edge_infer.core.model.Model`
and the profile run behind it, swaps them between two frames (its
``frame`` lock is what a frame holds), and keeps every switch: the
record (time, from, to, trigger, evidence), the run's chosen flags, one
log line and the report. For each frame it runs the model to serve next
(a runner-up the selector asked for, once, else the chosen one) and keeps
what the run took (:class:`Ran`) for the selector to take after the frame's
result is out. It decides nothing: :class:`.selector.Selector` does, and
tells it what to serve.
"""

from collections import deque
import threading
from typing import Callable, Deque, List, NamedTuple, Optional, Tuple

from .context import Clock, Log
from ..measure.profiling import CandidateResult, ProfileRun
from ...core.backend import first_line
from ...core.image import ImageError
from ...core.model import Model, Result


class Ran(NamedTuple):
    """What one frame's run took, for the selector (:meth:`Server.ran`)."""

    backend: str
    t: float                    # clock.monotonic(): a runner-up's start, the chosen one's end
    inference_ms: float = 0.0
    preprocess_ms: float = 0.0
    runner_up: bool = False     # a runner-up the selector asked for ran the frame
    error: str = ''             # that runner-up raised this: the chosen one ran the frame


RAN_KEPT = 64   # frames' runs kept for a selector that looks less often (the oldest go)


class FrameLock:
    """A lock taken in the order it was asked for (``threading.Lock`` is not).

    A node's two frame threads share one session: with a plain lock the
    thread that just ran a frame could take it again at once, while the
    other waited, its camera's frames dropping.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._next = 0      # the ticket given to the next caller
        self._serving = 0   # the ticket that holds the lock

    def __enter__(self) -> 'FrameLock':
        with self._cond:
            ticket, self._next = self._next, self._next + 1
            self._cond.wait_for(lambda: self._serving == ticket)
        return self

    def __exit__(self, *exc) -> None:
        with self._cond:
            self._serving += 1
            self._cond.notify_all()


class Server:
    """One model's serving Model and run, swapped between frames; every switch kept."""

    def __init__(self, clock: Clock, report: Callable[[ProfileRun, str], None],
                 log: Callable[[], Log], warn: Callable[[], Log], name: str) -> None:
        """``log`` / ``warn`` return the line writers (read at each line: callers re-route)."""
        self.clock, self.report, self._log, self._warn, self.name = (
            clock, report, log, warn, name)
        self.model: Optional[Model] = None
        self.run: Optional[ProfileRun] = None
        self.frame = FrameLock()    # held by a frame, in turn; a hand-over waits for it
        self.switches: List[dict] = []      # every switch: time, from, to, trigger, evidence
        self._once: Optional[Tuple[str, Model]] = None   # the runner-up to run the next frame
        self._ran: Deque[Ran] = deque(maxlen=RAN_KEPT)

    @property
    def backend_name(self) -> str:
        """Return the name of the backend the next frame runs on."""
        return self.model.backend_name if self.model else ''

    def result(self, name: Optional[str]) -> Optional[CandidateResult]:
        """Return the run's figures for candidate ``name`` (None: not in the run)."""
        return next((r for r in self.run.results if r.backend == name), None) \
            if self.run else None

    def serve(self, model: Model, run: ProfileRun, trigger: str) -> None:
        """Serve ``model`` (the first choice, or a fixed one) and report ``run``."""
        self.model, self.run = model, run
        self.report(run, trigger)

    def infer(self, frame, around_run=None) -> Result:
        """Run ``frame`` on the model to serve next (RuntimeError when none is open).

        A runner-up asked for by :meth:`serve_once` runs it, once; one that
        raises (not the frame's fault) is kept as an error, and the chosen one
        runs the frame: none is lost.
        """
        clock = self.clock
        once, self._once = self._once, None
        if once is not None:
            name, model = once
            t = clock.monotonic()
            try:
                result = model.infer(frame, around_run=around_run)
            except ImageError:
                raise       # the frame's fault, not the backend's
            except Exception as exc:
                self._ran.append(Ran(name, t, runner_up=True, error=first_line(exc)))
            else:
                self._ran.append(Ran(name, t, result.inference_ms, result.preprocess_ms, True))
                return result
        if self.model is None:
            raise RuntimeError(f'{self.name}: no model open (not started, or closed)')
        result = self.model.infer(frame, around_run=around_run)
        self._ran.append(Ran(result.backend, clock.monotonic(), result.inference_ms,
                             result.preprocess_ms))
        return result

    def ran_batch(self, results: List[Result]) -> None:
        """Keep a batch run as its frames' runs, each its share of the run (the selector's)."""
        t = self.clock.monotonic()
        for r in results:
            self._ran.append(Ran(r.backend, t, r.inference_ms / r.batch, r.preprocess_ms))

    def serve_once(self, name: str, model: Optional[Model]) -> None:
        """Run the next frame on runner-up ``name``'s ``model`` (None: on the chosen one)."""
        self._once = (name, model) if model is not None else None

    @property
    def once(self) -> str:
        """Return the runner-up that runs the next frame ('' : the chosen one)."""
        once = self._once
        return once[0] if once is not None else ''

    def ran(self) -> List[Ran]:
        """Return what the frames since the last call ran on and took (oldest first)."""
        out = []
        while self._ran:
            out.append(self._ran.popleft())
        return out

    def swap(self, model: Optional[Model], run: Optional[ProfileRun] = None,
             close_old: bool = True) -> Optional[Model]:
        """Serve ``model`` (None: keep) with ``run`` (None: keep); return the old model.

        The old model is closed unless ``close_old`` (a promoted runner-up's
        session stays open as the new runner-up).
        """
        old = self.model
        self._once = None       # a frame served for the old choice says nothing of the new
        if model is not None:
            self.model = model
        if run is not None:
            self.run = run
        if close_old and model is not None and old is not None and old is not model:
            old.close()
        return old

    def record(self, old: str, new: str, trigger: str, evidence: str,
               chosen: bool = True) -> None:
        """Keep a switch ``old`` -> ``new``: the record, one line, the report.

        ``chosen``: mark ``new`` chosen in the run and give the evidence as
        its why (a background profile's run says so itself: False).
        """
        run = self.run
        assert run is not None      # a switch replaces a choice
        if chosen:
            for r in run.results:
                r.chosen = r.backend == new
            run.chosen, run.why = new, f'{trigger}: {evidence}'
        self.switches.append({'t': self.clock.monotonic(), 'from': old, 'to': new,
                              'trigger': trigger, 'evidence': evidence})
        if trigger == 'fallback':
            self._warn()(f'{evidence}; falling back to {new}')
        elif trigger != 'profiled':     # a profile's hand-over says so in its own line
            self._warn()(f'switching backend {old} -> {new} ({trigger}): {evidence}')
        self.report(run, trigger)

    def close(self) -> None:
        """Close the serving model."""
        self._once = None
        if self.model is not None:
            self.model.close()
        self.model = None
