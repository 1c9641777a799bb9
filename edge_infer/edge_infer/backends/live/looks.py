# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Looks at the runners-up: opened within the process's memory budget, closed when idle (no ROS).

A part of :class:`.choice.LiveChoice`. When the runners-up are open is said
by :class:`.runners_up.RunnerHours` (always, or for a look after each cue);
how much memory the process's looks may hold at once by
:class:`.runner_memory.RunnerMemory`, shared by the models of one manager. This
part opens them (in a background thread: the first frames do not wait),
closes them once idle and hands their memory back.

A look opens ``runners_per_look`` of the ``runners_up`` at a time (1 of 2 by
default): once those are answered, it closes them and opens the next. It
opens only runners-up on a library the process has imported
(``runners_other_libraries`` false, the default): a look at another library
imports it for the process's life (ONNX Runtime for MoveNet's runner-up:
+33 MB of the warm container, never handed back); the online re-selection
leaves those out, a profile (the measuring child, a fresh cache, ``edge_infer
profile``) still compares every library. A look's sessions were most of
what the warm container held beyond serving (2 OpenVINO runners-up of
MobileNetV2: 76 MB, the first 47 MB of it; docs/memory.md). Where the
runners-up stand by for a server on the network, or are open all the time
(``runners_idle_s`` 0), the best ``runners_up`` open, as before.
"""

import math
import sys
import threading
from typing import Callable, Container, Dict, List, Optional, Sequence

from .context import ChoiceContext
from .runner_memory import rss_mb, RunnerMemory
from .runners_up import Openings, RunnerHours, RunnerPool, wanted
from .server import Server
from ..measure.profiling import CandidateResult
from ..measure.selection import latency_at, stalls
from ...core.backend import Backend, first_line, open_session

#: A backend's ``library`` -> the module its import brings (where the names differ).
MODULES = {'opencv-dnn': 'cv2', 'triton': 'tritonclient'}


def imported(backend: Backend) -> bool:
    """Return whether ``backend``'s library is imported in this process (none named: True)."""
    lib = getattr(backend, 'library', '')
    return not lib or MODULES.get(lib, lib) in sys.modules


def open_sessions(pool: RunnerPool, names: Sequence[str], backends: Dict[str, Backend],
                  model_path, input_spec, cancel: threading.Event, log: Callable[[str], None],
                  openings: Openings) -> None:
    """Open the runners-up ``names`` not in ``pool`` yet; one that cannot open is left out.

    ``openings``: the process's (the runtime's), marked while a session opens.
    """
    for name in names:
        if cancel.is_set():
            return
        if name in pool or name not in backends:
            continue
        try:
            with openings.opening():
                sess = open_session(backends[name], model_path, input_spec)
        except Exception as exc:  # a runner-up that cannot open is left out
            log(f'runner-up {name} not opened: {first_line(exc)}')
            continue
        pool.add(name, sess)


def ranked(ctx: ChoiceContext, results: List[CandidateResult],
           failed: Container[str]) -> List[CandidateResult]:
    """Return the accepted candidates outside ``failed``, best first by the objective."""
    config = ctx.manager.config
    pct = int(ctx.settings.latency_percentile or config.get('latency_percentile', 50))
    guard = float(config.get('tail_guard', 0) or 0)
    ok = [r for r in results if r.status == 'ok' and not r.cut_short and
          r.backend not in failed and math.isfinite(r.p50_ms) and
          not (guard and stalls(r, guard))]    # a staller could win 10 calm pairs
    return sorted(ok, key=lambda r: latency_at(r, pct))


