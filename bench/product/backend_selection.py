# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Backend manager benchmarks: selection regret and warm-start configure time.

    ./run.sh exec python bench/product/backend_selection.py [--rounds 5] [--runs 10] [--load 0.5]

1. Selection regret, per bundled model: the manager chooses as a node does
   (fresh profile, the configured budget); then every candidate that works is
   timed again side by side, round-robin (``--rounds`` rounds of ``--runs``
   runs each, so background noise hits all of them alike). Regret = the
   chosen candidate's median / the best median of that side-by-side run.
   Goal <= 1.03. ``--load SHARE``: a load generator in another process keeps
   SHARE of one core busy through part 1 (the profile and the side-by-side
   timing), so the choice is made and judged under the same foreign load
   (issue 13 found 1.43 and 1.56 on a busy machine).
2. Warm start: a fresh manager (as after a restart) configures three model
   instances (nanodet, mobilenet_v2, and nanodet again for a second camera)
   from the profile cache: choice + session load. Goal < 1 s.

Written through benchlib: ``backend_selection.csv`` (every candidate's
side-by-side times) / ``.md`` (the regret per model), and
``backend_selection_warm_start.*``.
"""

import argparse
import os
import pathlib
import tempfile
import time

import benchlib
from edge_infer import paths
from edge_infer.backends.manager import BackendManager, load_config
from edge_infer.core.model import Model
from edge_infer.core.registry import load_registry
from selection_under_load import Load


def side_by_side(spec, model_path, backends, rounds: int, runs: int) -> dict:
    """Return {backend name: [ms, ...]} timed round-robin on one real frame.

    Each timed step is a frame's cost up to the decode: the CPU preprocessing
    of the frame into the input kind the session takes, then the run (a
    '+pre' candidate does part of the preprocessing inside its run).
    """
    from edge_infer.backends.measure.profiling import calibration_frames
    from edge_infer.core.backend import input_kind, open_session
    from edge_infer.core.preprocess import Preprocessor
    frame = calibration_frames(1)[0][0]
    sessions = {b.name: open_session(b, model_path, spec.input_spec) for b in backends}
    kinds = {input_kind(s) for s in sessions.values()}
    pres = {k: Preprocessor(spec.input_spec, k) for k in kinds}

    def step(sess):
        sess.run(pres[input_kind(sess)](frame)[0])

    for s in sessions.values():
        step(s)
        step(s)
    times = {n: [] for n in sessions}
    order = list(sessions)
    # Blocks of ``runs`` per candidate, the order rotating each round so every
    # candidate follows each other one. (Interleaving single runs was tried: the
    # thread pools of OpenBLAS and OpenCV keep spinning after a call and slowed
    # the next library's run up to 14x, measuring the neighbour, not the candidate.)
    for r in range(rounds):
        k = r % len(order)
        for name in order[k:] + order[:k]:
            step(sessions[name])        # one warm-up run after the previous library
            for _ in range(runs):
                t = time.perf_counter()
                step(sessions[name])
                times[name].append((time.perf_counter() - t) * 1e3)
    for s in sessions.values():
        s.close()
    return times


def import_seconds() -> float:
    """Return the import time of the inference libraries in a fresh interpreter."""
    import subprocess
    import sys
    code = ('import time; t = time.perf_counter(); import onnxruntime, cv2, onnx; '
            'cv2.ocl.haveOpenCL(); print(time.perf_counter() - t)')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Run both benchmarks; print and save their tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--runs', type=int, default=10)
    ap.add_argument('--models', nargs='*', default=['nanodet', 'mobilenet_v2'])
    ap.add_argument('--load', type=float, default=0.0,
                    help='share of one core a foreign process keeps busy during part 1')
    benchlib.common_args(ap)
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.runs = min(args.rounds, 2), min(args.runs, 3)
        args.models = args.models[:1]
    res = benchlib.Results('backend_selection', 'Backend manager: selection regret',
                           'issue 13 (regret <= 1.03)', args.machine, args.out)
    warm = benchlib.Results('backend_selection_warm_start', 'Backend manager: warm-start '
                            'configure time', 'issue 13 (< 1 s)', args.machine, args.out)
    import_s = import_seconds()
    reg = load_registry(paths.config_dir() / 'models.yaml')
    cache = pathlib.Path(tempfile.mkdtemp(prefix='edge_infer_bench_'))
    config = load_config()
    print(f'profile cache for this run: {cache}')
    load = Load()
    load.run_at(args.load)
    said = (f'selection regret (objective latency), foreign load {args.load:.0%} of a core '
            f'(load average {os.getloadavg()[0]:.2f} before)')
    print(f'\n## 1. {said}\n')
    res.notes.append(said + f'; {args.rounds} rounds of {args.runs} runs per candidate, '
                     'median (min, max) ms; regret = chosen median / best median')
    print('| model | chosen | chosen p50 ms | best side-by-side | best p50 ms | regret |')
    print('|---|---|---|---|---|---|')
    regrets, whys, md = [], [], []
    try:
        for name in args.models:
            spec = reg[name]
            path = paths.models_dir() / spec.file
            mgr = BackendManager(cache, config=config, log=lambda s: None)
            backend, run = mgr.choose(spec, path, use_cache=False)
            ok = [r.backend for r in run.results if r.status == 'ok']
            by_name = {b.name: b for b in mgr.candidates(spec, path)}
            times = side_by_side(spec, path, [by_name[n] for n in ok], args.rounds, args.runs)
            stat = {n: benchlib.summary(v) for n, v in times.items()}
            med = {n: st['median'] for n, st in stat.items()}
            best = min(med, key=med.get)
            regret = med[run.chosen] / med[best]
            regrets.append(regret)
            print(f'| {name} | {run.chosen} | {med[run.chosen]:.2f} | {best} | {med[best]:.2f} | '
                  f'{regret:.3f} |')
            md.append({'model': name, 'chosen': run.chosen, 'chosen_ms': med[run.chosen],
                       'best': best, 'best_ms': med[best], 'regret': f'{regret:.3f}'})
            for n in sorted(med, key=med.get):
                lo, hi = stat[n]['min'], stat[n]['max']
                print(f'|   | {n} |  {med[n]:.2f} (min {lo:.2f}, max {hi:.2f}) | | | |')
                res.add(model=name, candidate=n, ms_median=med[n], ms_min=lo, ms_max=hi,
                        runs=stat[n]['n'], chosen=n == run.chosen, best=n == best,
                        regret=med[n] / med[best], load=args.load)
            whys.append(f'{name}: {run.why}')
    finally:
        load.run_at(0.0)     # the generator must not outlive the bench
    print('\nwhy (the profile):\n' + '\n'.join(f'- {w}' for w in whys))
    print(f'\nworst regret {max(regrets):.3f} (goal <= 1.03)')
    res.notes += [f'why (the profile): {w}' for w in whys]
    res.notes.append(f'worst regret {max(regrets):.3f} (goal <= 1.03)')
    res.write(['model', 'chosen', 'chosen_ms', 'best', 'best_ms', 'regret'],
              ['model', 'chosen', 'chosen p50 ms', 'best side-by-side', 'best p50 ms',
               'regret'], md_rows=md)

    print('\n## 2. warm start: three model instances from the cache\n')
    instances = ['nanodet', 'mobilenet_v2', 'nanodet']
    mgr = BackendManager(cache, config=config, log=lambda s: None)   # a restart
    print(f'(library imports, paid once per process before any configure: '
          f'{import_s * 1e3:.0f} ms in a fresh interpreter)')
    t0 = time.perf_counter()
    rows = []
    for name in instances:
        spec = reg[name]
        t = time.perf_counter()
        backend, run = mgr.choose(spec, paths.models_dir() / spec.file)
        t_choose = time.perf_counter() - t
        model = Model(spec, backend, paths.models_dir(), verify_checksum=True)
        rows.append((name, backend.name, t_choose * 1e3, (time.perf_counter() - t) * 1e3,
                     all(run.from_cache.get(r.backend, False) for r in run.results
                         if r.status == 'ok')))
        model.close()
    total = time.perf_counter() - t0
    print('| model | backend | choose ms | choose + load ms | all from cache |')
    print('|---|---|---|---|---|')
    for r in rows:
        print(f'| {r[0]} | {r[1]} | {r[2]:.1f} | {r[3]:.1f} | {r[4]} |')
        warm.add(model=r[0], backend=r[1], choose_ms=r[2], choose_load_ms=r[3],
                 all_from_cache=r[4])
    print(f'\nthree instances configured in {total:.3f} s (goal < 1 s)')
    warm.notes.append(f'a fresh manager (a restart) from the profile cache; library imports, '
                      f'paid once per process before any configure: {import_s * 1e3:.0f} ms in '
                      'a fresh interpreter')
    warm.notes.append(f'three instances configured in {total:.3f} s (goal < 1 s)')
    warm.write(['model', 'backend', 'choose_ms', 'choose_load_ms', 'all_from_cache'],
               ['model', 'backend', 'choose ms', 'choose + load ms', 'all from cache'])


if __name__ == '__main__':
    main()
