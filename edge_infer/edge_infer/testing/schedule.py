# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Schedule simulator: the executor's policies on paper, for boards we do not have.

Input: per-segment costs per device (measured here by the executor, or
entered from a board's profile, e.g. config/executor_profiles/*.yaml), the
models, how many frames each, the frames in flight per model, the transfer
cost when consecutive segments change device, and the background load on
the accelerator (foreign jobs of ``duty x period`` every ``period``, queued
FIFO like the real ones). Output per policy: makespan, throughput, mean and
p95 frame latency, and the share of segments per device.

The simulation is a discrete-event model of exactly what the executor does:
one FIFO queue per device, a controller releasing segment i+1 when i ends,
and the same three placement rules (cost-model: the device where the job
would finish first, counting the queue ahead of it and the transfer).
"""

from dataclasses import dataclass
import heapq
import itertools
import pathlib
from typing import Dict, List, Optional

import numpy as np
import yaml

POLICIES = ('accelerator-only', 'by-layer-type', 'cost-model')


@dataclass
class SimSegment:
    """A segment's kind and cost on each device, ms."""

    kind: str
    cost: Dict[str, float]


def load_profile(path: pathlib.Path) -> dict:
    """Return a profile: {'board', 'note', 'transfer_ms', 'models': {name: [SimSegment]}}."""
    data = yaml.safe_load(pathlib.Path(path).read_text())
    models = {name: [SimSegment(s['kind'], {k: float(v) for k, v in s['cost_ms'].items()})
                     for s in segs] for name, segs in data['models'].items()}
    return {'board': data.get('board', ''), 'note': data.get('note', ''),
            'transfer_ms': float(data.get('transfer_ms', 0.0)), 'models': models}


def simulate(models: Dict[str, List[SimSegment]], policy: str, frames: int = 50,
             in_flight: int = 2, load: float = 0.0, period_ms: float = 20.0,
             transfer_ms: float = 0.0, accelerator: str = 'accelerator',
             cpu: str = 'cpu') -> dict:
    """Simulate ``frames`` frames of every model, all models at once; return the figures."""
    if policy not in POLICIES:
        raise ValueError(f"policy '{policy}': use one of {', '.join(POLICIES)}")
    devices = (accelerator, cpu)
    queue: Dict[str, List] = {d: [] for d in devices}   # FIFO of jobs per device
    busy_until = dict.fromkeys(devices, 0.0)
    running: Dict[str, Optional[dict]] = dict.fromkeys(devices)
    events: list = []
    seq = itertools.count()
    latencies: List[float] = []
    placed = dict.fromkeys(devices, 0)
    submitted = dict.fromkeys(models, 0)

    def push(t, kind, payload):
        heapq.heappush(events, (t, next(seq), kind, payload))

    def backlog(d, now):
        rest = max(0.0, busy_until[d] - now) if running[d] else 0.0
        return rest + sum(j['cost'] for j in queue[d])

    def place(model, seg, prev_dev, now):
        s = models[model][seg]
        if policy == 'accelerator-only':
            return accelerator
        if policy == 'by-layer-type':
            return accelerator if s.kind == 'conv' else cpu
        return min(devices, key=lambda d: backlog(d, now) + s.cost[d] + (
            transfer_ms if prev_dev not in (None, d) else 0.0))

    def enqueue(now, job):
        d = job['dev']
        if job['frame'] is None:    # foreign work goes ahead of queued jobs, like the executor
            n_foreign = sum(1 for j in queue[d] if j['frame'] is None)
            queue[d].insert(n_foreign, job)
        else:
            queue[d].append(job)
        if running[d] is None:
            start(now, d)

    def start(now, d):
        if not queue[d]:
            running[d] = None
            return
        job = queue[d].pop(0)
        running[d] = job
        busy_until[d] = now + job['cost']
        push(busy_until[d], 'end', d)

    def release(now, frame, seg, prev_dev):
        d = place(frame['model'], seg, prev_dev, now)
        cost = models[frame['model']][seg].cost[d]
        delay = transfer_ms if prev_dev not in (None, d) else 0.0
        placed[d] += 1
        job = {'dev': d, 'cost': cost, 'frame': frame, 'seg': seg}
        if delay > 0:
            push(now + delay, 'arrive', job)
        else:       # queued at once, so the next placement sees it in the backlog
            enqueue(now, job)

    def new_frame(now, model):
        if submitted[model] >= frames:
            return
        submitted[model] += 1
        release(now, {'model': model, 't0': now}, 0, None)

    for m in models:
        for _ in range(in_flight):
            new_frame(0.0, m)
    if load > 0:
        push(0.0, 'load', None)
    t = 0.0
    while events:
        t, _, kind, payload = heapq.heappop(events)
        if kind == 'arrive':
            enqueue(t, payload)
        elif kind == 'load':
            if any(submitted[m] < frames for m in models) or any(running.values()):
                enqueue(t, {'dev': accelerator, 'cost': load * period_ms, 'frame': None})
                push(t + period_ms, 'load', None)
        else:   # a device finished its job
            d = payload
            job = running[d]
            assert job is not None, f'{d} finished a job it did not have'
            running[d] = None
            start(t, d)
            frame = job['frame']
            if frame is None:
                continue
            if job['seg'] + 1 < len(models[frame['model']]):
                release(t, frame, job['seg'] + 1, d)
            else:
                latencies.append(t - frame['t0'])
                new_frame(t, frame['model'])
        if len(latencies) == frames * len(models) and kind != 'load':
            break
    makespan = t
    n = len(latencies)
    total = sum(placed.values()) or 1
    return {'policy': policy, 'load': load, 'makespan_ms': makespan,
            'fps': n / (makespan / 1e3) if makespan else float('nan'),
            'mean_ms': float(np.mean(latencies)), 'p95_ms': float(np.percentile(latencies, 95)),
            'share': {d: placed[d] / total for d in devices}}


def from_executor(executor) -> Dict[str, List[SimSegment]]:
    """Return the costs the executor measured on this machine, as simulator input."""
    return {name: [SimSegment(seg.kind, {d: m['cost'][d][i] for d in m['cost']})
                   for i, seg in enumerate(m['segments'])]
            for name, m in executor.models.items()}
