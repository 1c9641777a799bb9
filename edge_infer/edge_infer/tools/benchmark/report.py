# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The benchmark's report: a markdown table, a JSON record and a plot.

Per configuration: the peak sustainable rate of every round (and their
median), the graph efficiency (peak x the sum of the nodes' frame costs
measured alone / the cores: 1.0 is the physical limit), and per node at
each fixed rate: the share processed, in->out latency p50/p90/max, where
the mean frame's time went, each process's CPU over its idle baseline and
its RSS. The load present is given with every probe: the machine's busy
cores beside the ones the benchmark's own processes used.
"""

from dataclasses import asdict, dataclass, field
import json
import os
import pathlib
import statistics
from typing import Dict, List, Optional

import numpy as np

from .probe import percentiles, ProbeResult


@dataclass
class RoundResult:
    """One configuration in one round: its search, its fixed rates, its baseline."""

    config: str
    round: int      # noqa: A003
    peak_hz: Optional[float]
    probes: List[ProbeResult]
    fixed: Dict[float, ProbeResult]
    idle_cpu: Dict[str, float]
    alone_ms: Dict[str, float]              # each node's frame cost alone (its profile)
    chosen: Dict[str, str]
    start_s: float
    errors: List[str] = field(default_factory=list)
    drift_alarms: int = -1      # 'latency drift' lines in the graph's logs (-1: not read)

    def efficiency(self, cores: int) -> float:
        """Return peak x sum(frame cost alone) / cores (NaN without a peak)."""
        if not self.peak_hz or not self.alone_ms:
            return float('nan')
        return self.peak_hz * sum(self.alone_ms.values()) / 1e3 / cores


def is_auto(config: str) -> bool:
    """Return whether a configuration lets the nodes choose (``auto``, ``auto+...``)."""
    return config.split('+')[0] in ('', 'auto')


def _fmt(v: Optional[float], spec: str = '.1f') -> str:
    return '-' if v is None or not np.isfinite(v) else format(v, spec)


def _load(p: ProbeResult) -> str:
    ours = sum(p.cpu.values())
    return f'{p.machine_cpu:.2f} ({ours:.2f} ours)'


def summary(rounds: List[RoundResult], cores: int) -> Dict[str, dict]:
    """Return per configuration: the peaks, their median, the efficiency's median."""
    out: Dict[str, dict] = {}
    for r in rounds:
        s = out.setdefault(r.config, {'peaks': [], 'efficiency': []})
        s['peaks'].append(r.peak_hz)
        s['efficiency'].append(r.efficiency(cores))
    for s in out.values():
        peaks = [p for p in s['peaks'] if p is not None]
        s['peak_median'] = statistics.median(peaks) if peaks else None
        eff = [e for e in s['efficiency'] if np.isfinite(e)]
        s['efficiency_median'] = statistics.median(eff) if eff else float('nan')
    return out


