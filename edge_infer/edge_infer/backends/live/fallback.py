# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Fallback: a backend that raises is replaced by the next best measured one (no ROS).

The frame is then run again on it (:meth:`.choice.LiveChoice.infer`): no
frame is lost. An open runner-up takes over without opening a session.
"""

import contextlib
from typing import Dict, Optional, Tuple

from .context import ChoiceContext
from .runners_up import RunnerPool
from .server import Server
from ..measure.profiling import ProfileRun
from ...core.backend import first_line
from ...core.model import Model


class Failures:
    """The backends that raised: left out for good, a server for ``retry_s`` only.

    A local library that raised (a driver gone, a device lost) stays out. A
    Triton server (``triton/...``) is mostly restarted or reachable again
    after a while, so ``retry_s`` after its failure it is a candidate again:
    the next look at the runners-up asks it, and the online re-selection
    moves back to it where it wins. Used like a set (``in``, ``add``).
    """

    def __init__(self, clock, retry_s: float = 30.0):
        self.clock, self.retry_s = clock, float(retry_s)
        self._at: Dict[str, float] = {}

    def add(self, name: str) -> None:
        """Record that ``name`` raised now."""
        self._at[name] = self.clock.monotonic()

    def __contains__(self, name: object) -> bool:
        at = self._at.get(str(name))
        if at is None:
            return False
        return not (str(name).startswith('triton/') and
                    self.clock.monotonic() - at >= self.retry_s)


def next_best(ctx: ChoiceContext, run: ProfileRun, failed: 'Failures', pool: RunnerPool,
              model: Model, exc: Exception) -> Optional[Tuple[str, Model, str]]:
    """Return (backend, a model serving on it, evidence) after ``model`` raised ``exc``.

    None when no candidate outside ``failed`` is usable (said in one line).
    An open runner-up in ``pool`` takes over without opening a session.
    """
    left = [r for r in run.results if r.backend not in failed]
    chosen, why = ctx.select(left)
    name = run.chosen or model.backend_name
    first = f'{type(exc).__name__}: {first_line(exc)}'
    if chosen is None:
        ctx.warn(f'backend {name} failed ({first}) and no other candidate is usable: {why}')
        return None
    sess = pool.take(chosen.backend)  # open as a runner-up: nothing to open on this frame
    new = model.with_session(sess) if sess is not None else \
        ctx.open_model(ctx.backend(chosen.backend))
    return chosen.backend, new, f'backend {name} failed ({first})'


def fall_back(ctx: ChoiceContext, server: Server, failed: Failures, pool: RunnerPool,
              exc: Exception, allowed: bool = True) -> Optional[Tuple[str, str, str]]:
    """Serve the next best measured backend after the serving one raised ``exc``.

    Returns (the failed backend, the new one, evidence); None when there is
    none (not ``allowed``: a fixed executor backend; nothing open; none left).
    The failed session is closed, quietly: it may not close cleanly.
    """
    run, model = server.run, server.model
    name = run.chosen if run and run.chosen else server.backend_name
    failed.add(name)
    if run is None or not allowed or model is None:
        return None
    pool.drop(name)
    got = next_best(ctx, run, failed, pool, model, exc)
    if got is None:
        return None
    new_name, new, evidence = got
    old = server.swap(new, close_old=False)
    with contextlib.suppress(Exception):
        if old is not None:
            old.close()
    return name, new_name, evidence
