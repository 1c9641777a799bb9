# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Cues that the load changed, for the run-time choice (no ROS).

:class:`LoadWatch` watches two things: the chosen backend's latency level
(a cue to time the runners-up now, not a reason to forget their samples:
under a busy core that latency swings by 30-90 % every second or two) and
the CPU time other processes used (``/proc``): when two successive
``load_period_s`` windows both moved the same way by more than
``load_change_cores``, the load changed, and samples taken before are
forgotten. It reads no clock: every call is given ``now``. Why so:
:mod:`.rule` and docs/backend_choice.md. :class:`Observer` is what a
LiveChoice and its LoadWatch tell a test or benchmark (load readings, cues,
samples).
"""

from collections import deque
import math
import statistics
from typing import Callable, Optional, Tuple

from .rule import LiveSettings
from ..measure.load_probe import LoadProbe

Foreign = Callable[[], Optional[float]]     # the cores others used since the last call


class Observer:
    """What a LiveChoice tells an observer (tests, benchmarks); here each call does nothing."""

    def paired(self, t: float, chosen: str, runner: str, chosen_ms: float,
               runner_ms: float) -> None:
        """Take one sample of ``runner`` against ``chosen`` (ms each) at time ``t``."""

    def load(self, t: float, cores: float) -> None:
        """Take one reading of the cores other processes used."""

    def alert(self, t: float, why: str) -> None:
        """Take a cue that the load changed."""

    def reevaluation_started(self) -> None:
        """Note that a background re-evaluation (drift) started."""

    def reevaluation_done(self) -> None:
        """Note that it ended."""


class ForeignLoad:
    """The cores other processes used since the last call, from /proc (None: unknown)."""

    def __init__(self):
        self.probe = LoadProbe().start()

    def __call__(self) -> Optional[float]:
        cond = self.probe.stop()
        self.probe.start()
        if not cond or cond.get('window_s', 0.0) < 0.2:
            return None
        return float(cond['foreign_cores'])


class LoadWatch:
    """The chosen one's latency level and the foreign load, watched for a change."""

    def __init__(self, settings: LiveSettings, foreign: Optional[Foreign] = None,
                 observer: Optional[Observer] = None):
        """Watch with ``foreign`` (None: /proc once :meth:`start` runs, if asked for).

        ``observer``: told every foreign load read (``observer.load(t, cores)``).
        """
        self.settings = settings
        self.foreign = foreign
        self.observer = observer
        self._window = 2 * settings.level_frames
        self._recent: deque = deque(maxlen=self._window)  # (t, ms): the chosen one's frames
        self._level = float('nan')          # its latency level when last settled
        self._next_load = 0.0
        self.foreign_level = float('nan')   # foreign cores when last settled
        self._foreign_last = float('nan')

    def start(self) -> None:
        """Read the foreign load from /proc when no source was given and a change counts."""
        if self.foreign is None and self.settings.load_change_cores > 0:
            self.foreign = ForeignLoad()

    def new_choice(self) -> None:
        """Start over for a new chosen backend: its level is measured from its own frames."""
        self._recent.clear()
        self._level = float('nan')

    def latency(self, now: float, ms: float) -> Optional[str]:
        """Add a frame of the chosen one; return why when its level moved (a cue), else None.

        Moved: the medians of its last ``level_frames`` frames and of the
        ``level_frames`` before both moved the same way by more than
        ``alert_change`` from the level.
        """
        self._recent.append((now, ms))
        if len(self._recent) < self._window:
            return None
        items = [v for _, v in self._recent]
        k = len(items) // 2
        older, level = statistics.median(items[:k]), statistics.median(items[k:])
        if not math.isfinite(self._level):
            self._level = level
            return None
        change = self.settings.alert_change
        moves = (older / self._level - 1, level / self._level - 1)
        if min(moves) > change or max(moves) < -change:
            why = f'latency {self._level:.2f} -> {level:.2f} ms'
            self._level = level
            self._recent.clear()
            return why
        return None

    def due(self, now: float) -> bool:
        """Return True when a foreign load window ended (and there is a source)."""
        return self.foreign is not None and now >= self._next_load

    def poll(self, now: float) -> Optional[Tuple[str, float]]:
        """Read the foreign load; return (why, since when) when it changed, else None.

        Changed: this window and the one before both moved the same way from
        the level; ``since``: the start of the older one.
        """
        st = self.settings
        self._next_load = now + st.load_period_s
        if self.foreign is None:
            return None
        try:
            cores = self.foreign()
        except Exception:  # /proc unreadable: the latency watch still works
            cores = None
        if cores is None:
            return None
        if self.observer is not None:
            self.observer.load(now, cores)
        if not math.isfinite(self.foreign_level):
            self.foreign_level = self._foreign_last = cores
            return None
        step = st.load_change_cores
        moves = (self._foreign_last - self.foreign_level, cores - self.foreign_level)
        self._foreign_last = cores
        if min(moves) > step or max(moves) < -step:
            why = f'foreign load {self.foreign_level:.2f} -> {cores:.2f} cores'
            self.foreign_level = cores
            return why, now - 2 * st.load_period_s     # both windows moved
        return None
