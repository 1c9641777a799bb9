# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Pick a backend from measured results by objective, under constraints, and say why.

Objectives (lower is better):
- ``latency``: median latency (p50);
- ``energy``: median energy per inference;
- ``edp``: energy x delay (median energy x p50).
Constraints: ``max_latency_ms`` (p50 must not exceed it; 0 = none) and
``min_accuracy`` (agreement with the CPU fp32 reference; candidates below
it are already 'rejected' by profiling). When no candidate meets the
latency constraint the fastest one is chosen and the reason says so: the
robot keeps running. When energy is unknown (no meter) an energy objective
falls back to latency, and the reason says that too.
"""

import math
from typing import Iterable, List, Optional, Tuple

from .profiling import CandidateResult

OBJECTIVES = ('latency', 'energy', 'edp')


def _key(r: CandidateResult, objective: str) -> float:
    if objective == 'energy':
        return r.energy_j
    if objective == 'edp':
        return r.edp
    return r.p50_ms


def _fmt(r: CandidateResult, objective: str) -> str:
    if objective == 'energy':
        return f'{r.energy_j:.4f} J ({r.p50_ms:.2f} ms)'
    if objective == 'edp':
        return f'{r.edp * 1e3:.4f} mJ*s ({r.energy_j:.4f} J, {r.p50_ms:.2f} ms)'
    return f'{r.p50_ms:.2f} ms p50 (p90 {r.p90_ms:.2f})'


def select(results: Iterable[CandidateResult], objective: str = 'latency',
           max_latency_ms: float = 0.0, min_accuracy: float = 0.0
           ) -> Tuple[Optional[CandidateResult], str]:
    """Return (chosen result or None, why)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective '{objective}': use one of {', '.join(OBJECTIVES)}")
    ok: List[CandidateResult] = [r for r in results if r.status == 'ok'
                                 and math.isfinite(r.p50_ms)]
    if not ok:
        return None, 'no candidate ran the model correctly'
    notes = []
    if objective != 'latency' and not all(math.isfinite(_key(r, objective)) for r in ok):
        notes.append(f'energy unknown for some candidates: objective {objective} -> latency')
        objective = 'latency'
    accurate = [r for r in ok if r.accuracy >= min_accuracy]
    if not accurate:
        best = max(ok, key=lambda r: r.accuracy)
        return None, (f'no candidate reaches accuracy {min_accuracy} '
                      f'(best {best.backend}: {best.accuracy:.3f})')
    pool = accurate
    if max_latency_ms > 0:
        fast = [r for r in accurate if r.p50_ms <= max_latency_ms]
        if not fast:
            best = min(accurate, key=lambda r: r.p50_ms)
            return best, (f'{best.backend}: NO candidate meets max_latency_ms={max_latency_ms:g} '
                          f'(fastest {best.p50_ms:.2f} ms); chose the fastest'
                          + ''.join(f'; {n}' for n in notes))
        pool = fast
    ranked = sorted(pool, key=lambda r: (_key(r, objective), r.p50_ms))
    best = ranked[0]
    why = f'{best.backend}: best {objective}, {_fmt(best, objective)}'
    if len(ranked) > 1:
        nxt = ranked[1]
        ratio = _key(nxt, objective) / _key(best, objective) if _key(best, objective) else \
            float('inf')
        why += f'; next {nxt.backend} {_fmt(nxt, objective)}, {ratio:.2f}x'
    excluded = len(accurate) - len(pool)
    if excluded:
        why += f'; {excluded} excluded by max_latency_ms={max_latency_ms:g}'
    return best, why + ''.join(f'; {n}' for n in notes)