def markdown(rounds: List[RoundResult], cores: int, header: List[str]) -> str:
    """Return the report as markdown."""
    lines = ['# edge_infer benchmark', '', *header, '']
    summ = summary(rounds, cores)
    best_static = max((s['peak_median'] or 0 for c, s in summ.items() if not is_auto(c)),
                      default=0)
    lines += ['## Peak sustainable rate (every node keeps >= 95 % of the frames)', '',
              '| configuration | peak per round, Hz | median | vs best static | '
              'graph efficiency | drift alarms per round | chosen backends |',
              '|---|---|---|---|---|---|---|']
    for config, s in summ.items():
        chosen = next((r.chosen for r in rounds if r.config == config), {})
        ratio = (s['peak_median'] / best_static) if best_static and s['peak_median'] else None
        lines.append(f"| {config} | {', '.join(_fmt(p, 'g') for p in s['peaks'])} | "
                     f"{_fmt(s['peak_median'], 'g')} | {_fmt(ratio, '.2f')}x | "
                     f"{_fmt(s['efficiency_median'], '.2f')} | "
                     + ', '.join(str(r.drift_alarms) for r in rounds if r.config == config)
                     + ' | ' + ', '.join(f'{n.lstrip("/")} {b}' for n, b in chosen.items()) + ' |')
    lines += ['', "Graph efficiency = peak x the sum of the nodes' frame costs measured alone "
              f'(their profiles: run + preprocessing) / {cores} cores; 1.0 is the physical '
              'limit.', '']
    rates = sorted({rate for r in rounds for rate in r.fixed})
    for rate in rates:
        lines += [f'## At {rate:g} Hz', '',
                  '| configuration | round | node | processed | in->out p50 / p90 / max ms |'
                  ' machine load, cores |', '|---|---|---|---|---|---|']
        for r in rounds:
            p = r.fixed.get(rate)
            if p is None:
                continue
            for name, n in p.nodes.items():
                q = percentiles(n.latency_ms)
                lines.append(f'| {r.config} | {r.round} | {name.lstrip("/")} | '
                             f'{100 * n.count.share:.0f} % | {_fmt(q["p50"])} / '
                             f'{_fmt(q["p90"])} / {_fmt(q["max"])} | {_load(p)} |')
        lines += ['']
        lines += against_static(rounds, rate)
        lines += where_time_goes(rounds, rate)
    lines += processes(rounds)
    lines += ['## Every probe', '', '| configuration | round | rate Hz | sent Hz | passed | '
              'why not | machine load, cores |', '|---|---|---|---|---|---|---|']
    for r in rounds:
        for p in r.probes:
            v = p.verdict
            lines.append(f'| {r.config} | {r.round} | {v.rate_hz:g} | {v.sent_hz:.1f} | '
                         f"{'yes' if v.passed else 'no'} | {v.why} | {_load(p)} |")
    return '\n'.join(lines) + '\n'


def best_static(rounds: List[RoundResult], rate: float) -> Optional[str]:
    """Return the static configuration with the lowest median in->out p50 at ``rate``."""
    scores: Dict[str, List[float]] = {}
    for r in rounds:
        if is_auto(r.config) or rate not in r.fixed:
            continue
        p50 = [percentiles(n.latency_ms)['p50'] for n in r.fixed[rate].nodes.values()]
        scores.setdefault(r.config, []).append(float(np.nanmean(p50)))
    return min(scores, key=lambda c: statistics.median(scores[c])) if scores else None


def against_static(rounds: List[RoundResult], rate: float) -> List[str]:
    """Return, per auto configuration, round and node, its in->out p50 beside the best static's."""
    static = best_static(rounds, rate)
    lines: List[str] = []
    for config in dict.fromkeys(r.config for r in rounds if is_auto(r.config)):
        autos = [r for r in rounds if r.config == config and rate in r.fixed]
        if static is None or not autos:
            continue
        lines += [f'{config} against the best static configuration here ({static}), in->out '
                  'p50 ms per round (the same round: the same load):', '',
                  f'| round | node | {config} | {static} | no slower |', '|---|---|---|---|---|']
        held = total = 0
        for a in autos:
            s = next((r for r in rounds if r.config == static and r.round == a.round
                      and rate in r.fixed), None)
            if s is None:
                continue
            for name, n in a.fixed[rate].nodes.items():
                mine = percentiles(n.latency_ms)['p50']
                theirs = percentiles(s.fixed[rate].nodes[name].latency_ms)['p50']
                ok = mine <= theirs
                held, total = held + ok, total + 1
                lines.append(f'| {a.round} | {name.lstrip("/")} | {_fmt(mine)} | '
                             f"{_fmt(theirs)} | {'yes' if ok else 'NO'} |")
        lines += ['', f'{config} no slower in {held} of {total} (round, node) pairs.', '']
    return lines


