# Copyright 2026 edge_infer contributors. Apache-2.0.
"""When a runner-up may be timed or served: the pace of online re-selection (no ROS).

:class:`Pacing` keeps the runners-up's time (served: what they took beyond
the chosen one) under ``duty`` x the chosen one's over the last
``horizon_s``, spread evenly: at most ``steady_share`` of the duty in steady
state, so a reserve builds up; eager (after a cue that the load changed, or
while the runner-up picked is ahead) the whole duty plus that reserve. A
close runner-up runs a frame itself (served) at most once in
``serve_every``. It reads no clock: every call is given ``now``. Why these
rules: :mod:`.rule` and docs/backend_choice.md.
"""

from collections import deque
import math
import statistics
from typing import Deque, Dict, List, Optional, Tuple

from .rule import LiveSettings

SERVE, RUN = 'serve', 'run'     # how a runner-up is sampled: runs a frame, or an extra run


class Window:
    """(time, value) samples over a sliding time window."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.items: Deque[Tuple[float, float]] = deque()

    def add(self, now: float, value: float) -> None:
        """Add a sample taken at ``now``."""
        self.items.append((now, value))
        self.trim(now)

    def trim(self, now: float) -> None:
        """Forget samples older than the window."""
        while self.items and self.items[0][0] < now - self.seconds:
            self.items.popleft()

    def total(self, now: float) -> float:
        """Return the sum of the samples in the window ending ``now``."""
        self.trim(now)
        return sum(v for _, v in self.items)


class Pacing:
    """The runners-up's share of compute, and when the next sample may be taken."""

    def __init__(self, settings: LiveSettings):
        self.settings = settings
        self.primary = Window(settings.horizon_s)   # the chosen one's ms per frame
        self.shadow = Window(settings.horizon_s)    # the runners-up's extra ms
        self.spent_ms = [0.0, 0.0]      # since start: the chosen one's time, runners-up's extra
        self.next_probe = 0.0           # steady pace: no sample before this
        self.next_eager = 0.0           # eager pace: no sample before this
        self.eager_until = 0.0          # a cue to look: eager until then
        self.changed_at = -math.inf     # the last cue that the load changed
        self.t_first = float('nan')     # the chosen one's first frame
        self.last_ms = float('nan')     # the chosen one's last frame
        # the chosen one's last frames: a served frame's reference (with those after it)
        self.reference: Deque[float] = deque(maxlen=settings.reference_frames)
        self.frames_since_served = 0
        self._openings_ended = 0
        # served frames awaiting the chosen one's frames after them: [name, t, ms, before, after]
        self.awaiting: List[list] = []
        self._costs: Dict[str, Deque[float]] = {}   # name -> compute its last samples added

    def chosen_ran(self, now: float, ms: float, openings: Tuple[int, int] = (0, 0),
                   frame_ms: Optional[float] = None) -> None:
        """Count a frame the chosen backend ran in ``ms``.

        ``openings``: (sessions opening now, openings ended) in the process
        (:class:`.runners_up.Openings`): a frame timed while one opened is no
        reference, and an opening that ended since the last frame clears it.
        ``frame_ms``: the frame's whole cost (preprocessing too), what a served
        frame is compared with; ``ms`` (the run) pairs with extra runs.
        """
        if not math.isfinite(self.t_first):
            self.t_first = now
        busy, ended = openings
        if busy or ended != self._openings_ended:
            self.reference.clear()
            self.awaiting.clear()
            self._openings_ended = ended
            self.last_ms = float('nan')     # no pair with a frame slowed by an opening
        else:
            self.last_ms = ms
            whole = ms if frame_ms is None else frame_ms
            self.reference.append(whole)
            for entry in self.awaiting:
                entry[4].append(whole)
        self.primary.add(now, ms)
        self.spent_ms[0] += ms

    def served(self, name: str, now: float, ms: float) -> None:
        """Hold a frame runner-up ``name`` served until the chosen one's next frames came.

        It is compared with the mean of the chosen one's frames around it: as
        many after as before (``reference_frames`` // 2 each). The mean of the
        frames before alone favoured it at every edge of a bursty load: a frame
        served as a burst ended was judged against the burst's frames. A mean,
        as the robot pays it: a median would leave out the stalls a busy core
        gives a 2-thread choice.
        """
        half = max(1, self.settings.reference_frames // 2)
        self.awaiting.append([name, now, ms, list(self.reference)[-half:], []])

    def judged(self) -> List[Tuple[str, float, float, float]]:
        """Return (name, time, the chosen one's ms around it, its ms) of each completed one."""
        done = [e for e in self.awaiting if len(e[4]) >= len(e[3])]
        if not done:
            return []
        self.awaiting = [e for e in self.awaiting if len(e[4]) < len(e[3])]
        return [(e[0], e[1], statistics.fmean(e[3] + e[4]), e[2]) for e in done]

    def cue(self, now: float) -> None:
        """Look now: the load may have changed (eager for ``alert_s``)."""
        self.eager_until = now + self.settings.alert_s
        self.changed_at = now

    def may_pair(self) -> bool:
        """Return True when the last frame ran on the chosen one (an extra run pairs with it)."""
        return self.frames_since_served > 0 and math.isfinite(self.last_ms)

    def reference_full(self) -> bool:
        """Return True when the chosen one ran enough frames to compare a served one with."""
        return len(self.reference) == self.reference.maxlen

    def due(self, now: float, ratio: float, pairs: int) -> bool:
        """Return True when the runner-up picked may be sampled now, at its pace.

        ``ratio``: its median time ratio as last seen (0: unknown); ``pairs``:
        how many it has. Eager after a cue, while it is ahead, and after a
        cue (within ``window_s``) until it has ``max_pairs`` pairs.
        """
        st = self.settings
        eager = (now < self.eager_until or ratio < 1.0 or
                 (now - self.changed_at < st.window_s and pairs < st.max_pairs))
        return now >= (self.next_eager if eager else self.next_probe)

    def allows(self, now: float, expect: float) -> Optional[str]:
        """Return how a runner-up expected at ``expect`` x the chosen one's time may run now.

        :data:`SERVE` (it runs the next frame), :data:`RUN` (an extra run on
        the last frame's input), or None: not on this frame (``serve_every``),
        or over the duty's bound.
        """
        st = self.settings
        serve = st.serve and expect <= st.serve_max_ratio and self.reference_full()
        if serve and self.frames_since_served + 1 < st.serve_every:
            return None
        # the bound: a run may take longer than the last one did (served: what it
        # takes beyond the chosen one's time is the cost)
        guess = self.last_ms * (max(0.0, expect - 1.0) if serve else expect)
        if self.shadow.total(now) + 1.5 * guess > st.duty * self.primary.total(now):
            return None
        return SERVE if serve else RUN

    def spent(self, name: str, now: float, cost: float, chosen_ms: float, served: bool,
              runners: int) -> None:
        """Count one sample of runner-up ``name`` (``cost``: the compute it added); set the pace.

        ``served``: it ran the frame, and the chosen one's ``chosen_ms`` counts
        as if it had; ``runners``: how many runners-up are open.
        """
        st = self.settings
        self.shadow.add(now, cost)
        self.spent_ms[1] += cost
        if served:      # the chosen one did not run this frame: count what it would take
            self.primary.add(now, chosen_ms)
            self.spent_ms[0] += chosen_ms
        # spread the runs evenly at the duty's pace; eager, the reserve left under
        # the bound is spent over reserve_s as well
        elapsed = min(st.horizon_s, max(now - self.t_first, 1.0))
        primary = self.primary.total(now)
        rate = primary / elapsed      # the chosen one's ms per second
        reserve = max(0.0, st.duty * primary - self.shadow.total(now))
        # a typical run sets the pace (one stall of 40 ms would stop the runs for 8 s;
        # the bound over the horizon still pays for it)
        costs = self._costs.setdefault(name, deque(maxlen=st.min_pairs))
        costs.append(cost)
        cost = statistics.median(costs)
        spacing = cost / (st.duty * rate) if rate > 0 else 0.0
        self.next_eager = now + (cost / (st.duty * rate + reserve / st.reserve_s)
                                 if rate > 0 else 0.0)
        self.next_probe = now + max(st.probe_interval_s / max(1, runners),
                                    spacing / st.steady_share)

    def forget(self, name: str) -> None:
        """Forget runner-up ``name``'s costs (it is no longer open)."""
        self._costs.pop(name, None)
        self.awaiting = [e for e in self.awaiting if e[0] != name]

    def new_choice(self) -> None:
        """Start over for a new chosen backend: its level is measured from its own frames."""
        self.reference.clear()
        self.awaiting.clear()
        self._costs.clear()

    def overhead(self, now: float, since_start: bool = False) -> float:
        """Return the runners-up's extra time / the chosen one's (over ``horizon_s``, or all)."""
        if since_start:
            return self.spent_ms[1] / self.spent_ms[0] if self.spent_ms[0] else 0.0
        primary = self.primary.total(now)
        return self.shadow.total(now) / primary if primary else 0.0


def pre_delta(mine, other) -> float:
    """Return runner-up ``other``'s CPU preprocessing minus the chosen ``mine``'s (profiled).

    Live times compare runs; a runner-up that takes another input kind (a
    ``+pre`` candidate) costs that much more or less per frame. ``mine``,
    ``other``: their :class:`..measure.profiling.CandidateResult` (None: unknown, 0).
    """
    if mine is None or other is None or mine.input_kind == other.input_kind:
        return 0.0
    return other.pre_ms - mine.pre_ms


def expected_ratio(seen: Optional[float], mine, other) -> float:
    """Return a runner-up's time / the chosen one's: ``seen`` live, else from the profile."""
    if seen is not None:
        return seen
    if mine and other and mine.p50_ms > 0 and math.isfinite(other.p50_ms):
        return (other.p50_ms + pre_delta(mine, other)) / mine.p50_ms
    return float('inf')
