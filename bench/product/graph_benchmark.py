# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What the default graph sustains here, auto against static: issue 51's goals, as ratios.

    ./run.sh exec python bench/product/graph_benchmark.py [--quick] [--rounds N] [--machine NAME]
        [-- extra edge_infer benchmark arguments]

Runs ``edge_infer benchmark`` (edge_infer/tools/benchmark) with auto, auto
on the two-process graph (config/graph_two_processes.yaml) and the two
static configurations the issue names (every node on openvino/cpu/t1, every
node on onnxruntime/cpu/t1), in interleaved rounds, writes its report to
bench/results/<machine>/graph_benchmark/ (benchmark.md, .json, .png) and
prints the goals' figures:

- the peak sustainable rate of each, and auto's best over the best static
  one (goal >= 2x);
- the graph efficiency: peak x the nodes' frame costs alone / the cores
  (goal >= 0.7);
- at the bag's rate (10 Hz), in how many (round, node) pairs auto's in->out
  p50 is no slower than the quickest static configuration's there (goal: all).
"""

import argparse
import json
import pathlib
import statistics
import sys

import benchlib
from edge_infer.tools.benchmark.report import is_auto

CONFIGS = ('auto', 'auto+graph=graph_two_processes.yaml', 'openvino/cpu/t1',
           'onnxruntime/cpu/t1')


def goals(record: dict, rate: float = 10.0) -> list:
    """Return the lines that state the goals' figures from a benchmark.json record."""
    summ = record['summary']
    static = {c: s for c, s in summ.items() if not is_auto(c)}
    autos = {c: s for c, s in summ.items() if is_auto(c)}
    best_static = max(static, key=lambda c: static[c]['peak_median'] or 0, default=None)
    best_auto = max(autos, key=lambda c: autos[c]['peak_median'] or 0, default=None)
    lines = []
    for c, s in summ.items():
        lines.append(f"{c:<40} peak {s['peak_median']} Hz (rounds: {s['peaks']}), "
                     f"efficiency {s['efficiency_median']:.2f}")
    if best_static and best_auto and static[best_static]['peak_median']:
        ratio = autos[best_auto]['peak_median'] / static[best_static]['peak_median']
        lines.append(f'ratio: {best_auto} / {best_static} = {ratio:.2f}x (goal >= 2x)')
    by = {(r['config'], r['round']): r for r in record['rounds']}
    key = str(rate)
    # at a fixed rate the best static one is the quickest there (as in the report)
    quick: dict = {}
    for (config, _), r in by.items():
        if not is_auto(config) and key in r['fixed']:
            p50 = [n['latency_ms']['p50'] for n in r['fixed'][key]['nodes'].values()]
            quick.setdefault(config, []).append(sum(p50) / len(p50))
    best_static = min(quick, key=lambda c: statistics.median(quick[c]), default=best_static)
    held = total = 0
    for (config, rnd), r in by.items():
        s = by.get((best_static, rnd))
        if config != 'auto' or s is None or key not in r['fixed'] or key not in s['fixed']:
            continue
        for node, n in r['fixed'][key]['nodes'].items():
            mine = n['latency_ms']['p50']
            theirs = s['fixed'][key]['nodes'][node]['latency_ms']['p50']
            held, total = held + (mine <= theirs), total + 1
    if total:
        lines.append(f'at {rate:g} Hz auto no slower than {best_static} in {held} of {total} '
                     f'(round, node) pairs (goal: all)')
    return lines


def main(argv=None) -> int:
    """Run the benchmark into this machine's results folder and print the ratios."""
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index('--') + 1:] if '--' in argv else []
    argv = argv[:argv.index('--')] if '--' in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--rounds', type=int, default=3)
    benchlib.common_args(ap)        # --machine, --out, --quick (one round, short probes)
    args = ap.parse_args(argv)
    from edge_infer.tools.benchmark.main import main as benchmark
    out = pathlib.Path(args.out) if args.out else (
        benchlib.BENCH_DIR / 'results' / (args.machine or benchlib.machine_slug())
        / 'graph_benchmark')
    cmd = ['--configs', ','.join(CONFIGS), '--out', str(out), '--hi', '100',
           '--rounds', str(1 if args.quick else args.rounds)]
    if args.quick:
        cmd.append('--quick')
    code = benchmark(cmd + extra)
    record = json.loads((out / 'benchmark.json').read_text())
    print('\n'.join(goals(record)))
    peaks = [s['peak_median'] for s in record['summary'].values() if s['peak_median']]
    print(f'(peaks, median of the configurations: {statistics.median(peaks) if peaks else "-"} '
          f'Hz; the report: {out / "benchmark.md"})')
    return code


if __name__ == '__main__':
    sys.exit(main())
