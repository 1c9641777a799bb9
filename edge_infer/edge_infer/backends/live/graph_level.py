# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A model's latency in THIS graph on THIS board: learned, cached, expected (no ROS).

Each candidate is profiled alone; the robot runs its models together, in one
process on the same cores. In the default four-model graph on a 2-core
board a model's normal latency there is 1.5-2.2x its profile, so on a warm
start at 10 Hz every node's drift alarm fired in the same second ("median
35.9 ms vs 21.1 ms profiled", "16.6 ms vs 7.6 ms") and each opened its
runners-up (memory, and CPU beside the other models). The monitor's
:meth:`.drift.DriftMonitor.accept` took the level after a look, but only
for the process's life, and only after the alarm and the look.

So the drift monitor expects max(the profiled p50, the model's **graph
level**): its median latency in this graph, learned by an earlier start and
kept in the profile cache (:meth:`GraphLevel.expect`, one log line when it
is used). It is learned (:meth:`GraphLevel.frame`) from the serving
backend's own frames (a runner-up's served frames never reach it) over
``learn_s`` seconds and at least ``min_frames`` frames taken while the graph
is steady: no model of the process profiles (a provisional start, the
settle or the completion), re-evaluates or has a look at its runners-up
open, no session is being opened, and this model's monitor is in no drift
episode. On a first start the alarm still fires, the runners-up are looked
at and the level is accepted as before (:meth:`GraphLevel.accept`); that
level is stored as well, so the next start raises no alarm. A level is
written again only when a steady window moves it by over ``CHANGE``; within
a process a newly learned level is not expected at once (a slowdown under
the threshold would otherwise be chased upward window after window): the
next start, or a change of the graph, reads it. A real slowdown, 2x over
the graph's level, still fires, and the choice still moves when a runner-up
is faster.

