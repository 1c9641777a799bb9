# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Pick a backend from measured results by objective, under constraints, and say why.

Objectives (lower is better):
- ``latency``: a frame's latency at ``latency_percentile`` (50 = median, 90,
  99): the run plus the CPU preprocessing its input kind needs, with
  a tail guard: a candidate whose p99 exceeds ``tail_guard`` x its own p50
  (and its p50 by more than 30 ms) stalls now and then (measured: ncnn's
  OpenMP runtime at 2 threads on shared cores, up to 1.5 s on a 10 ms
  model) and ranks after every steady one;
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


PERCENTILES = (50, 90, 99)


def latency_at(r: CandidateResult, percentile: int = 50) -> float:
    """Return a frame's latency at 50, 90 or 99 %: run (p50 where the tail is unknown) + pre."""
    value = {50: r.p50_ms, 90: r.p90_ms, 99: r.p99_ms}[percentile]
    return (value if math.isfinite(value) else r.p50_ms) + r.pre_ms


# A stall is also long in absolute terms: on a busy board a 5 ms model's p99
# reaches 4x its p50 from scheduling alone (one 20 ms time slice); the stalls
# the guard is for (ncnn's OpenMP at 2 threads) lasted 240-1500 ms.
STALL_MIN_MS = 30.0


def stalls(r: CandidateResult, tail_guard: float, min_excess_ms: float = STALL_MIN_MS) -> bool:
    """Return True when the candidate's p99 is over ``tail_guard`` x its p50 and 30 ms above it."""
    return (tail_guard > 0 and math.isfinite(r.p99_ms) and r.runs >= 10
            and r.p99_ms > tail_guard * r.p50_ms and r.p99_ms - r.p50_ms > min_excess_ms)


def _key(r: CandidateResult, objective: str, percentile: int = 50) -> float:
    if objective == 'energy':
        return r.energy_j
    if objective == 'edp':
        return r.edp
    return latency_at(r, percentile)


def _fmt(r: CandidateResult, objective: str, percentile: int = 50) -> str:
    if objective == 'energy':
        return f'{r.energy_j:.4f} J ({r.p50_ms:.2f} ms)'
    if objective == 'edp':
        return f'{r.edp * 1e3:.4f} mJ*s ({r.energy_j:.4f} J, {r.p50_ms:.2f} ms)'
    tail = f'p99 {r.p99_ms:.2f}' if math.isfinite(r.p99_ms) else f'p90 {r.p90_ms:.2f}'
    split = f'run {r.p50_ms:.2f} + preprocess {r.pre_ms:.2f}; ' if r.pre_ms else ''
    if percentile == 50:
        return f'{latency_at(r):.2f} ms p50 ({split}run {tail})' if split else \
            f'{r.p50_ms:.2f} ms p50 ({tail})'
    return f'{latency_at(r, percentile):.2f} ms p{percentile} ({split}run p50 {r.p50_ms:.2f})'


def select(results: Iterable[CandidateResult], objective: str = 'latency',
           max_latency_ms: float = 0.0, min_accuracy: float = 0.0,
           latency_percentile: int = 50, tail_guard: float = 0.0
           ) -> Tuple[Optional[CandidateResult], str]:
    """Return (chosen result or None, why); the reason names the figure that decided."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective '{objective}': use one of {', '.join(OBJECTIVES)}")
    if latency_percentile not in PERCENTILES:
        raise ValueError(f'latency_percentile {latency_percentile}: use one of '
                         f'{", ".join(map(str, PERCENTILES))}')
    pct = latency_percentile
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
        fast = [r for r in accurate if r.frame_ms <= max_latency_ms]
        if not fast:
            best = min(accurate, key=lambda r: r.frame_ms)
            return best, (f'{best.backend}: NO candidate meets max_latency_ms={max_latency_ms:g} '
                          f'(fastest {best.frame_ms:.2f} ms); chose the fastest'
                          + ''.join(f'; {n}' for n in notes))
        pool = fast
    stalling = {r.backend for r in pool if objective == 'latency' and stalls(r, tail_guard)}
    if len(stalling) == len(pool):
        stalling = set()        # nothing steady to prefer: rank them all by the figure
    ranked = sorted(pool, key=lambda r: (r.backend in stalling, _key(r, objective, pct),
                                         r.frame_ms))
    best = ranked[0]
    figure = f'p{pct} latency' if objective == 'latency' else objective
    why = f'{best.backend}: best {figure}, {_fmt(best, objective, pct)}'
    if len(ranked) > 1:
        nxt = ranked[1]
        kb, kn = _key(best, objective, pct), _key(nxt, objective, pct)
        ratio = kn / kb if kb else float('inf')
        why += f'; next {nxt.backend} {_fmt(nxt, objective, pct)}, {ratio:.2f}x'
    if stalling:
        why += '; ranked after steady ones by the tail guard (p99 > {:g}x p50): '.format(
            tail_guard) + ', '.join(
            f'{r.backend} p99 {r.p99_ms:.1f} ms = {r.p99_ms / r.p50_ms:.1f}x p50'
            for r in pool if r.backend in stalling)
    excluded = len(accurate) - len(pool)
    if excluded:
        why += f'; {excluded} excluded by max_latency_ms={max_latency_ms:g}'
    return best, why + ''.join(f'; {n}' for n in notes)
