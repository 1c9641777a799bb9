# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The bench/ scripts: listed by room, run by number or name, the papers' ones indexed.

    ./run.sh exec python bench/run.py list          # every script, by room
    ./run.sh exec python bench/run.py [all | 1 2 ...] [--quick] [--machine NAME]
        [--out DIR] [-- extra args for a single experiment]
    ./run.sh exec python bench/run.py NAME [-- its own args]    # any script

The rooms: ``papers/`` (the source papers' experiments, numbered 1-6, and
what they run on), ``product/`` (the product's own goals: footprint, the
graph, tracking, Triton, the choice...), ``probes/`` (one-off questions,
answered; kept to rerun). Every script is found here: nothing to register.

Each experiment runs in a fresh process (thread pools and the power meter of
one do not leak into the next) and writes <name>.csv, <name>.md and
<name>.png under bench/results/<machine>/ (``--out`` elsewhere). This command
then writes index.md there: each experiment, the seed it reproduces, its exit
status and how long it took here.
"""

import argparse
import ast
import os
import pathlib
import subprocess
import sys
import time
from typing import Dict, Tuple

import benchlib

EXPERIMENTS = {
    '1': ('exp1_sgemm', 'SGEMM throughput by library and size', 'Lee & Shin 2019 Fig. 4'),
    '2': ('exp2_model_library', 'Model x library latency and energy',
          'Lee & Shin 2019 Fig. 5, Table 2'),
    '3': ('exp3_conv_methods', 'Conv methods: direct vs im2col vs im2row',
          'Park & Chung n.d. Table 1'),
    '4': ('exp4_zero_copy', 'Zero-copy vs copy', 'Lee & Kang 2016'),
    '5': ('exp5_multi_dnn', 'Multi-DNN scheduling under accelerator load',
          'Kim 2021 Figs. 5-7'),
    '6': ('exp6_ros_pipeline', 'ROS pipeline cost vs bare inference', '(product)'),
}


ROOMS = ('papers', 'product', 'probes')


def scripts() -> Dict[str, Tuple[str, pathlib.Path, str]]:
    """Return every script: name -> (room, path, the first line of its docstring)."""
    found = {}
    for room in ROOMS:
        for path in sorted((benchlib.BENCH_DIR / room).glob('*.py')):
            doc = ast.get_docstring(ast.parse(path.read_text())) or ''
            found[path.stem] = (room, path, doc.splitlines()[0] if doc else '')
    return found


def _env() -> Dict[str, str]:
    """Return the environment a script runs in: benchlib importable from every room."""
    path = os.environ.get('PYTHONPATH', '')
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(benchlib.BENCH_DIR), path) if p))


def main(argv=None) -> int:
    """Run the experiments; return non-zero if any failed."""
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if '--' in argv:
        extra = argv[argv.index('--') + 1:]
        argv = argv[:argv.index('--')]
    found = scripts()
    if argv[:1] == ['list']:
        for room in ROOMS:
            print(f'{room}/')
            for name, (r, _, line) in found.items():
                if r == room:
                    print(f'  {name:<22} {line}')
        return 0
    if len(argv) == 1 and argv[0] in found:     # any script, by name, with its own args
        return subprocess.call([sys.executable, str(found[argv[0]][1])] + extra, env=_env())
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('which', nargs='*', default=['all'],
                    help="'all', experiment numbers (" + ', '.join(
                        f'{k}={v[0]}' for k, v in EXPERIMENTS.items()) + "), 'list', or "
                    'one script by name')
    benchlib.common_args(ap)
    args = ap.parse_args(argv)
    which = list(EXPERIMENTS) if 'all' in args.which or not args.which else args.which
    bad = [w for w in which if w not in EXPERIMENTS]
    if bad:
        ap.error(f'unknown experiment(s) {bad}; known: {", ".join(EXPERIMENTS)}')
    if extra and len(which) != 1:
        ap.error('extra arguments after -- need exactly one experiment')
    machine = args.machine or benchlib.machine_slug()
    out = pathlib.Path(args.out) if args.out else benchlib.BENCH_DIR / 'results' / machine
    common = ['--machine', machine, '--out', str(out)] + (['--quick'] if args.quick else [])
    done = []
    for w in which:
        name, title, seed = EXPERIMENTS[w]
        script = found[name][1] if name in found else benchlib.BENCH_DIR / f'{name}.py'
        cmd = [sys.executable, str(script)] + common + extra
        print(f'\n=== experiment {w}: {title} ({seed}) ===\n', flush=True)
        t = time.monotonic()
        code = subprocess.call(cmd, env=_env()) if script.exists() else 127
        took = time.monotonic() - t
        print(f'=== experiment {w}: exit {code} in {took:.0f} s ===', flush=True)
        done.append((w, name, title, seed, code, took))
    out.mkdir(parents=True, exist_ok=True)
    index = out / 'index.md'
    old = index.read_text().splitlines() if index.exists() else []
    rows = {line.split('|')[1].strip(): line for line in old
            if line.startswith('| ') and line.split('|')[1].strip().isdigit()}
    for w, name, title, seed, code, took in done:
        status = 'ok' if code == 0 else f'FAILED (exit {code})'
        rows[w] = (f'| {w} | [{title}]({name}.md) | {seed} | {status} | {took:.0f} s'
                   f'{" (quick)" if args.quick else ""} |')
    rec = benchlib.machine_record()
    lines = [f'# bench results: {machine}', '',
             ', '.join(f'{k}: {v}' for k, v in rec.items()), '',
             'Regenerate: `./run.sh exec python bench/run.py all` (or the numbers of the '
             "experiments wanted); each experiment's own page names its exact command.", '',
             '| # | experiment | reproduces | status | time here |', '|---|---|---|---|---|']
    lines += [rows[k] for k in sorted(rows)]
    index.write_text('\n'.join(lines) + '\n')
    print(f'wrote {index}')
    return 0 if all(d[4] == 0 for d in done) else 1


if __name__ == '__main__':
    raise SystemExit(main())
