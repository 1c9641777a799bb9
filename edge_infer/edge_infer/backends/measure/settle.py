# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A measured choice within seconds of a cold start: the likely winners first (no ROS).

A first start measured every candidate of a model (28 here: every library,
thread count, precision and int8 file) before the measured choice took
over, and the four models of the default graph waited for each other's
profiles: on a 2-core board the last settled 149-205 s after the start
(bench/footprint.py). Most of that time goes to candidates that cannot win
(the int8 files are made by a quantizer first: 8-15 s each), and on one
board the same library wins for most models. So a background profile runs
in two phases, one process-wide queue:

1. **settle**: the candidates in :func:`settle_set` only (no variant that
   must be made first; once another model of this board has been measured,
   only the ones :func:`board_prior` puts within ``settle_factor`` of the
   best there, at most ``settle_max``); the measured choice among them takes
   over (trigger ``profiled``);
2. **complete**: every other candidate, int8 and fp16 files included, once
   no model of the process is still settling (:class:`SettleQueue`); a
   candidate that beats the settled choice then takes over (trigger
   ``profiled`` again), else the choice stays and the full profile is cached.

What the blocking profile would pick and what this settles on are compared
side by side by bench/footprint.py's cold run (the settled choice is
within a few per cent of the full profile's, or the same).
"""

import math
import threading
from typing import Dict, List, Optional, Sequence

from .profiling import CandidateResult
from ...core.registry import ModelSpec

SETTLE_FACTOR = 1.5     # this much slower than the best elsewhere: not a likely winner
SETTLE_MAX = 4          # at most this many candidates settle a model that has a prior


def board_prior(cache, board: dict, model: str) -> Dict[str, float]:
    """Return candidate -> how far it was from the best on this board's other models.

    For each other model with timed candidates in the cache: the candidate's
    frame time / that model's fastest; the geometric mean over those models.
    A candidate rejected there by that model's accuracy check counts too: its
    speed is the board's, its accuracy that model's own (MoveNet rejects the
    bf16 that wins for the other models). A candidate never timed elsewhere
    is absent.
    """
    per_model: Dict[str, Dict[str, float]] = {}
    for parts, value in _elsewhere(cache, board, model):
        if value.get('status') not in ('ok', 'rejected'):
            continue
        ms = CandidateResult.from_dict(value).frame_ms
        if math.isfinite(ms) and ms > 0:
            per_model.setdefault(parts['model'], {})[parts.get('backend', '')] = ms
    ratios: Dict[str, List[float]] = {}
    for times in per_model.values():
        best = min(times.values())
        for name, ms in times.items():
            ratios.setdefault(name, []).append(ms / best)
    return {n: math.exp(sum(math.log(r) for r in rs) / len(rs)) for n, rs in ratios.items()}


def _elsewhere(cache, board: dict, model: str):
    """Yield (parts, value) of the quiet profiles of this board's other models."""
    for parts, value in cache.entries():
        if parts.get('kind') == 'profile' and parts.get('board') == board and \
                parts.get('model') != model and not parts.get('loaded'):
            yield parts, value


def settle_set(manager, spec: ModelSpec, candidates: Sequence, factor: float = SETTLE_FACTOR,
               limit: int = SETTLE_MAX) -> List[str]:
    """Return which of ``candidates`` (the model's) to measure before the choice settles.

    Variants (made from the model first: int8, fp16 files) wait for the
    completion; so do candidates over the thread budget or unavailable (they
    would not be measured anyway). Without a prior every other candidate
    settles; with one, the likely winners, best first, and every candidate
    the prior does not know (a library new on this board), but not one that
    could not run another model at all (``lasting``: ncnn lacking MoveNet's
    GatherND; its Vulkan candidates take seconds a frame on lavapipe): it
    waits for the completion. Where the likely
    winners all run at a reduced precision, the likeliest full-precision
    (fp32) candidate settles too: a model's own accuracy check may reject
    them all (MoveNet's bf16, 0.60 < 0.9 here), and the settle would then
    wait for every other candidate (a cold start's pose node: 24.6 s, not
    about 7).
    """
    names = [b.name for b in candidates
             if getattr(b, 'base', None) is None and not manager.over_budget(b)
             and b.available()[0]]
    prior = board_prior(manager.cache, manager.board, spec.name)
    if not any(n in prior for n in names):
        return names
    failed = {parts.get('backend') for parts, value in
              _elsewhere(manager.cache, manager.board, spec.name) if value.get('lasting')}
    unknown = [n for n in names if n not in prior and n not in failed]
    likely = sorted((n for n in names if n in prior and prior[n] <= factor),
                    key=lambda n: prior[n])[:max(1, limit)]
    precision = {b.name: getattr(b, 'precision', 'fp32') for b in candidates}
    if all(precision[n] != 'fp32' for n in likely):
        full = sorted((n for n in names if n in prior and precision[n] == 'fp32'),
                      key=lambda n: prior[n])
        likely += full[:1]
    return likely + unknown


class SettleQueue:
    """The process's models still settling: a completion waits until there is none.

    :meth:`enter` when a model starts provisional (at configure, before its
    profile thread runs), :meth:`leave` when it settled, failed or stopped;
    :meth:`wait_settled` returns False when ``cancel`` was set first.
    """

    def __init__(self):
        self._cv = threading.Condition()
        self._settling: Dict[int, str] = {}

    def enter(self, token: object, model: str) -> None:
        """Count ``token`` (one model's start) as settling."""
        with self._cv:
            self._settling[id(token)] = model

    def leave(self, token: object) -> None:
        """Stop counting ``token`` (idempotent)."""
        with self._cv:
            self._settling.pop(id(token), None)
            self._cv.notify_all()

    def settling(self) -> List[str]:
        """Return the models still settling."""
        with self._cv:
            return list(self._settling.values())

    def wait_settled(self, cancel: Optional[threading.Event] = None,
                     poll_s: float = 0.1) -> bool:
        """Wait until no model settles; False if ``cancel`` was set first."""
        with self._cv:
            while self._settling:
                if cancel is not None and cancel.is_set():
                    return False
                self._cv.wait(poll_s)
        return not (cancel is not None and cancel.is_set())
