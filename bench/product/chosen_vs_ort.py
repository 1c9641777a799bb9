# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The measured choice vs a plain ONNX Runtime node (CPU, one thread), side by side.

    ./run.sh exec python bench/product/chosen_vs_ort.py [--rounds 7] [--runs 15]
        [--models nanodet mobilenet_v2]

A ROS node that just opens an ONNX Runtime session runs the CPU provider with
its default settings; inside our container, where two models share two cores,
that is one thread per model. Per model and per setting:

1. the backend manager chooses as a node does at configure, from scratch (a
   fresh profile cache, the shipped config/backends.yaml): ``alone`` (no thread
   budget: one model on the board) and ``budget 1`` (the container's budget
   with two models on two cores);
2. the chosen candidate and ``onnxruntime/cpu/t1`` are timed side by side on
   one real frame: ``--rounds`` rounds of ``--runs`` runs each, the order
   alternating between rounds, one warm-up run after each switch;
3. printed: p50 / p90 / max of each, and the speed-up = ORT t1 p50 / chosen
   p50; then every int8 candidate's status, profile p50 and accuracy (with its
   95 % interval) on the judging frames (never the frames its quantizer
   calibrated or validated on), with how its file was made.

The int8 files are made once per run (the first setting; a fresh cache folder
per run, so nothing from an earlier run is reused) and shared by both
settings; each setting's profile is measured from scratch.
The load present is printed with the results (load average before and after).
Written through benchlib: ``chosen_vs_ort.csv`` / ``.md`` and the int8
candidates' ``chosen_vs_ort_int8.*``.
"""

import argparse
import os
import pathlib
import shutil
import tempfile

from backend_selection import side_by_side
import benchlib
from edge_infer import paths
from edge_infer.backends.manager import BackendManager, load_config
from edge_infer.backends.measure.profiling import calibration_frames
from edge_infer.core.registry import load_registry
import numpy as np

REFERENCE = 'onnxruntime/cpu/t1'


def stats(ms) -> str:
    """Return 'p50 / p90 / max' of a list of milliseconds."""
    s = benchlib.summary(ms)
    return f'{s["median"]:.2f} / {float(np.percentile(ms, 90)):.2f} / {s["max"]:.2f}'


def interval(r) -> str:
    """Return 'accuracy [low-high]': the verdict with its 95 % interval."""
    return f'{r.accuracy:.3f} [{r.accuracy_low:.2f}-{r.accuracy_high:.2f}]'


def main() -> None:
    """Choose per model and setting, then time the choice against ORT t1 side by side."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--rounds', type=int, default=7)
    ap.add_argument('--runs', type=int, default=15)
    ap.add_argument('--models', nargs='*', default=['nanodet', 'mobilenet_v2'])
    benchlib.common_args(ap)
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.runs = min(args.rounds, 2), min(args.runs, 3)
        args.models = args.models[:1]
    res = benchlib.Results('chosen_vs_ort', 'The measured choice vs a plain ONNX Runtime node '
                           '(CPU, 1 thread)', '(product) speed-up over ORT t1', args.machine,
                           args.out)
    res_int8 = benchlib.Results('chosen_vs_ort_int8', 'int8 candidates of the choices in '
                                'chosen_vs_ort', '(product)', args.machine, args.out)
    reg = load_registry(paths.config_dir() / 'models.yaml')
    res.note(f'load average before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores')
    print('| model | setting | chosen | chosen p50 / p90 / max ms | ORT t1 p50 / p90 / max ms '
          '| speed-up vs ORT t1 |')
    print('|---|---|---|---|---|---|')
    ratios = []
    int8_rows = []
    notes = []
    cache = pathlib.Path(tempfile.mkdtemp(prefix='edge_infer_bench_'))
    for name in args.models:
        spec = reg[name]
        path = paths.models_dir() / spec.file
        for setting, budget in (('alone', 0), ('budget 1', 1)):
            mgr = BackendManager(cache, config=load_config(), log=lambda s: None)
            mgr.cap_threads(budget, 'bench: two models on two cores')
            try:
                backend, run = mgr.choose(spec, path, use_cache=False)
                by_name = {b.name: b for b in mgr.candidates(spec, path)}
                pair = [backend] + ([by_name[REFERENCE]] if backend.name != REFERENCE else [])
                times = side_by_side(spec, path, pair, args.rounds, args.runs)
            finally:
                mgr.cap_threads(0)
            chosen, ref = times[backend.name], times[REFERENCE]
            ours, theirs = benchlib.summary(chosen), benchlib.summary(ref)
            ratio = theirs['median'] / ours['median']
            ratios.append((name, setting, ratio))
            picked = next(r for r in run.results if r.chosen)
            print(f'| {name} | {setting} | {backend.name} (accuracy {interval(picked)}) | '
                  f'{stats(chosen)} | {stats(ref)} | {ratio:.2f}x |')
            res.add(model=name, setting=setting, chosen=backend.name, accuracy=picked.accuracy,
                    accuracy_low=picked.accuracy_low, accuracy_high=picked.accuracy_high,
                    accuracy_interval=interval(picked),
                    chosen_p50_ms=ours['median'], chosen_p90_ms=float(np.percentile(chosen, 90)),
                    chosen_max_ms=ours['max'], ort_p50_ms=theirs['median'],
                    ort_p90_ms=float(np.percentile(ref, 90)), ort_max_ms=theirs['max'],
                    speed_up=ratio, rounds=args.rounds, runs=args.runs)
            int8_rows += [(name, setting, r) for r in run.results if r.precision == 'int8']
            ranked = sorted((r for r in run.results if r.status == 'ok'), key=lambda r: r.frame_ms)
            notes.append(f'- {name}, {setting}: frame cost (profile p50 + preprocessing) of the '
                         'fastest accepted: ' + ', '.join(
                             f'{r.backend} {r.frame_ms:.2f} ms' for r in ranked[:4])
                         + (f'; {run.ranking.describe()}' if run.ranking else ''))
    print('\n' + '\n'.join(notes))
    res.notes += [n[2:] for n in notes]
    res.note(f'load average after: {os.getloadavg()[0]:.2f} (1 min)')
    floors = load_config()['min_accuracy']
    judged = calibration_frames(int(load_config()['calibration_frames']))[1]
    print(f'\nint8 candidates (accuracy on the judging frames: {judged}; '
          f'floors {floors}):\n')
    print('| model | setting | candidate | status | profile p50 ms | accuracy [95 % interval] '
          '| how made |')
    print('|---|---|---|---|---|---|---|')
    for name, setting, r in int8_rows:
        detail = r.accuracy_detail if r.status == 'ok' else r.reason
        print(f'| {name} | {setting} | {r.backend} | {r.status} | {r.p50_ms:.2f} | '
              f'{interval(r)} | {detail} |')
        res_int8.add(model=name, setting=setting, candidate=r.backend, status=r.status,
                     p50_ms=r.p50_ms, accuracy=interval(r), how_made=detail)
    shutil.rmtree(cache, ignore_errors=True)
    res.note('speed-up of the measured choice over a plain ONNX Runtime node (CPU, 1 thread): '
             + ', '.join(f'{n} {s} {r:.2f}x' for n, s, r in ratios))
    res.write(['model', 'setting', 'chosen', 'accuracy_interval', 'chosen_p50_ms', 'chosen_p90_ms',
               'chosen_max_ms', 'ort_p50_ms', 'ort_p90_ms', 'ort_max_ms', 'speed_up'],
              ['model', 'setting', 'chosen', 'accuracy [95 % interval]', 'chosen p50 ms', 'p90',
               'max',
               'ORT t1 p50 ms', 'p90', 'max', 'speed-up vs ORT t1'])
    res_int8.notes.append(f'accuracy on the judging frames: {judged}; floors {floors}; '
                          '[95 % interval]')
    res_int8.write(['model', 'setting', 'candidate', 'status', 'p50_ms', 'accuracy',
                    'how_made'],
                   ['model', 'setting', 'candidate', 'status', 'profile p50 ms',
                    'accuracy [95 % interval]', 'how made'])


if __name__ == '__main__':
    main()
