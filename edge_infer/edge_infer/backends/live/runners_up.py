# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The runners-up of the run-time choice: their open sessions and their samples (no ROS).

:class:`RunnerPool` holds the sessions of the next best backends, open so
that one can be sampled on a real frame or take over between two frames
without opening one, and each one's pairs (time, the chosen one's ms, its ms):
the evidence the switch rule (:func:`.rule.paired_verdict`) judges.
The background thread that opens them and the frame thread share it: every
method takes its lock. :func:`wanted` says which to open. It reads no
clock: every call is given ``now``.
"""

from collections import deque
import contextlib
import statistics
import threading
from typing import Deque, Dict, List, Optional, Sequence, Tuple

from .rule import LiveSettings
from ...core.backend import Session
from ...core.model import Model

Pair = Tuple[float, float, float]       # (time, the chosen one's ms, the runner-up's ms)


class Openings:
    """Sessions being opened anywhere in the process: work on every core while it lasts.

    Compiling a session (OpenVINO: 0.1-1 s of CPU each) slows every model's
    frames. A served runner-up is compared with the chosen one's last frames,
    so frames timed during the opening made the chosen one look slow: lazily
    reopened runners-up won 5 of 5 pairs by 13-30 % and switched the
    container back and forth (bench/product/footprint.py, warm). Samples are not
    taken while ``busy``; ``ended`` counts finished openings, so that each
    model drops the reference frames an opening overlapped.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self.busy = 0
        self.ended = 0

    @contextlib.contextmanager
    def opening(self):
        """Mark a stretch in which sessions are being opened."""
        with self._lock:
            self.busy += 1
        try:
            yield
        finally:
            with self._lock:
                self.busy -= 1
                self.ended += 1


def wanted(ranked: Sequence[str], threads: Dict[str, Optional[int]], chosen: str,
           count: int) -> List[str]:
    """Return the runners-up to open: the best ``count`` of ``ranked`` (the chosen one left out).

    When all of them run with the chosen one's thread count, the last place
    goes to the best one with another: foreign load mostly changes which
    thread count wins (measured: a busy core makes 1-thread OpenVINO beat
    2-thread by 5-10 %), even where the quiet profile ranks it lower.
    """
    want = list(ranked[:count])
    mine = threads.get(chosen)
    if want and mine is not None and all(threads.get(n) == mine for n in want):
        other = next((n for n in ranked if threads.get(n) not in (None, mine)), None)
        if other is not None:
            want[-1] = other
    return want


