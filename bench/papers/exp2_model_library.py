# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Experiment 2: every bundled model on every available backend, latency and energy.

    ./run.sh exec python bench/papers/exp2_model_library.py [--rounds 7] [--runs 10]
        [--models nanodet mobilenet_v2] [--baseline numpy-blas/cpu] [--quick]

Reproduces Lee & Shin 2019, Fig. 5 and Table 2: per model, the
speed-up and energy gain of each library over a baseline, and which library is
fastest and which is most energy-efficient (they may differ).

Method:
1. The backend manager profiles the model from scratch (no cache), as a node
   does at configure: every candidate of config/backends.yaml is probed (the
   unavailable ones are listed with the reason), timed, and checked for
   accuracy against ONNX Runtime CPU fp32 on real frames.
2. Every candidate that runs (accepted or rejected for accuracy) is then timed
   again side by side: ``--rounds`` rounds, in each round every candidate runs
   ``--runs`` times in a row (order rotating between rounds), on one real
   frame; each timed step is the CPU preprocessing of that frame into the
   input kind the candidate takes, then its run (the manager ranks on the
   same frame cost; a ``+pre`` candidate preprocesses in its graph).
   Per round: the median latency and the energy of the round's window
   divided by its runs (from the process power meter). Reported: the median
   over rounds, with min and max.
3. Baseline (``--baseline``): numpy-blas/cpu by default, i.e. im2col + OpenBLAS
   SGEMM on the CPU, which is what Lee & Shin 2019's Caffe+OpenBLAS baseline does.
   The ratio to ONNX Runtime on one CPU thread is given too.
