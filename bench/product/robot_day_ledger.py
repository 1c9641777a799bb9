# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Helper of robot_day.py: the frame ledger, from what the monitor recorded (no ROS).

What robot_day.py records, per perception node:

- ``sends``: (wall time, stamp ns, matched, malformed) of every frame it
  published to the node's own camera topic; ``matched``: the publisher had
  the node's subscription matched at that moment (a frame sent with none is
  *not delivered*: the node was inactive or its process down);
- ``results``: stamp ns -> wall time the node's result for it arrived;
- ``snaps``: (header stamp, counters) of the node's /diagnostics, whose
  counters (received, processed, dropped, rejected, lost) run for one
  process's life;
- ``suspended``: (t0, t1, fault) where an induced fault stops or restarts
  the node (kill -9, a restart, deactivate, cleanup): frames sent to it then
  go with the fault, counted on their own.

The ledger splits the time into *windows* between suspensions and checks,
over each, the node's identities at the window's first and last snapshot:

- transport: frames the node received or counted lost == frames sent to it
  matched in between (the last ``SLOP_S`` before either snapshot may fall on
  either side);
- in the node: received == processed + dropped + rejected, up to the frames
  in its slot and being run (``PENDING``) at either end;
- results: processed == results that arrived in between (``SLOP_S`` again).

An excess beyond those bounds is *unaccounted*. After the run the camera
stops and the last snapshot is taken once the graph is idle, so the last
window ends exactly.
"""

import bisect
import statistics
from typing import Dict, List, Sequence, Tuple

SLOP_S = 0.25       # a frame sent this close before a snapshot may or may not be in it
PENDING = 2         # frames a node may hold between receiving and counting (slot, run)
KEYS = ('received', 'processed', 'dropped', 'rejected', 'lost')


def _count(times: Sequence[float], t0: float, t1: float) -> int:
    """Return how many of the sorted ``times`` lie in (t0, t1]."""
    return bisect.bisect_right(times, t1) - bisect.bisect_right(times, t0)


def windows(snaps: List[Tuple[float, dict]], suspended: List[Tuple[float, float, str]]
            ) -> List[Tuple[Tuple[float, dict], Tuple[float, dict]]]:
    """Return (first, last) snapshot of each window: one life, no suspension inside."""
    def inside(t: float) -> bool:
        return any(t0 <= t <= t1 for t0, t1, _ in suspended)

    def across(t_a: float, t_b: float) -> bool:
        return any(t_a < t1 and t0 < t_b for t0, t1, _ in suspended)
    out: list = []
    first = prev = None
    for snap in snaps:
        t, c = snap
        cut = inside(t) or (prev is not None and (c['received'] < prev[1]['received'] or
                                                  across(prev[0], t)))
        if cut:
            if first is not None and prev is not first:
                out.append((first, prev))
            first = prev = None
            if inside(t):
                continue
        if first is None:
            first = snap
        prev = snap
    if first is not None and prev is not first:
        out.append((first, prev))
    return out


def restarts_unasked(snaps: List[Tuple[float, dict]],
                     suspended: List[Tuple[float, float, str]]) -> int:
    """Return how often the counters restarted outside every induced stop (a crash)."""
    n = 0
    for (t_a, a), (t_b, b) in zip(snaps, snaps[1:]):
        if b['received'] < a['received'] and \
                not any(t0 <= t_b and t_a <= t1 for t0, t1, _ in suspended):
            n += 1
    return n


def account(sends: List[Tuple[float, int, bool, bool]], results: Dict[int, float],
            snaps: List[Tuple[float, dict]], suspended: List[Tuple[float, float, str]]
            ) -> dict:
    """Return one node's ledger: totals, per-identity excess, frames with induced faults."""
    sent_t = [t for t, _, m, _ in sends if m]
    bad_t = [t for t, _, m, bad in sends if m and bad]
    res_t = sorted(results.values())
    led = {'sent': len(sends), 'not_delivered': sum(1 for s in sends if not s[2]),
           'malformed_sent': len(bad_t), 'results': len(results),
           'windows': 0, 'in_windows': 0, 'window_s': 0.0,
           'unaccounted_transport': 0, 'unaccounted_node': 0, 'unaccounted_results': 0,
           'restarts_unasked': restarts_unasked(snaps, suspended)}
    for k in KEYS:
        led[k] = 0
    for (t_a, a), (t_b, b) in windows(snaps, suspended):
        d = {k: b[k] - a[k] for k in KEYS}
        for k in KEYS:
            led[k] += d[k]
        sent = _count(sent_t, t_a, t_b)
        early = _count(sent_t, t_a - SLOP_S, t_a)     # sent before a, maybe received after
        late = _count(sent_t, t_b - SLOP_S, t_b)      # sent before b, maybe received after
        got = d['received'] + d['lost']
        led['unaccounted_transport'] += max(0, (sent - late) - got) + \
            max(0, got - (sent + early))
        held = d['received'] - d['processed'] - d['dropped'] - d['rejected']
        led['unaccounted_node'] += max(0, abs(held) - PENDING)
        arrived = _count(res_t, t_a, t_b)
        r_early, r_late = _count(res_t, t_a, t_a + SLOP_S), _count(res_t, t_b, t_b + SLOP_S)
        led['unaccounted_results'] += max(0, (d['processed'] - arrived) - r_late) + \
            max(0, (arrived - d['processed']) - r_early)
        led['windows'] += 1
        led['in_windows'] += sent
        led['window_s'] += t_b - t_a
    led['unaccounted'] = (led['unaccounted_transport'] + led['unaccounted_node'] +
                          led['unaccounted_results'])
    # frames sent matched outside every window: with the induced faults (or the start)
    led['outside_windows'] = len(sent_t) - led['in_windows']
    return led