class RunnerLooks:
    """Open and close one model's runners-up within the process's memory budget."""

    def __init__(self, ctx: ChoiceContext, pool: RunnerPool, hours: RunnerHours,
                 memory: RunnerMemory):
        self.ctx = ctx
        self.pool = pool
        self.hours = hours
        self.memory = memory
        self.watching = False       # online re-selection runs: looks are tended
        self._opening = threading.Lock()    # one thread opens runners-up at a time
        self._mb: Optional[float] = None    # what opening a whole look added (the last one)
        self._left: List[str] = []          # the runners-up this look has still to open

    def open_best(self, server: Server, failed: Container[str]) -> None:
        """Open the best runners-up beside what ``server`` serves (a background thread)."""
        run, model = server.run, server.model
        if run is not None and run.chosen and model is not None:
            self.open_look([r.backend for r in ranked(self.ctx, run.results, failed)],
                           run.chosen, model.spec.input_spec)

    def open_look(self, ranked: List[str], chosen: str, input_spec) -> None:
        """Open the best of ``ranked`` beside ``chosen`` (a background thread runs this)."""
        if not self._opening.acquire(blocking=False):
            return      # another thread opens them
        ctx = self.ctx
        try:
            by_name = {b.name: b for b in ctx.manager.candidates(ctx.spec, ctx.model_path)}
            want = self.to_open([n for n in ranked if n != chosen and n in by_name],
                                by_name, chosen)
            before, whole = rss_mb(), not self.pool     # a whole look's size, not a top-up
            open_sessions(self.pool, want, by_name, ctx.model_path, input_spec, ctx.cancel,
                          ctx.log, ctx.runtime.openings)
            if self.pool and whole:
                self._mb = max(1.0, rss_mb() - before)
                self.memory.measured(self, self._mb)
        except Exception as exc:  # keep serving on the chosen backend
            ctx.log(f'online re-selection off: {type(exc).__name__}: {exc}')
        finally:
            if not self.pool:    # none could open: this look ends, its memory is free
                self.memory.release(self)
                self.hours.until = self.hours.answered_at = ctx.clock.monotonic()
            self._opening.release()

    def to_open(self, ranked: List[str], by_name: Dict[str, Backend], chosen: str) -> List[str]:
        """Return the runners-up to open now, of ``ranked`` (best first; Backends by name).

        While the runners-up stand by for a server, or are open all the time,
        the best ``runners_up`` (as :func:`.runners_up.wanted` picks them).
        For a look: only those on a library this process has imported
        (unless ``runners_other_libraries``), ``runners_per_look`` at a time:
        the next ones once these are answered, within the same look (a look
        that ended before goes on with those left at the next); a top-up of
        an open look: all that are missing.
        """
        st = self.ctx.settings
        threads = {n: getattr(b, 'intra_op_threads', None) for n, b in by_name.items()}
        eager = not self.hours.lazy or self.hours.standby
        if not eager and not st.runners_other_libraries:
            ranked = [n for n in ranked if imported(by_name[n])]
        want = wanted(ranked, threads, chosen, st.runners_up)
        per = st.runners_per_look
        if eager or self.pool or per <= 0 or len(want) <= per:
            self._left = []
            return want
        left = [n for n in self._left if n in want] or want
        self._left = left[per:]
        return left[:per]

    def tend(self, now: float) -> Optional[str]:
        """Return 'open' when a look is to open now (memory granted), 'close' once closed.

        'next': the look's runners-up were answered and closed; it goes on with the next.

        Called on the frame thread, with no runner-up in use.
        """
        if not self.watching or self._opening.locked():
            return None
        todo = self.hours.tend(now, self.pool)
        if todo == 'open':
            if not self.memory.acquire(self, self._mb, self.ctx.settings.runners_memory_mb):
                self.hours.wait(now)    # another model's look holds the memory: in turn
                return None
            self.hours.cue(now)     # the look begins now: its pairs count from here
            return 'open'
        if todo == 'close':
            self.pool.close()
            self.ctx.spawn(_trim, 'trim')
            if self._left and self.hours.answered_now:
                self.hours.cue(now)     # the same look goes on with the next (memory kept)
                return 'next'
            self.memory.release(self)
            return 'close'
        return None

    def close(self) -> None:
        """Close every runner-up and hand their memory back (leave the turns)."""
        self.pool.close()
        self.memory.forget(self)


def _trim() -> None:
    """Hand the closed sessions' memory back to the system."""
    from ..measure.memory import release_freed_memory
    # closed, so nothing for the collector: a gc pass would hold every frame's GIL
    release_freed_memory(collect=False)