class RunnerPool:
    """Open runner-up sessions, their pairs, and what each one's ratio was when last seen."""

    def __init__(self, settings: LiveSettings):
        self.settings = settings
        self._lock = threading.Lock()
        self._sessions: Dict[str, Session] = {}
        self._pairs: Dict[str, Deque[Pair]] = {}
        self._known: Dict[str, Tuple[float, float]] = {}   # name -> (time, median ratio)
        self._models: Dict[str, Model] = {}     # name -> the Model that serves frames on it
        self._screened: Dict[str, Tuple[float, object]] = {}   # name -> (time, first look)
        self.rotation = 0       # whose turn it is among equals

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, name: str) -> bool:
        return name in self._sessions

    def names(self) -> List[str]:
        """Return the open runners-up's names."""
        with self._lock:
            return list(self._sessions)

    def get(self, name: str):
        """Return runner-up ``name``'s session, None if it is not open."""
        with self._lock:
            return self._sessions.get(name)

    def add(self, name: str, session) -> None:
        """Watch ``session`` as runner-up ``name``, with no pairs yet."""
        with self._lock:
            self._sessions[name] = session
            self._pairs[name] = deque()

    def model(self, name: str, base):
        """Return a Model running runner-up ``name`` with ``base``'s pre/post-processing.

        Made once per session (``base.with_session``); None if it is not open.
        """
        sess = self.get(name)
        if sess is None:
            return None
        model = self._models.get(name)
        if model is None or model.session is not sess:
            model = self._models[name] = base.with_session(sess)
        return model

    def screened(self, name: str, now: float):
        """Return the verdict of ``name``'s first look awaiting its confirmation (None: none).

        A first look older than ``window_s`` is forgotten, as its pairs are.
        """
        with self._lock:
            hit = self._screened.get(name)
            if hit is not None and hit[0] < now - self.settings.window_s:
                del self._screened[name]
                hit = None
        return hit[1] if hit is not None else None

    def screen(self, name: str, now: float, verdict) -> None:
        """Record ``name``'s passing first look and forget its pairs: the next ones confirm."""
        with self._lock:
            if name in self._pairs:
                self._screened[name] = (now, verdict)
                self._pairs[name].clear()

    def unscreen(self, name: str, forget_pairs: bool = False) -> None:
        """End ``name``'s confirmation (it was judged); ``forget_pairs``: start afresh."""
        with self._lock:
            self._screened.pop(name, None)
            if forget_pairs and name in self._pairs:
                self._pairs[name].clear()

    def take(self, name: str):
        """Stop watching runner-up ``name`` and return its session (None: not open)."""
        with self._lock:
            self._screened.pop(name, None)
            self._pairs.pop(name, None)
            self._known.pop(name, None)
            return self._sessions.pop(name, None)

    def drop(self, name: str) -> None:
        """Stop watching runner-up ``name`` and close its session."""
        with self._lock:
            sess = self._sessions.pop(name, None)
            self._screened.pop(name, None)
            self._pairs.pop(name, None)
            self._known.pop(name, None)
            self._models.pop(name, None)
        if sess is not None:
            sess.close()

    def promote(self, name: str, old: str, old_session, time_ratio: float, now: float):
        """Return runner-up ``name``'s session, taking over from ``old`` (now a runner-up).

        ``time_ratio``: ``name``'s time / ``old``'s; what is known of the
        others' ratios becomes relative to ``name``.
        """
        with self._lock:
            sess = self._sessions.pop(name)
            self._pairs.pop(name)
            self._screened.clear()
            self._known.pop(name, None)
            self._known = {n: (t, r / time_ratio) for n, (t, r) in self._known.items()}
            self._known[old] = (now, 1 / time_ratio)
            self._sessions[old] = old_session
            self._pairs[old] = deque()
        return sess

    def record(self, name: str, now: float, chosen_ms: float, ms: float) -> None:
        """Add a pair of runner-up ``name`` (its last ``max_pairs`` are kept)."""
        st = self.settings
        with self._lock:
            pairs = self._pairs.get(name)
            if pairs is None:
                return
            pairs.append((now, chosen_ms, ms))
            while len(pairs) > st.max_pairs:
                pairs.popleft()
            recent = list(pairs)[-st.min_pairs:]
            self._known[name] = (now, statistics.median(p[2] / p[1] for p in recent))

    def pairs(self, name: str) -> List[Pair]:
        """Return runner-up ``name``'s pairs, oldest first."""
        with self._lock:
            return list(self._pairs.get(name, ()))

    def ratio(self, name: str) -> Optional[float]:
        """Return ``name``'s time / the chosen one's as last seen; None: never seen.

        The median over its last ``min_pairs`` pairs, else the ratio
        remembered when its pairs were forgotten.
        """
        with self._lock:
            pairs = list(self._pairs.get(name, ()))
            known = self._known.get(name)
        if pairs:
            return statistics.median(p[2] / p[1] for p in pairs[-self.settings.min_pairs:])
        if known and known[1] > 0:
            return known[1]
        return None

    def pick(self, now: float) -> Optional[Tuple[str, float]]:
        """Return the runner-up to sample next and its median ratio as last seen (0: unknown).

        One not timed in the last ``window_s`` first (in turn), else the lowest
        median ratio over its last ``min_pairs`` pairs: the one most likely to be
        faster gathers its evidence first, and a clearly slower one costs one
        run per ``window_s``. The ratio is remembered when pairs are forgotten
        (a load change): it still says which one to time first. None: none open.
        """
        window = self.settings.window_s
        ratios = {}
        with self._lock:
            names = list(self._sessions)
            for name in names:
                pairs = self._pairs[name]
                while pairs and pairs[0][0] < now - window:
                    pairs.popleft()         # measured under the load of another moment
                known = self._known.get(name)
                ratios[name] = known[1] if known and known[0] >= now - window else 0.0
        if not names:
            return None
        start = self.rotation % len(names)
        order = names[start:] + names[:start]
        name = min(order, key=lambda n: ratios[n])  # min keeps the first of equals: in turn
        return name, ratios[name]

    def forget_before(self, since: float) -> None:
        """Forget the pairs taken before ``since`` (they describe the load before a change)."""
        with self._lock:
            for pairs in self._pairs.values():
                while pairs and pairs[0][0] < since:
                    pairs.popleft()
            # a first look taken under the old load confirms nothing under the new one
            self._screened = {n: s for n, s in self._screened.items() if s[0] >= since}

    def new_choice(self) -> None:
        """Forget every pair (measured against the old choice) and the serving Models."""
        with self._lock:
            for pairs in self._pairs.values():
                pairs.clear()
            self._models.clear()
            self._screened.clear()

    def close(self) -> None:
        """Close every session."""
        with self._lock:
            sessions, self._sessions = dict(self._sessions), {}
            self._pairs = {}
            self._models = {}
            self._screened = {}
        for sess in sessions.values():
            sess.close()


