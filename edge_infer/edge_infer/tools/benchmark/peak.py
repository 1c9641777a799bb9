# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The peak sustainable rate of a graph: what a probe at one rate says, and the search.

ROS-free. A *probe* plays frames at one target rate for a while and counts,
per node, the frames sent and the results that came back for them
(:class:`NodeCount`). :func:`judge` says whether the graph sustained that
rate: every node processed at least ``min_share`` of the frames sent (95 %,
as ros2_benchmark's missed-frame limit) and its output rate is within
``tolerance_hz`` of the playback rate. A feeder that could not send at the
rate asked fails the probe too (the machine, not the graph, was the limit),
with that reason.

:func:`find_peak` searches the way NVIDIA's ros2_benchmark does: a binary
search between ``lo`` and ``hi`` down to one ``step``, then a linear scan
upward in ``step`` from the highest rate that passed, until a probe fails:
a probe that failed by chance during the bisection cannot hide a higher
rate that passes. The result is the highest passing rate probed.
"""

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

MIN_SHARE = 0.95        # every node keeps >= 95 % of the frames sent (issue 51)


@dataclass
class NodeCount:
    """One node's frames during a probe."""

    sent: int               # frames sent to it within the probe's window
    results: int            # results received for those frames
    duration_s: float       # the window's length

    @property
    def share(self) -> float:
        """Return the share of the frames sent that came back as results."""
        return self.results / self.sent if self.sent else 0.0

    @property
    def output_hz(self) -> float:
        """Return the node's output rate over the window."""
        return self.results / self.duration_s if self.duration_s > 0 else 0.0


@dataclass
class Verdict:
    """A probe's outcome: passed, and why not."""

    rate_hz: float
    passed: bool
    why: str = ''
    shares: Dict[str, float] = field(default_factory=dict)
    sent_hz: float = 0.0    # the rate the feeder reached


def judge(rate_hz: float, counts: Dict[str, NodeCount], sent_hz: Optional[float] = None,
          min_share: float = MIN_SHARE, tolerance_hz: Optional[float] = None) -> Verdict:
    """Return whether every node sustained ``rate_hz`` (see the module doc).

    ``sent_hz``: the rate the feeder reached (None: as asked). ``tolerance_hz``:
    how far a node's output rate may be under the playback rate (default
    5 % of it, at least 0.5 Hz).
    """
    tol = max(0.5, 0.05 * rate_hz) if tolerance_hz is None else tolerance_hz
    sent = rate_hz if sent_hz is None else sent_hz
    shares = {n: c.share for n, c in counts.items()}
    if not counts:
        return Verdict(rate_hz, False, 'no node counted', shares, sent)
    if sent < rate_hz - tol:
        return Verdict(rate_hz, False, f'the feeder sent {sent:.1f} Hz of {rate_hz:g}: '
                       f'this machine could not play faster', shares, sent)
    short = [f'{n} {100 * s:.0f} %' for n, s in shares.items() if s < min_share]
    if short:
        return Verdict(rate_hz, False, f'processed under {100 * min_share:.0f} %: '
                       + ', '.join(short), shares, sent)
    slow = [f'{n} {c.output_hz:.1f} Hz' for n, c in counts.items()
            if c.output_hz < sent - tol]
    if slow:
        return Verdict(rate_hz, False, f'output slower than {sent:.1f} - {tol:.1f} Hz: '
                       + ', '.join(slow), shares, sent)
    return Verdict(rate_hz, True, '', shares, sent)


@dataclass
class Search:
    """A peak search's probes, in order, and the peak found (None: not even ``lo``)."""

    peak_hz: Optional[float]
    probes: List[Verdict]


def find_peak(probe: Callable[[float], Verdict], lo: float = 5.0, hi: float = 60.0,
              step: float = 2.0) -> Search:
    """Return the highest rate in [lo, hi] that ``probe`` passes (see the module doc).

    The answer is within one ``step`` of the true capacity of a graph whose
    probes are deterministic: the bisection leaves a failing rate at most one
    step above a passing one, and the scan goes on upward from there.
    """
    if not 0 < lo < hi or step <= 0:
        raise ValueError(f'peak search needs 0 < lo < hi and step > 0 '
                         f'(lo {lo}, hi {hi}, step {step})')
    probes: List[Verdict] = []

    def run(rate: float) -> bool:
        v = probe(round(rate, 3))
        probes.append(v)
        return v.passed

    if not run(lo):
        return Search(None, probes)
    good, bad = lo, hi
    if run(hi):
        return Search(hi, probes)
    while bad - good > step:
        mid = (good + bad) / 2
        if run(mid):
            good = mid
        else:
            bad = mid
    rate = good + step
    while rate < hi and run(rate):
        good = rate
        rate += step
    return Search(good, probes)
