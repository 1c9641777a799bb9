# Copyright 2026 edge_infer contributors. Apache-2.0.
"""``edge_infer benchmark``: what this robot sustains, measured the way ros2_benchmark does.

    edge_infer benchmark [--params-file F] [--bag DIR] [--configs auto,openvino/cpu/t1]
                         [--rounds N] [--quick] [--out DIR]

The user's graph (``edge_infer bringup``'s: config/graph.yaml and the params
file, the default graph by default) is brought up once per configuration
and round, in a ROS domain of its own, and fed the bag's frames from
memory at target rates (:mod:`.feeder`): a binary search then a linear scan
upward find the peak rate at which every node keeps >= 95 % of its frames
(:mod:`.peak`); then fixed rates (the bag's own, and 30 Hz) are played. A
monitor outside the graph (:mod:`.monitor`) times each result from its
frame's stamp. ``auto`` is the graph as configured; each other
configuration pins every perception node to that backend. Configurations
take turns within each round, and each round starts with another one, so
that a change of the machine's load falls on all of them. The report
(:mod:`.report`): benchmark.md, benchmark.json and benchmark.png in
``--out``. The graph is left as it is: nothing is changed but the backend
a static configuration names.
"""

import argparse
import datetime
import os
import pathlib
import platform
import sys
import time
from typing import List, Optional

from .graph_run import AUTO, BenchmarkError, GraphRun, ProbeResult
from .peak import find_peak
from .report import RoundResult, write
from ... import paths

DEFAULT_CONFIGS = f'{AUTO},openvino/cpu/t1,onnxruntime/cpu/t1'


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog='edge_infer benchmark',
                                 description=__doc__.splitlines()[0])
    ap.add_argument('--params-file', type=pathlib.Path, default=None,
                    help="the graph's parameters (default: the package's perception.yaml)")
    ap.add_argument('--bag', type=pathlib.Path, default=None,
                    help='camera bag whose frames are played (default: the demo bag)')
    ap.add_argument('--configs', default=None,
                    help=f'comma-separated: auto and static backends (default '
                         f'{DEFAULT_CONFIGS}; with --quick: auto)')
    ap.add_argument('--rounds', type=int, default=None, help='rounds (default 3; --quick 1)')
    ap.add_argument('--quick', action='store_true',
                    help='one round, short probes, 5 Hz steps: about 2 minutes for auto')
    ap.add_argument('--lo', type=float, default=5.0, help='lowest rate searched, Hz')
    ap.add_argument('--hi', type=float, default=60.0, help='highest rate searched, Hz')
    ap.add_argument('--step', type=float, default=None, help='scan step, Hz (2; --quick 5)')
    ap.add_argument('--probe-s', type=float, default=None,
                    help='seconds counted per search probe (8; --quick 3)')
    ap.add_argument('--no-search', action='store_true',
                    help='only the fixed rates (interleaved runs of several configurations)')
    ap.add_argument('--fixed', default='bag,30',
                    help="fixed rates after the search, Hz ('bag': the bag's own rate)")
    ap.add_argument('--fixed-s', type=float, default=None,
                    help='seconds counted per fixed rate (20; --quick 5)')
    ap.add_argument('--frames', type=int, default=100, help='bag frames held in memory')
    ap.add_argument('--settle-s', type=float, default=180.0,
                    help="longest wait for every node's measured choice")
    ap.add_argument('--out', type=pathlib.Path, default=pathlib.Path('out/benchmark'))
    return ap


def bag_rate(bag: pathlib.Path) -> float:
    """Return the bag's camera rate in Hz (its frames over its duration)."""
    from ...core.bag_read import bag_info
    info = bag_info(bag)
    frames = max(v['count'] for v in info['topics'].values())
    return round((frames - 1) / info['duration_s'], 1) if info['duration_s'] > 0 else 10.0