The models of a process form its graph (:class:`GraphModels`, one per
backend manager, which is one per process: :func:`..manager.shared_manager`).
Each :class:`.choice.LiveChoice` joins it when made and leaves when closed;
the nodes of a container are configured one after the other, so a model
that started first sees the others join and its expectation follows
(the graph's ``version``).
"""

import math
import statistics
import threading
import time
from typing import Dict, List, Optional, Tuple
import weakref

from .context import ChoiceContext, Member
from .drift import DriftMonitor, Reevaluation
from .runners_up import RunnerHours, RunnerPool
from .startup import BackgroundProfile
from ..measure.cache import entry_key
from ...checksums import sha256_kept

LEARN_S = 30.0      # a steady window this long (simulated or real seconds) ...
MIN_FRAMES = 50     # ... and at least this many frames: one figure of the level
CHANGE = 0.10       # a steady window this far off the stored level: stored again
KIND = 'graph_level'    # the cache entries' kind (the profile's are 'profile')


class GraphModels:
    """The models one process serves (one manager's live choices): the graph's signature."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._members: Dict[int, Tuple[weakref.ref, str]] = {}
        self.version = 0        # bumped at every join and leave

    def join(self, member: Member, model: str) -> None:
        """Count ``member`` (one model's live choice) as serving ``model`` in this process."""
        with self._lock:
            self._members[id(member)] = (weakref.ref(member), model)
            self.version += 1

    def leave(self, member: Member) -> None:
        """Stop counting ``member`` (idempotent)."""
        with self._lock:
            if self._members.pop(id(member), None) is not None:
                self.version += 1

    def _live(self) -> List[Tuple[Member, str]]:
        """Return the members still there (one that was never closed and is gone leaves)."""
        with self._lock:
            gone = [k for k, (ref, _) in self._members.items() if ref() is None]
            for k in gone:
                del self._members[k]
            self.version += bool(gone)
            return [(m, model) for ref, model in self._members.values()
                    if (m := ref()) is not None]

    def signature(self) -> Tuple[str, ...]:
        """Return the models served, sorted, a model served by two nodes twice."""
        return tuple(sorted(model for _, model in self._live()))

    def busy(self, looks: bool = True) -> str:
        """Return why the graph is not in its normal state ('' when it is)."""
        for member, model in self._live():
            why = member.busy(looks)
            if why:
                return f'{model}: {why}'
        return ''


class GraphLevel:
    """One model's expectation in its graph: looked up, learned, stored (a part of LiveChoice).

    The parts passed say whether this model is busy (:meth:`busy`). The
    cache is the manager's ``cache`` (:class:`..measure.cache.ProfileCache`):
    without one (a simulated manager) nothing is learned or expected.
    """

    def __init__(self, ctx: ChoiceContext, startup: BackgroundProfile,
                 reevaluation: Reevaluation, runners: RunnerPool, hours: RunnerHours,
                 learn_s: float = LEARN_S, min_frames: int = MIN_FRAMES):
        self.ctx = ctx
        self.learn_s, self.min_frames = float(learn_s), int(min_frames)
        self._startup, self._reevaluation = startup, reevaluation
        self._runners, self._hours = runners, hours
        self.cache = getattr(ctx.manager, 'cache', None)
        self.graph = ctx.runtime.graph
        self.graph.join(self, ctx.spec.name)
        self.level_ms = 0.0         # the graph's level expected now (0: none)
        self._seen = -1             # the graph's version the expectation was made for
        self._backend = ''          # ... the backend it is for
        self._base_ms = math.nan    # ... and what it would be without the graph's level
        self._window: List[float] = []      # the steady frames' latency (ms)
        self._since = math.nan      # the first of them came then
        self._written: Dict[str, float] = {}    # key -> the level this process stored
        self._parts: Dict[str, dict] = {}   # backend -> its part of the key (made once)
        self._described: Dict[str, Tuple[dict, dict]] = {}  # backend -> options, versions
        self._sha: Optional[str] = None
        self._said: Optional[tuple] = None  # what the last line said (said once)

    def leave(self) -> None:
        """Leave the graph (the model is closed)."""
        self.graph.leave(self)

    def busy(self, looks: bool = True) -> str:
        """Return why this model is not in its steady state ('' when it is).

        ``looks``: a look at the runners-up counts (where they close when
        idle: open all the time, they are the steady state).
        """
        if self._startup.provisional or self._startup.profiling:
            return 'profiling'
        if self._reevaluation.running:
            return 're-evaluating'
        hours = self._hours
        if looks and hours.lazy and not hours.standby and len(self._runners):
            return 'a look at the runners-up'
        return ''

    # ---------------------------------------------------------------- expect
    def expect(self, backend: str, ms: float) -> float:
        """Return what to expect of ``backend``: max(``ms``, its level in this graph)."""
        self._backend, self._base_ms = backend, float(ms)
        self._reset()
        sig = self.graph.signature()
        self._seen = self.graph.version
        level_ms, when = self._stored(backend, sig) or (0.0, 0.0)
        self.level_ms = level_ms if level_ms > ms else 0.0
        if self.level_ms and self._said != (backend, sig, self.level_ms):
            self._said = (backend, sig, self.level_ms)
            learned = time.strftime('%Y-%m-%d %H:%M', time.localtime(when))
            self.ctx.log(f"expecting {self.level_ms:.1f} ms: this model's level in this graph "
                         f'({len(sig)} models), learned {learned}; alone {ms:.1f} ms')
        return max(float(ms), self.level_ms)

    def rebase(self, drift: Optional[DriftMonitor], backend: str, ms: float,
               ends_episode: bool = True) -> None:
        """Let ``drift`` (if any) expect ``backend``: ``ms``, or its level in this graph."""
        if drift is not None:
            drift.rebase(self.expect(backend, ms), ends_episode)

    def _stored(self, backend: str, sig: Tuple[str, ...]) -> Optional[Tuple[float, float]]:
        """Return (level ms, when learned) stored for ``backend`` in graph ``sig``; None: none."""
        if self.cache is None:
            return None
        self.cache.refresh()    # another process (a start before this one) may have written
        value = self.cache.get(self._key(backend, sig)[0])
        if not value or not (value.get('level_ms', 0) > 0):
            return None
        return float(value['level_ms']), float(value.get('learned', 0.0))

    def _key(self, backend: str, sig: Tuple[str, ...]) -> Tuple[str, dict]:
        """Return the cache key of a level and its parts.

        What changes a model's latency in the graph: the board (the profile's
        fingerprint: CPU, cores, GPU, power mode, governor), the model file
        (its sha256, as the profile's key), the backend with its options and
        library versions (as the profile's key: a new library measures
        anew), and the graph: the models served beside it in this process.
        The graph is the models alone, not their backends: another model's
        online switch would otherwise leave every model without a level,
        and its alarm would fire again; a model served by two nodes counts
        twice (twice the frames on the cores). The host's other processes
        are foreign load (:mod:`.load_watch`, :mod:`edge_infer.host_budget`),
        not the graph.
        """
        parts = self._parts.get(backend)
        if parts is None:
            options, versions = self._describe(backend)
            if self._sha is None:
                try:
                    self._sha = sha256_kept(self.ctx.model_path)
                except OSError:
                    self._sha = ''
            parts = self._parts[backend] = {
                'kind': KIND, 'board': getattr(self.ctx.manager, 'board', {}),
                'model': self.ctx.spec.name, 'model_sha256': self._sha, 'backend': backend,
                'options': options, 'versions': versions}
        full = {**parts, 'graph': list(sig)}
        return entry_key(full), full

    def _describe(self, backend: str) -> Tuple[dict, dict]:
        """Return the options and library versions of candidate ``backend``.

        Every candidate's at the first call (at the start: a switch later, on
        the frame thread, does not make the candidates again); ({}, {}) for
        one that is no longer a candidate (its name still keys it).
        """
        if backend not in self._described:
            try:
                for b in self.ctx.manager.candidates(self.ctx.spec, self.ctx.model_path):
                    self._described[b.name] = (b.options(), b.versions())
            except Exception as exc:  # keyed by the name alone
                self.ctx.log(f'graph level: candidates not described ({exc})')
        return self._described.setdefault(backend, ({}, {}))

    # ----------------------------------------------------------------- learn
    def frame(self, drift: Optional[DriftMonitor], ms: float, now: float) -> None:
        """Take one frame of the serving backend (before the monitor judges it)."""
        if drift is None or self.cache is None or not self._backend:
            return      # no monitor: nothing to expect (a fixed choice still counts as a model)
        if self.graph.version != self._seen:    # a model joined or left: another graph
            drift.refloor(self.expect(self._backend, self._base_ms))
        if drift.in_episode or self.ctx.runtime.openings.busy or self.graph.busy():
            return      # not the graph's normal state: skipped (the window goes on after it)
        if not self._window:
            self._since = now
        self._window.append(float(ms))
        if len(self._window) >= self.min_frames and now - self._since >= self.learn_s:
            level, frames = statistics.median(self._window), len(self._window)
            self._reset()
            self._store(level, frames, 'steady')
            if self.level_ms and level < (1.0 - CHANGE) * self.level_ms:
                # lower at once (more sensitive); a higher level waits for the next start
                self.level_ms = level if level > self._base_ms else 0.0
                drift.refloor(max(self._base_ms, level))

    def accept(self, drift: DriftMonitor) -> None:
        """Accept the level a look at the runners-up kept (:meth:`DriftMonitor.accept`); store it.

        Not while a model of the process profiles or re-evaluates: its work
        would be in the level.
        """
        drift.accept(drift.last_median_ms)
        if self.cache is not None and self._backend and not self.graph.busy(looks=False):
            self._store(drift.last_median_ms, drift.last_count, 'accepted', force=True)

    def _store(self, level_ms: float, frames: int, how: str, force: bool = False) -> None:
        """Write the level for this graph, in the background (the frame goes on)."""
        sig = self.graph.signature()
        key, parts = self._key(self._backend, sig)
        old = self._written.get(key)
        if old is None:
            found = self._stored(self._backend, sig)
            old = found[0] if found else None
        if not force and old is not None and abs(level_ms / old - 1.0) <= CHANGE:
            return
        self._written[key] = level_ms
        value = {'level_ms': level_ms, 'frames': frames, 'how': how, 'learned': time.time(),
                 'alone_ms': self._base_ms}
        cache, log = self.cache, self.ctx.log
        assert cache is not None

        def write() -> None:
            try:    # the cache's writer: locked, merged, never half a file
                cache.put(key, value, parts)
            except OSError as exc:
                log(f'graph level not stored ({cache.path}: {exc})')
        self.ctx.spawn(write, 'graph-level')

    def _reset(self) -> None:
        self._window = []
        self._since = math.nan