def where_time_goes(rounds: List[RoundResult], rate: float) -> List[str]:
    """Return the table of where a mean frame's time went, per configuration and node."""
    stages = ['queued', 'parse', 'preprocess', 'inference', 'postprocess', 'run_other',
              'core_wait', 'build_msg', 'energy', 'publish']
    lines = [f"Where a frame's time goes at {rate:g} Hz (means over the probe, ms; from the "
             "node's own stage totals: queued = waiting for the node's worker, parse = "
             'the message read and the JPEG decoded, run_other = tracking, the live '
             'choice and core_wait (waiting at the compute gate for a core: part of '
             "run_other), outside = in->out mean minus the node's stages: transport in "
             "and out, the callback, and the monitor; alone = the profile's run + "
             'preprocessing, so preprocess + inference - alone is the time the run lost '
             'to the other models on the same cores and to the interpreter lock):', '',
             '| configuration | node | in->out mean | ' + ' | '.join(stages)
             + ' | outside | alone |', '|---|---|---|' + '---|' * (len(stages) + 2)]
    for config in dict.fromkeys(r.config for r in rounds):
        mine = [r for r in rounds if r.config == config and rate in r.fixed]
        if not mine:
            continue
        for name in mine[0].fixed[rate].nodes:
            lat = [x for r in mine for x in r.fixed[rate].nodes[name].latency_ms]
            st = {k: statistics.median([r.fixed[rate].nodes[name].node_stages.get(k, np.nan)
                                        for r in mine]) for k in stages}
            mean = float(np.mean(lat)) if lat else float('nan')
            inside = sum(v for k, v in st.items() if np.isfinite(v) and k != 'core_wait')
            alone = statistics.median([r.alone_ms.get(name, np.nan) for r in mine])
            lines.append(f'| {config} | {name.lstrip("/")} | {_fmt(mean)} | '
                         + ' | '.join(_fmt(st[k], '.2f') for k in stages)
                         + f' | {_fmt(mean - inside)} | {_fmt(alone)} |')
    return lines + ['']


def processes(rounds: List[RoundResult]) -> List[str]:
    """Return the table of each process's CPU over its idle baseline and its RSS."""
    lines = ['## Processes', '', 'CPU in cores over the idle baseline (measured with no '
             'frames before the probes), at each fixed rate; RSS with its children, MB.', '',
             '| configuration | round | rate Hz | process | idle | CPU over idle | RSS MB |',
             '|---|---|---|---|---|---|---|']
    for r in rounds:
        for rate, p in sorted(r.fixed.items()):
            for proc, cores in p.cpu.items():
                idle = r.idle_cpu.get(proc, 0.0)
                lines.append(f'| {r.config} | {r.round} | {rate:g} | {proc} | {idle:.2f} | '
                             f'{cores - idle:.2f} | {_fmt(p.rss_mb.get(proc, np.nan), ".0f")} |')
    return lines + ['']


def plot(path: pathlib.Path, rounds: List[RoundResult]) -> None:
    """Plot the lowest share processed per probe against the rate, per configuration."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
    for i, config in enumerate(dict.fromkeys(r.config for r in rounds)):
        pts = sorted((p.verdict.rate_hz, min(n.count.share for n in p.nodes.values()),
                      max(percentiles(n.latency_ms)['p50'] for n in p.nodes.values()))
                     for r in rounds if r.config == config
                     for p in [*r.probes, *r.fixed.values()] if p.nodes)
        if not pts:
            continue
        xs, shares, lat = zip(*pts)
        ax.plot(xs, [100 * s for s in shares], 'o-', label=config, color=f'C{i}')
        bx.plot(xs, lat, 'o-', label=config, color=f'C{i}')
    ax.axhline(95, color='grey', ls='--', lw=1)
    ax.set(xlabel='playback rate, Hz', ylabel='lowest share processed of any node, %',
           title='frames kept')
    bx.set(xlabel='playback rate, Hz', ylabel='slowest node in->out p50, ms',
           title='latency')
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write(out: pathlib.Path, rounds: List[RoundResult], header: List[str]) -> pathlib.Path:
    """Write benchmark.md, benchmark.json and benchmark.png to ``out``; return the .md."""
    cores = os.cpu_count() or 1
    out.mkdir(parents=True, exist_ok=True)
    md = out / 'benchmark.md'
    md.write_text(markdown(rounds, cores, header))
    record = [{**asdict(r), 'efficiency': r.efficiency(cores)} for r in rounds]
    for rec in record:      # latencies as percentiles: the raw lists are long
        for p in [*rec['probes'], *rec['fixed'].values()]:
            for n in p['nodes'].values():
                n['latency_ms'] = percentiles(n['latency_ms'])
        rec['fixed'] = {str(k): v for k, v in rec['fixed'].items()}
    (out / 'benchmark.json').write_text(json.dumps(
        {'header': header, 'summary': summary(rounds, cores), 'rounds': record}, indent=1,
        default=float))
    plot(out / 'benchmark.png', rounds)
    return md
