# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A probe: frames played at one rate into a running graph, and what came back.

The feeder (:mod:`.feeder`) sends frames at the rate for ``warmup_s +
seconds``; the frames of the first ``warmup_s`` are not counted; the
results still on their way are waited for; then per node the frames sent
and returned (:class:`~.peak.NodeCount`), the latency of each from the
frame's stamp to its result's arrival at the monitor, the stage means from
the node's own totals (``stage_total_ms`` on /diagnostics), and each
process's CPU and RSS over the probe.
"""

from dataclasses import dataclass, field
import json
import pathlib
import threading
import time
from typing import Dict, List

import numpy as np

from .monitor import Monitor, stage_totals
from .peak import judge, NodeCount, Verdict
from ... import procs


class BenchmarkError(RuntimeError):
    """The graph could not be brought up or measured; the message says why."""


@dataclass
class NodeProbe:
    """One node's figures in one probe."""

    count: NodeCount
    latency_ms: List[float]                 # stamp -> arrival, each result in the window
    result_stages: Dict[str, float]         # means of the results' own stage times
    node_stages: Dict[str, float]           # means from the node's stage totals


@dataclass
class ProbeResult:
    """A probe: the verdict, each node's figures, each process's CPU (cores)."""

    verdict: Verdict
    nodes: Dict[str, NodeProbe]
    cpu: Dict[str, float]                   # process -> cores used over the probe
    machine_cpu: float                      # every process of the machine, cores
    rss_mb: Dict[str, float]
    extra: Dict[str, float] = field(default_factory=dict)


def _tree(pid: int) -> list:
    """Return the process ``pid`` and its descendants (psutil), or [] once it is gone."""
    import psutil
    try:
        p = psutil.Process(pid)
        return [p, *p.children(recursive=True)]
    except psutil.Error:
        return []


def cpu_seconds(pid: int, tree: bool = True) -> float:
    """Return the CPU seconds used so far by ``pid`` and (``tree``) its living descendants."""
    import psutil
    total = 0.0
    for p in _tree(pid) if tree else _tree(pid)[:1]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            continue
    return total


def machine_busy_s() -> float:
    """Return the machine's busy CPU seconds so far (all cores, /proc/stat via psutil)."""
    import psutil
    t = psutil.cpu_times()
    return t.user + t.nice + t.system + t.irq + t.softirq + getattr(t, 'steal', 0.0)


class Feeder:
    """The feeder process (:mod:`.feeder`), asked to play at a rate."""

    def __init__(self, bag: pathlib.Path, env: Dict[str, str], frames: int,
                 remap: Dict[str, str], log_path: pathlib.Path):
        args = [str(bag), '--frames', str(frames)]
        if remap:
            args += ['--remap', *[f'{a}:={b}' for a, b in remap.items()]]
        self.proc = procs.spawn('edge_infer.tools.benchmark.feeder', args, env, log_path,
                                pipes=True)
        ready = self._answer(120.0)
        if not ready.get('ready'):
            raise BenchmarkError(f"feeder: {ready.get('error', ready)}")
        self.frames = int(ready['frames'])

    def _answer(self, timeout: float) -> dict:
        stdout = self.proc.stdout
        assert stdout is not None
        box: list = []
        th = threading.Thread(target=lambda: box.append(stdout.readline()), daemon=True)
        th.start()
        th.join(timeout)
        if not box or not box[0]:
            raise BenchmarkError(f'feeder did not answer within {timeout:g} s '
                                 f'(exit code {self.proc.poll()})')
        return json.loads(box[0])

    def ask(self, request: dict, timeout: float) -> dict:
        """Send one request; return its answer."""
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(request) + '\n').encode())
        self.proc.stdin.flush()
        return self._answer(timeout)

    def play(self, rate: float, seconds: float) -> dict:
        """Play at ``rate`` Hz for ``seconds``; return the stamps sent and the rate reached."""
        return self.ask({'rate': rate, 'seconds': seconds}, seconds + 30.0)

    def close(self) -> None:
        """End the feeder."""
        try:
            self.ask({'quit': True}, 0.01)
        except (BenchmarkError, OSError, ValueError):
            pass
        procs.stop(self.proc, timeout=5.0)