def recovery(results: Dict[int, float], sent_at: Dict[int, float], t_ref: float,
             until: float) -> float:
    """Return seconds from ``t_ref`` to the first result of a frame sent at or after it.

    NaN when none arrived before ``until``.
    """
    best = float('nan')
    for stamp, t_res in results.items():
        t_sent = sent_at.get(stamp)
        if t_sent is not None and t_sent >= t_ref and t_res <= until:
            if not best <= t_res - t_ref:
                best = t_res - t_ref
    return best


def longest_gap(results: Dict[int, float], t0: float, t1: float) -> float:
    """Return the longest time without a result within [t0, t1] (edges included)."""
    times = sorted(t for t in results.values() if t0 <= t <= t1)
    edges = [t0] + times + [t1]
    return max(b - a for a, b in zip(edges, edges[1:]))


def trend(points: Sequence[Tuple[float, float]], block_s: float = 600.0) -> dict:
    """Return how a sampled quantity (RSS) moves, per hour, three ways.

    ``points``: (seconds, value). ``ols``: the least-squares slope and
    ``ols_se`` its standard error (samples taken as independent, so it is
    the smaller end); ``theil_sen``: the median of the pairwise slopes, which
    swings of a few samples do not move; ``blocks``: the median value of each
    whole ``block_s`` from the first sample (a part block at the end is left
    out). Slopes are NaN with fewer than 3 points.
    """
    nan = float('nan')
    out = {'ols': nan, 'ols_se': nan, 'theil_sen': nan, 'blocks': []}
    if len(points) < 3:
        return out
    ts = [t for t, _ in points]
    vs = [v for _, v in points]
    t_mean, v_mean = statistics.fmean(ts), statistics.fmean(vs)
    sxx = sum((t - t_mean) ** 2 for t in ts)
    b = sum((t - t_mean) * (v - v_mean) for t, v in points) / sxx
    resid = [v - v_mean - b * (t - t_mean) for t, v in points]
    se = (sum(r * r for r in resid) / (len(points) - 2) / sxx) ** 0.5
    step = max(1, len(points) // 400)      # pairs: at most ~80,000
    thin = points[::step]
    pairs = [(v2 - v1) / (t2 - t1) for i, (t1, v1) in enumerate(thin)
             for t2, v2 in thin[i + 1:] if t2 > t1]
    t0 = ts[0]
    blocks = []
    for k in range(int((ts[-1] - t0) // block_s)):
        inside = [v for t, v in points if t0 + k * block_s <= t < t0 + (k + 1) * block_s]
        if inside:
            blocks.append(statistics.median(inside))
    out.update(ols=b * 3600, ols_se=se * 3600, theil_sen=statistics.median(pairs) * 3600,
               blocks=blocks)
    return out