class RunnerHours:
    """When the runners-up are open (memory): always, or for a look after each cue.

    Each open runner-up is a whole session (25-80 MB for a small model on
    OpenVINO; 8 of them held ~200 MB of the four-model container,
    bench/product/memory_parts.py). With ``runners_idle_s`` > 0 they are open for a
    look after a fresh choice, a cue that the load changed, a drift alarm or
    a switch, and every ``runners_recheck_s``: until the look is answered
    (:meth:`answered`) or ``runners_idle_s`` has passed, whichever is first;
    then closed until the next. 0: open all the time. While ``standby`` (the
    chosen backend is a server on the network) they stay open: the best local
    one takes a frame at once when the server dies or stalls (a fallback that
    had to open a session took 20-30 ms more here). Reads no clock.
    """

    def __init__(self, settings: LiveSettings):
        self.settings = settings
        self.until = float('-inf')      # open until then
        self.next_check = float('inf')  # the next look without a cue
        self.since = float('-inf')      # the current look began then (its pairs count)
        self.answered_at = float('-inf')    # the last look that was answered ended then
        self.standby = False    # the chosen one is remote: keep them open
        self.answered_now = False   # the last 'close' came as the look was answered

    @property
    def lazy(self) -> bool:
        """Return whether the runners-up close when idle."""
        return self.settings.runners_idle_s > 0

    def cue(self, now: float) -> None:
        """Keep (or get) them open for ``runners_idle_s`` from ``now``: a look begins."""
        self.until = max(self.until, now + self.settings.runners_idle_s)
        self.next_check = now + self.settings.runners_recheck_s
        self.since = now

    def wait(self, now: float) -> None:
        """Keep a look wanted while it waits its turn for memory (:mod:`.runner_memory`)."""
        self.until = max(self.until, now + 1.0)

    def tend(self, now: float, pool: RunnerPool) -> Optional[str]:
        """Return 'open' or 'close' when ``pool`` should be, None when it is as it should be.

        A runner-up awaiting its confirming look keeps the pool open.
        """
        if not self.lazy:
            return None
        if self.standby:
            return 'open' if not pool else None
        want = self.want_open(now)
        if want and not pool:
            return 'open'
        if pool and want and self.answered(pool, now):
            self.until, self.answered_at = now, now     # the look is over
            self.answered_now = True
            return 'close'
        if not want and pool and not any(pool.screened(n, now) for n in pool.names()):
            self.answered_at = now      # as answered as it gets within runners_idle_s
            self.answered_now = False
            return 'close'
        return None

    def answered(self, pool: RunnerPool, now: float) -> bool:
        """Return True when every open runner-up was timed enough since the look began.

        Enough: ``max_pairs`` pairs, or ``min_pairs`` whose median time is not
        under the chosen one's, or pairs all over ``serve_max_ratio`` x its
        time (a clear loser: :meth:`RunnerPool.pick` times it once per
        ``window_s`` only); none awaiting its confirming look.
        """
        st = self.settings
        names = pool.names()
        for name in names:
            if pool.screened(name, now) is not None:
                return False
            ratios = [p[2] / p[1] for p in pool.pairs(name) if p[0] >= self.since and p[1] > 0]
            if not (len(ratios) >= st.max_pairs or
                    (len(ratios) >= st.min_pairs and statistics.median(ratios) >= 1.0) or
                    (ratios and min(ratios) >= st.serve_max_ratio)):
                return False
        return bool(names)

    def want_open(self, now: float) -> bool:
        """Return whether they should be open at ``now`` (a due look counts as a cue)."""
        if not self.lazy:
            return True
        if now >= self.next_check:
            self.cue(now)
        return now < self.until
