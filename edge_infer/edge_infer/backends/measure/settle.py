# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A measured choice within seconds of a cold start: the likely winners first (no ROS).

A first start measured every candidate of a model (28 here: every library,
thread count, precision and int8 file) before the measured choice took
over, and the four models of the default graph waited for each other's
profiles: on a 2-core board the last settled 149-205 s after the start
(bench/product/footprint.py). Most of that time goes to candidates that cannot win
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
side by side by bench/product/footprint.py's cold run (the settled choice is
within a few per cent of the full profile's, or the same).
"""

import math
import threading
from typing import Dict, List, Optional, Sequence, Tuple

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
    bf16 that wins for the other models). Figures taken under foreign load
    (kept apart from the board's profile) count where no quiet ones exist: a
    ratio between candidates timed side by side survives a busy board, and a
    robot is never quiet. A candidate never timed elsewhere is absent.
    """
    per_model: Dict[str, Dict[str, float]] = {}
    quiet = set()
    for parts, value in _elsewhere(cache, board, model):
        if value.get('status') not in ('ok', 'rejected'):
            continue
        ms = CandidateResult.from_dict(value).frame_ms
        key = (parts['model'], parts.get('backend', ''))
        if not (math.isfinite(ms) and ms > 0) or (parts.get('loaded') and key in quiet):
            continue
        if not parts.get('loaded'):
            quiet.add(key)
        per_model.setdefault(key[0], {})[key[1]] = ms
    ratios: Dict[str, List[float]] = {}
    for times in per_model.values():
        best = min(times.values())
        for name, ms in times.items():
            ratios.setdefault(name, []).append(ms / best)
    return {n: math.exp(sum(math.log(r) for r in rs) / len(rs)) for n, rs in ratios.items()}


def _elsewhere(cache, board: dict, model: str):
    """Yield (parts, value) of this board's other models' profiles, quiet ones first."""
    entries = [(parts, value) for parts, value in cache.entries()
               if parts.get('kind') == 'profile' and parts.get('board') == board and
               parts.get('model') != model]
    return sorted(entries, key=lambda e: bool(e[0].get('loaded')))


def settle_set(manager, spec: ModelSpec, candidates: Sequence, factor: float = SETTLE_FACTOR,
               limit: int = SETTLE_MAX) -> List[str]:
    """Return which of ``candidates`` (the model's) to measure before the choice settles.

    Variants (int8, fp16 files) wait for the completion; so do candidates
    over the thread budget or unavailable (they would not be measured
    anyway), and those on a Vulkan device that is the CPU in disguise
    (lavapipe: 5-6 s each for NanoDet here, 15-50x the CPU libraries'
    time). Without a prior every other candidate settles; with one, the
    likely winners, best first, and every candidate the prior does not know
    (a library new on this board), but not one that could not run another
    model at all (``lasting``: ncnn lacking MoveNet's GatherND; its Vulkan
    candidates take seconds a frame on lavapipe): it waits for the
    completion. Where the likely
    winners all run at a reduced precision, the likeliest full-precision
    (fp32) candidate settles too: a model's own accuracy check may reject
    them all (MoveNet's bf16, 0.60 < 0.9 here), and the settle would then
    wait for every other candidate (a cold start's pose node: 24.6 s, not
    about 7).
    """
    names = [b.name for b in candidates
             if getattr(b, 'base', None) is None and not manager.over_budget(b)
             and not software_gpu(b) and b.available()[0]]
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


def dominated(manager, spec: ModelSpec, factor: float) -> Dict[str, str]:
    """Return candidate -> why it need not be measured on ``spec``: slow on this board.

    A candidate whose time on the board's other models is at least ``factor``
    times their best (:func:`board_prior`) cannot win here either: a
    completion screens it instead of measuring it (lavapipe's Vulkan
    candidates, 15-50x, took 5-6 s each on NanoDet).
    """
    prior = board_prior(manager.cache, manager.board, spec.name)
    return {n: (f'not measured: {r:.1f}x the best on the other models of this board '
                f'(a completion measures only what could win; edge_infer profile '
                f'{spec.name} --no-cache measures it)') for n, r in prior.items() if r >= factor}


def software_gpu(backend) -> bool:
    """Return True for a candidate on a software Vulkan device (lavapipe, SwiftShader)."""
    from ..libs.ncnn import SOFTWARE_GPUS
    device = str(getattr(backend, 'device', ''))
    name = f"{getattr(backend, 'gpu_name', '')} {device}".lower()
    return device.startswith('vulkan') and any(s in name for s in SOFTWARE_GPUS)


class SettleQueue:
    """The process's models still settling: a completion waits until there is none.

    :meth:`enter` when a model starts provisional (at configure, before its
    profile thread runs), :meth:`leave` when it settled, failed or stopped;
    :meth:`wait_settled` returns False when ``cancel`` was set first.
    :meth:`wait_turn`: the lightest model settles first. The first model to
    settle has no prior and measures every library; a light one does that in a
    few seconds, and the heavier ones then measure only the likely winners
    (NanoDet first: 25.8 s before its choice on this 2-core EPYC; the selfie
    segmenter's whole profile took 7.7 s).
    """

    def __init__(self):
        self._cv = threading.Condition()
        self._settling: Dict[int, Tuple[str, float]] = {}

    def enter(self, token: object, model: str, weight: float = 0.0) -> None:
        """Count ``token`` (one model's start) as settling; ``weight``: its model's size."""
        with self._cv:
            self._settling[id(token)] = (model, float(weight))

    def leave(self, token: object) -> None:
        """Stop counting ``token`` (idempotent)."""
        with self._cv:
            self._settling.pop(id(token), None)
            self._cv.notify_all()

    def settling(self) -> List[str]:
        """Return the models still settling."""
        with self._cv:
            return [model for model, _ in self._settling.values()]

    def wait_turn(self, token: object, cancel: Optional[threading.Event] = None,
                  poll_s: float = 0.1) -> bool:
        """Wait until no lighter model is settling; False if ``cancel`` was set first."""
        with self._cv:
            while True:
                if cancel is not None and cancel.is_set():
                    return False
                mine = self._settling.get(id(token))
                if mine is None or not any(
                        (w, k) < (mine[1], id(token))
                        for k, (_, w) in self._settling.items() if k != id(token)):
                    return True
                self._cv.wait(poll_s)

    def wait_settled(self, cancel: Optional[threading.Event] = None,
                     poll_s: float = 0.1) -> bool:
        """Wait until no model settles; False if ``cancel`` was set first."""
        with self._cv:
            while self._settling:
                if cancel is not None and cancel.is_set():
                    return False
                self._cv.wait(poll_s)
        return not (cancel is not None and cancel.is_set())
