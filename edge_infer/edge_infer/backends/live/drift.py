# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Runtime drift: notice when a model's observed latency stays off its profile.

The situation: another process starts loading the accelerator and the
profiled choice is no longer the best. The monitor watches each frame's
inference latency; it fires when, over a window of at least ``window_s``
seconds and ``min_samples`` frames, the MEDIAN latency exceeds
``threshold`` x the profiled p50 (and that by at least ``MIN_EXCESS_MS``).
One slow frame never fires it. After it
fires it stays quiet for ``cooldown_s`` (the re-evaluation runs meanwhile),
and :meth:`rebase` sets the new expectation.

An *episode* is a stretch of drift: it begins at a firing when none is under
way and ends when a covered window's median is clearly back, under
sqrt(``threshold``) x the expectation, or the expectation is rebased by a
switch. A median between the two neither fires nor ends it (hysteresis: a
level that straddles the threshold would otherwise start an episode, and a
look at the runners-up, every cooldown). While the latency
stays high without a switch the monitor fires again after each cooldown
(the callers look again), but only the episode's first firing has
``new_episode`` set: the callers log their line once per episode, not once
every cooldown. Where the runners-up were open through that cooldown and
none won, the next firing makes the level the expectation (:meth:`accept`):
a load that stays, such as the process's own other models, would otherwise
keep them open for good. The expectation follows the latency back down,
never under sqrt(``threshold``) x the median, and to the measured figure
once the median is clearly back at it.