def measure(config: str, rnd: int, args, fixed: List[float], log=print) -> RoundResult:
    """Bring the graph up in ``config``, search its peak, play the fixed rates."""
    logs = args.out / 'logs' / f'{rnd}-{config.replace("/", "_")}'
    run = GraphRun(config, args.bag, logs, args.params_file, args.frames, log)
    errors: List[str] = []
    result: Optional[RoundResult] = None
    try:
        run.start(args.settle_s)
        log(f'[benchmark] round {rnd} {config}: up and settled in {run.started_s:.1f} s: '
            + ', '.join(f'{n.lstrip("/")} {b}' for n, b in run.chosen().items()))
        idle = run.measure_idle()
        probes: List[ProbeResult] = []

        def probe(rate: float):
            p = run.probe(rate, args.probe_s)
            probes.append(p)
            v = p.verdict
            log(f'[benchmark]   {rate:6.2f} Hz: {"pass" if v.passed else "FAIL"} '
                + ' '.join(f'{n.lstrip("/")} {100 * s:.0f}%' for n, s in v.shares.items())
                + (f' ({v.why})' if v.why else '')
                + f'; load {p.machine_cpu:.2f} cores')
            return v

        peak = None
        if not args.no_search:
            peak = find_peak(probe, args.lo, args.hi, args.step).peak_hz
            log(f'[benchmark] round {rnd} {config}: peak {peak} Hz')
        done = {}
        for rate in fixed:
            done[rate] = run.probe(rate, args.fixed_s)
            v = done[rate].verdict
            log(f'[benchmark]   fixed {rate:g} Hz: '
                + ' '.join(f'{n.lstrip("/")} {100 * s:.0f}%' for n, s in v.shares.items()))
        result = RoundResult(config, rnd, peak, probes, done, idle,
                             run.alone_cost_ms(), run.chosen(), run.started_s, errors)
        return result
    finally:
        codes = run.stop()
        bad = {k: v for k, v in codes.items() if v not in (0, None)}
        if bad:
            log(f'[benchmark] {config}: exit codes {bad}')
        if result is not None:      # the alarms of the whole run, start included
            result.drift_alarms = sum(f.read_text(errors='replace').count('latency drift:')
                                      for f in logs.glob('*.log'))


def main(argv: Optional[List[str]] = None) -> int:
    """Run the benchmark (see the module doc)."""
    args = _parser().parse_args(argv)
    q = args.quick
    args.rounds = args.rounds or (1 if q else 3)
    args.step = args.step or (5.0 if q else 2.0)
    args.probe_s = args.probe_s or (3.0 if q else 8.0)
    args.fixed_s = args.fixed_s or (5.0 if q else 20.0)
    configs = [c.strip() for c in (args.configs or (AUTO if q else DEFAULT_CONFIGS)).split(',')
               if c.strip()]
    args.bag = args.bag or paths.bags_dir() / 'demo'
    if not (args.bag / 'metadata.yaml').is_file():
        print(f'edge_infer benchmark: {args.bag} is no rosbag2 folder (prepare makes the '
              f'demo bag: edge_infer prepare)', file=sys.stderr)
        return 2
    try:
        fixed = [bag_rate(args.bag) if f.strip() == 'bag' else float(f)
                 for f in args.fixed.split(',') if f.strip()]
    except ValueError:
        print(f"edge_infer benchmark: --fixed {args.fixed}: rates in Hz or 'bag'",
              file=sys.stderr)
        return 2
    t0 = time.monotonic()
    rounds: List[RoundResult] = []
    try:
        for rnd in range(1, args.rounds + 1):
            shift = (rnd - 1) % len(configs)        # each round starts with another
            for config in configs[shift:] + configs[:shift]:
                rounds.append(measure(config, rnd, args, fixed))
    except BenchmarkError as exc:
        print(f'edge_infer benchmark: {exc}', file=sys.stderr)
        if not rounds:
            return 1
    except KeyboardInterrupt:
        print('edge_infer benchmark: interrupted; writing what was measured', file=sys.stderr)
        if not rounds:
            return 130
    command = ' '.join(argv if argv is not None else sys.argv[1:])
    rates = ', '.join(f'{r:g}' for r in fixed)
    header = [f'- machine: {platform.machine()}, {_cpu_name()}, {os.cpu_count()} cores; '
              f'load average at the end {os.getloadavg()[0]:.2f}',
              f'- date: {datetime.datetime.now().isoformat(timespec="minutes")}; wall time '
              f'{time.monotonic() - t0:.0f} s',
              f'- command: edge_infer benchmark {command}',
              f'- graph: {args.params_file or "the package perception.yaml"}; bag {args.bag} '
              f'({args.frames} frames held); {args.rounds} round(s), configurations in turn',
              ('- no search' if args.no_search else
               f'- search: {args.lo:g}-{args.hi:g} Hz, step {args.step:g} Hz, {args.probe_s:g} s '
               f'per probe after 1 s unscored')
              + f'; fixed rates {rates} Hz for {args.fixed_s:g} s']
    md = write(args.out, rounds, header)
    print(md.read_text())
    print(f'[benchmark] wrote {md}, benchmark.json and benchmark.png in {args.out}')
    return 0


def _cpu_name() -> str:
    from ...backends.measure.cache import board_fingerprint
    return board_fingerprint().get('cpu') or platform.processor()


if __name__ == '__main__':
    sys.exit(main())