def probe(feeder: 'Feeder', mon: Monitor, pids: Dict[str, int], rate: float, seconds: float,
          warmup_s: float = 1.0, drain_s: float = 2.0) -> ProbeResult:
    """Play at ``rate`` Hz and measure (see the module doc).

    ``pids``: the processes whose CPU and RSS are counted, by name; the one
    named ``benchmark`` without its children (they are the others).
    """
    import psutil
    mon.take()
    d0 = {w.name: mon.diagnostics_of(w.name) for w in mon.watched}
    t0 = time.monotonic()
    c0 = {k: cpu_seconds(p, k != 'benchmark') for k, p in pids.items()}
    m0 = machine_busy_s()
    sent = feeder.play(rate, warmup_s + seconds)
    t_sent = time.monotonic()
    last = sent['sent'][-1] if sent['sent'] else 0
    # results still on their way: wait until the last frame is answered or nothing came
    while time.monotonic() - t_sent < drain_s:
        got = mon.last_arrival()
        if got and time.time_ns() - got > 0.5e9 and time.monotonic() - t_sent > 0.5:
            break
        if mon.answered(last):
            break
        time.sleep(0.05)
    dt = time.monotonic() - t0
    cpu = {k: (cpu_seconds(p, k != 'benchmark') - c0[k]) / dt for k, p in pids.items()}
    machine = (machine_busy_s() - m0) / dt
    arrivals = mon.take()
    mon.wait_diagnostics(time.monotonic())
    stamps = sent['sent']
    cut = stamps[0] + int(warmup_s * 1e9) if stamps else 0
    window = [s for s in stamps if s >= cut]
    span_s = (window[-1] - window[0]) / 1e9 + 1.0 / rate if window else 0.0
    nodes: Dict[str, NodeProbe] = {}
    counts: Dict[str, NodeCount] = {}
    for w in mon.watched:
        came = arrivals.get(w.name, {})
        hits = [came[s] for s in window if s in came]
        lat = [(came[s][0] - s) / 1e6 for s in window if s in came]
        counts[w.name] = NodeCount(len(window), len(hits), span_s)
        rs = {k: float(np.mean([h[i] for h in hits])) if hits else float('nan')
              for i, k in ((1, 'decode+preprocess'), (2, 'inference'), (3, 'postprocess'))}
        nodes[w.name] = NodeProbe(counts[w.name], lat, rs,
                                  _stage_means(d0[w.name], mon.diagnostics_of(w.name)))
    rss = {}
    for k, p in pids.items():
        try:
            rss[k] = sum(q.memory_info().rss for q in (
                _tree(p) if k != 'benchmark' else _tree(p)[:1])) / 1e6
        except psutil.Error:
            rss[k] = float('nan')
    verdict = judge(rate, counts, sent_hz=sent['sent_hz'])
    return ProbeResult(verdict, nodes, cpu, machine, rss,
                       {'late_max_s': float(sent['late_max_s'])})


def _stage_means(before: Dict[str, str], after: Dict[str, str]) -> Dict[str, float]:
    """Return each stage's mean ms over the frames between two /diagnostics readings."""
    try:
        frames = int(after.get('processed', 0)) - int(before.get('processed', 0))
    except ValueError:
        return {}
    if frames <= 0:
        return {}
    t0, t1 = stage_totals(before), stage_totals(after)
    out = {k: (v - t0.get(k, 0.0)) / frames for k, v in t1.items()}
    try:    # part of run_other: waiting at the compute gate for a core
        out['core_wait'] = (float(after['core_wait_total_ms'])
                            - float(before.get('core_wait_total_ms', 0.0))) / frames
    except (KeyError, ValueError):
        pass
    return out


def percentiles(values: List[float]) -> Dict[str, float]:
    """Return p50, p90 and max of ``values`` (NaN when empty)."""
    if not values:
        return {'p50': float('nan'), 'p90': float('nan'), 'max': float('nan')}
    a = np.asarray(values, float)
    return {'p50': float(np.percentile(a, 50)), 'p90': float(np.percentile(a, 90)),
            'max': float(a.max())}