:class:`Reevaluation` is what :class:`.choice.LiveChoice` does when it
fires and online re-selection is off (or no runner-up is open): every working
candidate measured again in a background thread (never written to the
board's profile); the chooser takes the outcome (:meth:`Reevaluation.take`)
and swaps the best one in between two frames.
"""

from collections import deque
from dataclasses import dataclass
import math
import statistics
import threading
import time
from typing import Container, Optional

from .context import ChoiceContext
from .server import Server
from ..measure.profiling import ProfileRun
from ...core.model import Model


# A median less than this over the expectation never fires, whatever the ratio:
# a model of 1-3 ms on cores shared with the graph's other models is moved by
# up to ~1 ms by where its frame falls (beside the detector or not, the
# interpreter lock at the end of its run): the segmenter (selfie, 1.9 ms
# expected in the default graph) measured 2.9 ms medians for minutes, seven
# alarms in 10 warm minutes (2026-11-28, x86_64-amd-epyc-avx512bf16-2cpu).
# A real 2x slowdown of a 2 ms model (+2 ms) still fires.
MIN_EXCESS_MS = 1.5


class DriftMonitor:
    """Sliding-window median latency against the profiled p50."""

    def __init__(self, expected_ms: float, threshold: float = 1.5, window_s: float = 5.0,
                 min_samples: int = 10, cooldown_s: float = 30.0):
        if threshold <= 1.0:
            raise ValueError(f'drift threshold must be > 1 (a ratio), got {threshold}')
        if window_s <= 0 or min_samples < 1:
            raise ValueError('drift window and min_samples must be positive')
        self.expected_ms = float(expected_ms)
        self.floor_ms = self.expected_ms    # what the choice was measured at (see accept)
        self.threshold = float(threshold)
        self.release = math.sqrt(self.threshold)    # clearly back: under this x (hysteresis)
        self.window_s = float(window_s)
        self.min_samples = int(min_samples)
        self.cooldown_s = float(cooldown_s)
        self._samples: deque = deque()
        self._quiet_until = -float('inf')
        self.fired = 0
        self.episodes = 0           # stretches of drift (see the module doc)
        self.in_episode = False
        self.new_episode = False    # the last firing began an episode: its line is due
        self.last_median_ms = float('nan')
        self.last_count = 0         # the frames that median was taken over

    def add(self, latency_ms: float, now: Optional[float] = None) -> bool:
        """Record one frame's latency; return True when drift is detected (now)."""
        now = time.monotonic() if now is None else now
        self._samples.append((now, float(latency_ms)))
        while self._samples and self._samples[0][0] < now - self.window_s:
            self._samples.popleft()
        if now < self._quiet_until or len(self._samples) < self.min_samples:
            return False
        if now - self._samples[0][0] < 0.8 * self.window_s:
            return False    # the window is not yet covered: too early to call it sustained
        self.last_median_ms = statistics.median(v for _, v in self._samples)
        self.last_count = len(self._samples)
        if self.last_median_ms > max(self.threshold * self.expected_ms,
                                     self.expected_ms + MIN_EXCESS_MS):
            self.fired += 1
            self.new_episode = not self.in_episode
            self.episodes += self.new_episode
            self.in_episode = True
            self._quiet_until = now + self.cooldown_s
            self._samples.clear()
            return True
        # hysteresis: a latency around the threshold (the process's own models on
        # two cores: 6.0-6.9 ms against 4.0 x 1.5) neither ends an episode nor
        # lowers an accepted level; only a median under ``release`` x the
        # expectation does (the load went), so it cannot start episode after episode
        release = self.release
        if self.last_median_ms < release * self.expected_ms:
            self.in_episode = False     # clearly back under the threshold: the episode is over
        if self.expected_ms > self.floor_ms:    # an accepted level follows the latency down
            if self.last_median_ms < release * self.floor_ms:
                self.expected_ms = self.floor_ms    # the load went
            else:
                self.expected_ms = max(self.floor_ms, min(
                    self.expected_ms, release * self.last_median_ms))
        return False

    def accept(self, level_ms: float) -> None:
        """Expect ``level_ms`` for now: the choice was checked at this load and kept.

        For a load that stays (the process's own other models on a small
        board): without it the alarm would fire every cooldown and keep the
        runners-up open for good. The expectation comes back down with the
        latency, never under the measured one, so the next rise fires again.
        """
        self.expected_ms = max(self.expected_ms, float(level_ms))
        self._samples.clear()
        self.in_episode = False

    def rebase(self, expected_ms: float, ends_episode: bool = True) -> None:
        """Set a new expected latency (after a re-evaluation) and start over.

        ``ends_episode``: False where nothing was switched (a re-evaluation kept
        the choice): drift that goes on is the same episode.
        """
        self.expected_ms = self.floor_ms = float(expected_ms)
        self._samples.clear()
        self.in_episode = self.in_episode and not ends_episode

    def refloor(self, floor_ms: float) -> None:
        """Expect ``floor_ms`` of the same choice from now: the graph around it changed.

        The samples and the episode stay (nothing was switched); a level
        accepted above the new floor stays too, and follows the latency down.
        """
        accepted = self.expected_ms > self.floor_ms
        self.floor_ms = float(floor_ms)
        self.expected_ms = max(self.expected_ms, self.floor_ms) if accepted else self.floor_ms


@dataclass
class Reevaluated:
    """A re-evaluation's outcome, waiting for the frame thread."""

    run: ProfileRun     # every candidate's figures; ``chosen`` still names the serving one
    backend: str        # the best one now
    why: str
    p50_ms: float       # its median latency, as just measured
    model: Optional[Model] = None   # ``backend`` opened: a switch; None: the choice stays


class Reevaluation:
    """Every working candidate measured again in the background: a part of the live choice.

    It reads the serving run from ``server`` and skips the backends in
    ``failed``. ``observer`` (optional) is told when one starts and ends.
    """

    def __init__(self, ctx: ChoiceContext, server: Server, failed: Container[str],
                 observer=None):
        self.ctx = ctx
        self._server = server
        self._failed = failed
        self._observer = observer
        self._running = threading.Lock()
        self.pending: Optional[Reevaluated] = None

    def start(self, drift: DriftMonitor) -> None:
        """Re-evaluate in the background (unless one runs); one line per drift episode."""
        if not self._running.acquire(blocking=False):
            return
        if drift.new_episode:   # once per episode (a repeat within it re-evaluates quietly)
            self.ctx.warn(f'latency drift: median {drift.last_median_ms:.1f} ms over '
                          f'{drift.window_s:g} s vs {drift.expected_ms:.1f} ms expected '
                          f'(x{drift.last_median_ms / drift.expected_ms:.2f}); '
                          f're-evaluating backends in the background')
        self.ctx.cancel.clear()
        if self._observer is not None:
            self._observer.reevaluation_started()
        self.ctx.spawn(self._reevaluate, 'reeval')

    @property
    def running(self) -> bool:
        """Return True while a re-evaluation runs."""
        return self._running.locked()

    def take(self) -> Optional[Reevaluated]:
        """Return the outcome waiting for the frame thread, once; None: none."""
        done, self.pending = self.pending, None
        return done

    def close(self) -> None:
        """Close a model opened for a switch that no frame took."""
        done = self.take()
        if done is not None and done.model is not None:
            done.model.close()

    def _reevaluate(self) -> None:
        ctx = self.ctx
        try:
            current, failed = self._server.run, self._failed
            if current is None:
                return
            with ctx.runtime.reevaluation:
                names = [r.backend for r in current.results
                         if r.status == 'ok' and r.backend not in failed]
                run = ctx.manager.profile(ctx.spec, ctx.model_path, use_cache=False,
                                          min_accuracy=ctx.settings.min_accuracy,
                                          only=names, cancel=ctx.cancel, persist=False)
            if ctx.cancel.is_set():
                return
            chosen, why = ctx.select(run.results)
            if chosen is None:
                ctx.log(f're-evaluation found no usable backend: {why}')
                return
            # keep the figures of candidates the re-run could not measure
            measured = {r.backend for r in run.results}
            run.results += [r for r in current.results if r.backend not in measured]
            for r in run.results:
                r.chosen = r is chosen
            run.chosen, run.why = current.chosen, why
            done = Reevaluated(run, chosen.backend, why, chosen.p50_ms)
            if chosen.backend != current.chosen:
                done.model = ctx.open_model(ctx.backend(chosen.backend))
            self.pending = done     # applied between frames: drift.add() runs on the frame thread
        except Exception as exc:  # keep serving on the current backend
            ctx.log(f're-evaluation failed: {type(exc).__name__}: {exc}')
        finally:
            self._running.release()
            if self._observer is not None:
                self._observer.reevaluation_done()