Fastest / most energy-efficient are picked among the candidates that passed
the accuracy check; CHOSEN marks the backend manager's own choice (objective
latency, from its profile in step 1, as a node with ``backend: auto`` makes
it), which the side-by-side rounds may rank differently.
"""

import argparse
import pathlib
import statistics
import tempfile
import time

import benchlib
from edge_infer import paths
from edge_infer.backends.manager import BackendManager, load_config
from edge_infer.backends.measure.profiling import calibration_frames
from edge_infer.core.backend import input_kind, open_session
from edge_infer.core.preprocess import INPUT_KINDS, Preprocessor
from edge_infer.core.registry import load_registry
import numpy as np

REFERENCE = 'onnxruntime/cpu/t1'


def side_by_side(sessions: dict, step, rounds: int, runs: int,
                 power: benchlib.Power, slow=()) -> dict:
    """Return {name: {'ms': [round medians], 'j': [joules per run per round]}}.

    ``step(session)``: one frame up to the decode (CPU preprocessing into the
    session's input kind, then the run).

    ``slow``: candidates the manager cut short (clearly slower than the best,
    e.g. Vulkan on a software device): timed in the first round only, 2 runs.
    """
    out = {n: {'ms': [], 'j': []} for n in sessions}
    order = list(sessions)
    for r in range(rounds):
        k = r % len(order)
        for name in order[k:] + order[:k]:
            if name in slow and r > 0:
                continue
            step(sessions[name])        # one warm-up after the previous library
            times = []
            t0 = time.monotonic()
            for _ in range(2 if name in slow else runs):
                t = time.perf_counter()
                step(sessions[name])
                times.append((time.perf_counter() - t) * 1e3)
            t1 = time.monotonic()
            out[name]['ms'].append(statistics.median(times))
            out[name]['j'].append(power.joules(t0, t1) / runs)
    return out


def measure_model(name: str, spec, args, power: benchlib.Power, res: benchlib.Results,
                  cache: pathlib.Path) -> None:
    """Profile one model, time its working candidates side by side, add the rows."""
    path = paths.models_dir() / spec.file
    config = load_config()
    if args.quick:
        config['budget_s'] = 0.3
    mgr = BackendManager(cache, config=config, log=lambda s: None, meter=power.meter)
    _, run = mgr.choose(spec, path, use_cache=False)
    by_name = {b.name: b for b in mgr.candidates(spec, path)}
    working = [r for r in run.results if r.status in ('ok', 'rejected') and r.backend in by_name]
    frame = calibration_frames(1)[0][0]
    pres = {k: Preprocessor(spec.input_spec, k) for k in INPUT_KINDS}

    def step(sess):
        sess.run(pres[input_kind(sess)](frame)[0])

    sessions = {}
    for r in working:
        try:
            sessions[r.backend] = open_session(by_name[r.backend], path, spec.input_spec)
        except Exception as exc:  # a variant file may be missing: say so, go on
            r.status, r.reason = 'failed', f'load for the side-by-side run: {exc}'
    slow = {r.backend for r in working if r.cut_short and r.backend != args.baseline}
    meas = side_by_side(sessions, step, args.rounds, args.runs, power, slow)
    for s in sessions.values():
        s.close()
    rows = []
    for r in run.results:
        m = meas.get(r.backend)
        lat = benchlib.summary(m['ms']) if m else benchlib.summary([])
        en = benchlib.summary(m['j']) if m else benchlib.summary([])
        rows.append(res.add(
            model=name, backend=r.backend, library=r.library, device=r.device,
            precision=r.precision, status=r.status,
            accuracy=r.accuracy, ms_median=lat['median'], ms_min=lat['min'], ms_max=lat['max'],
            mj_median=1e3 * en['median'], mj_min=1e3 * en['min'], mj_max=1e3 * en['max'],
            rounds=lat['n'], reason=(r.reason or r.accuracy_detail)[:160]))
    base = next((row for row in rows if row['backend'] == args.baseline and row['rounds']),
                None)
    ref = next((row for row in rows if row['backend'] == REFERENCE and row['rounds']), None)
    ok = [row for row in rows if row['status'] == 'ok' and row['rounds']]
    fastest = min(ok, key=lambda row: row['ms_median']) if ok else None
    greenest = min(ok, key=lambda row: row['mj_median']) if ok else None
    for row in rows:
        for key, other in (('speedup_vs_baseline', base), ('speedup_vs_ort_t1', ref)):
            row[key] = (other['ms_median'] / row['ms_median']
                        if other and row['rounds'] else float('nan'))
        row['energy_gain_vs_baseline'] = (base['mj_median'] / row['mj_median']
                                          if base and row['rounds'] else float('nan'))
        marks = ['CHOSEN'] if row['backend'] == run.chosen else []
        if row is fastest:
            marks.append('FASTEST')
        if row is greenest:
            marks.append('LEAST ENERGY')
        if row['status'] == 'rejected':
            marks.append('rejected: accuracy')
        if row['backend'] in slow:
            marks.append('cut short by the manager: 2 runs, 1 round')
        if not row['rounds']:
            marks.append(f"{row['status']}: {row['reason'][:100]}")
        row['mark'] = ', '.join(marks)
    res.note(f'{name}: the manager chose {run.chosen or "nothing"} ({run.why[:140]})')
    if fastest and base:
        res.note(f'{name}: fastest {fastest["backend"]} {fastest["ms_median"]:.2f} ms '
                 f'= {fastest["speedup_vs_baseline"]:.2f}x the baseline {args.baseline} '
                 f'({base["ms_median"]:.2f} ms); least energy {greenest["backend"]} '
                 f'{greenest["mj_median"]:.1f} mJ = {greenest["energy_gain_vs_baseline"]:.2f}x '
                 f'the baseline\'s {base["mj_median"]:.1f} mJ'
                 + ('' if greenest is fastest else ' (fastest and least energy DIFFER)'))
    timed = [row for row in rows if row['rounds'] and row['status'] == 'ok']
    if timed:       # Lee & Shin 2019's "library choice" span: slowest / fastest accepted candidate
        worst = max(timed, key=lambda row: row['ms_median'])
        best = min(timed, key=lambda row: row['ms_median'])
        res.note(f'{name}: slowest / fastest accepted candidate = {worst["backend"]} / '
                 f'{best["backend"]}: {worst["ms_median"] / best["ms_median"]:.1f}x')
        faster = [row for row in rows if row['rounds'] and row['status'] != 'ok'
                  and row['ms_median'] < best['ms_median']]
        for row in faster:
            res.note(f'{name}: {row["backend"]} was faster ({row["ms_median"]:.2f} ms) but is '
                     f'{row["status"]} ({row["reason"][:90]}), so it is not counted')
    down = [row for row in rows if row['status'] == 'unavailable']
    if down:
        res.note(f'{name}: unavailable here: ' + '; '.join(
            f'{row["backend"]} ({row["reason"][:90]})' for row in down))


def plot(plt, rows) -> None:
    """Latency and energy per backend, one row of panels per model."""
    models = list(dict.fromkeys(r['model'] for r in rows))
    fig, axes = plt.subplots(len(models), 2, figsize=(12, 3.6 * len(models)), squeeze=False)
    for i, m in enumerate(models):
        rs = sorted([r for r in rows if r['model'] == m and r['rounds']],
                    key=lambda r: r['ms_median'])
        names = [r['backend'] for r in rs]
        y = np.arange(len(rs))
        colors = ['tab:green' if r['status'] == 'ok' else 'tab:gray' for r in rs]
        panels = (('ms', 'latency, ms'), ('mj', 'energy per inference, mJ'))
        for j, (key, unit) in enumerate(panels):
            ax = axes[i][j]
            med = np.array([r[f'{key}_median'] for r in rs])
            lo = med - np.array([r[f'{key}_min'] for r in rs])
            hi = np.array([r[f'{key}_max'] for r in rs]) - med
            ax.barh(y, med, xerr=[lo, hi], color=colors)
            ax.set_yticks(y, names, fontsize=7)
            ax.invert_yaxis()
            ax.set_xlabel(unit + ' (median, min-max over rounds)')
            ax.set_title(f'{m} (gray: rejected for accuracy)', fontsize=8)


def main(argv=None) -> int:
    """Run the experiment and write its outputs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--rounds', type=int, default=7)
    ap.add_argument('--runs', type=int, default=10)
    ap.add_argument('--models', nargs='*', default=None, help='default: every bundled model')
    ap.add_argument('--baseline', default='numpy-blas/cpu')
    ap.add_argument('--no-energy', action='store_true', help='do not start the power meter')
    benchlib.common_args(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.runs = 2, 3
    reg = load_registry(paths.config_dir() / 'models.yaml')
    names = args.models or sorted(reg)
    res = benchlib.Results('exp2_model_library', 'Model x library: latency and energy',
                           'Lee & Shin 2019 Fig. 5 and Table 2', args.machine,
                           args.out)
    power = benchlib.Power(enabled=not args.no_energy)
    res.power = power.source
    cache = pathlib.Path(tempfile.mkdtemp(prefix='edge_infer_exp2_'))
    try:
        for name in names:
            print(f'[exp2] {name}: profiling every candidate, then side by side ...')
            measure_model(name, reg[name], args, power, res, cache)
    finally:
        power.close()
    res.note(f'Baseline {args.baseline}; latency = median over {args.rounds} rounds of the '
             f"round's median of {args.runs} runs (min-max over rounds); energy = the "
             f"round window's energy / runs, power source: {res.power}.")
    res.write(['model', 'backend', 'status', 'accuracy', 'ms_median', 'ms_min', 'ms_max',
               'speedup_vs_baseline', 'speedup_vs_ort_t1', 'mj_median',
               'energy_gain_vs_baseline', 'mark'],
              ['model', 'backend', 'status', 'accuracy', 'ms p50', 'min', 'max',
               'speed-up vs baseline', 'vs ORT t1', 'mJ/inference', 'energy gain', ''],
              plot=plot,
              md_rows=[r for r in res.rows if r['rounds']]
              + [r for r in res.rows if not r['rounds']])
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
