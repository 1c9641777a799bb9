# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Looks at the runners-up: opened within the process's memory budget, closed when idle (no ROS).

A part of :class:`.choice.LiveChoice`. When the runners-up are open is said
by :class:`.runners_up.RunnerHours` (always, or for a look after each cue);
how much memory the process's looks may hold at once by
:class:`.budget.RunnerBudget`, shared by the models of one manager. This
part opens them (in a background thread: the first frames do not wait),
closes them once idle and hands their memory back.
"""

import threading
from typing import List, Optional

from .budget import rss_mb, RunnerBudget
from .context import ChoiceContext
from .runners_up import RunnerHours, RunnerPool, wanted


class RunnerLooks:
    """Open and close one model's runners-up within the process's memory budget."""

    def __init__(self, ctx: ChoiceContext, pool: RunnerPool, hours: RunnerHours,
                 budget: RunnerBudget):
        self.ctx = ctx
        self.pool = pool
        self.hours = hours
        self.budget = budget
        self.watching = False       # online re-selection runs: looks are tended
        self._opening = threading.Lock()    # one thread opens runners-up at a time
        self._mb: Optional[float] = None    # what opening a whole look added (the last one)

    def open_look(self, ranked: List[str], chosen: str, input_spec) -> None:
        """Open the best of ``ranked`` beside ``chosen`` (a background thread runs this)."""
        if not self._opening.acquire(blocking=False):
            return      # another thread opens them
        ctx = self.ctx
        try:
            by_name = {b.name: b for b in ctx.manager.candidates(ctx.spec, ctx.model_path)}
            ranked = [n for n in ranked if n != chosen and n in by_name]
            threads = {n: getattr(b, 'intra_op_threads', None) for n, b in by_name.items()}
            want = wanted(ranked, threads, chosen, ctx.settings.runners_up)
            before, whole = rss_mb(), not self.pool     # a whole look's size, not a top-up
            self.pool.open_sessions(want, by_name, ctx.model_path, input_spec, ctx.cancel,
                                    ctx.log)
            if self.pool and whole:
                self._mb = max(1.0, rss_mb() - before)
                self.budget.measured(self, self._mb)
        except Exception as exc:  # keep serving on the chosen backend
            ctx.log(f'online re-selection off: {type(exc).__name__}: {exc}')
        finally:
            if not self.pool:    # none could open: this look ends, its memory is free
                self.budget.release(self)
                self.hours.until = self.hours.answered_at = ctx.clock.monotonic()
            self._opening.release()

    def tend(self, now: float) -> Optional[str]:
        """Return 'open' when a look is to open now (memory granted), 'close' once closed.

        Called on the frame thread, with no runner-up in use.
        """
        if not self.watching or self._opening.locked():
            return None
        todo = self.hours.tend(now, self.pool)
        if todo == 'open':
            if not self.budget.acquire(self, self._mb, self.ctx.settings.runners_memory_mb):
                self.hours.wait(now)    # another model's look holds the memory: in turn
                return None
            self.hours.cue(now)     # the look begins now: its pairs count from here
            return 'open'
        if todo == 'close':
            self.pool.close()
            self.budget.release(self)
            self.ctx.spawn(_trim, 'trim')
            return 'close'
        return None

    def close(self) -> None:
        """Close every runner-up and leave the budget."""
        self.pool.close()
        self.budget.forget(self)


def _trim() -> None:
    """Hand the closed sessions' memory back to the system."""
    from ..measure.memory import release_freed_memory
    # closed, so nothing for the collector: a gc pass would hold every frame's GIL
    release_freed_memory(collect=False)
