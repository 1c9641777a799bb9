# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Experiment 5: several DNNs on the shared executor, per policy and accelerator load.

    ./run.sh exec python bench/papers/exp5_multi_dnn.py [--frames 30] [--repeats 3]
        [--loads 0 0.4 0.6] [--quick]

Reproduces Kim 2021, Figs. 5-7: several DNNs sharing one
accelerator whose queue also serves another application's kernels; conv
layers on the accelerator and light layers on the CPU, vs accelerator-only.

Two model sets, each model instance fed from its own thread with real bag
frames: 'identical' (nanodet x 3, three cameras) and 'mixed' (nanodet,
mobilenet_v2, nanodet). For each background load on the accelerator (a load
generator keeps it busy that share of the time) it runs: naive (one
whole-model ONNX Runtime session per instance, default threads) and the
executor's policies (accelerator-only, by-layer-type, cost-model), and
'chosen': each instance whole on the backend the backend manager chose for
its model (one thread, float input, as a container with a thread budget of
one runs it). The executor's segments run on the libraries of the manager's
accepted candidates (executor/choice.py; ``--segments ort`` for ONNX
Runtime only, as before). Each cell
``--repeats`` times, median with min and max. Beside each measured row: the
schedule simulator's prediction from this machine's measured segment costs,
and the simulator on the example Jetson AGX Xavier profile
(config/executor_profiles/jetson_xavier_example.yaml: illustrative figures, NOT
a measurement) so the table can be read against Kim 2021's board.

On a machine without a GPU the 'accelerator' is one CPU core (one worker
thread) and 'cpu' the other: the scheduling is real, the device is not.
"""

import argparse
import time

import benchlib
from edge_infer import paths
from edge_infer.executor.core import POLICIES, SharedExecutor
from edge_infer.testing.schedule import from_executor, load_profile, simulate
import executor_policies as ep


def managers_choice(names) -> tuple:
    """Return ({model: chosen Backend}, {model: [SegmentLibrary]}, {model: why})."""
    from edge_infer.backends.manager import BackendManager, load_config
    from edge_infer.core.registry import load_registry
    from edge_infer.executor.segment_runners import libraries_of
    cfg = load_config()
    cfg.update(openvino_graph_preprocessing=False, ort_threads=[1], openvino_threads=[1],
               ncnn_threads=[1], variant_threads=1)
    mgr = BackendManager(paths.data_home() / 'cache', config=cfg, log=lambda s: None)
    reg = load_registry(paths.config_dir() / 'models.yaml')
    chosen, libs, why = {}, {}, {}
    for name in names:
        backend, run = mgr.choose(reg[name], paths.models_dir() / reg[name].file)
        ok = sorted((r for r in run.results if r.status == 'ok'), key=lambda r: r.frame_ms)
        chosen[name], libs[name], why[name] = backend, libraries_of(ok, threads=1), run.why
    return chosen, libs, why


SETS = {
    'identical': [('nanodet#1', 'nanodet'), ('nanodet#2', 'nanodet'), ('nanodet#3', 'nanodet')],
    'mixed': [('nanodet#1', 'nanodet'), ('mobilenet_v2', 'mobilenet_v2'),
              ('nanodet#2', 'nanodet')],
}


def simulated(instances, frames: int, loads) -> dict:
    """Return {(load, policy): result} from this machine's measured segment costs."""
    ex = SharedExecutor('cost-model', log=lambda s: None)
    for inst, name in instances:
        ex.add_model(inst, paths.models_dir() / f'{name}.onnx')
    models = from_executor(ex)
    ex.close()
    return {(load, pol): simulate(models, pol, frames=frames, load=load, transfer_ms=0.0)
            for load in loads for pol in POLICIES}


def example_board(frames: int, loads) -> tuple:
    """Return (board name, {(load, policy): result}) for the example Jetson profile."""
    prof = load_profile(paths.config_dir() / 'executor_profiles' / 'jetson_xavier_example.yaml')
    return prof['board'], {(load, pol): simulate(prof['models'], pol, frames=frames, load=load,
                                                 transfer_ms=prof['transfer_ms'])
                           for load in loads for pol in POLICIES}


def main(argv=None) -> int:
    """Run the grid and write the outputs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--frames', type=int, default=30, help='frames per model instance')
    ap.add_argument('--loads', type=float, nargs='*', default=[0.0, 0.4, 0.6])
    ap.add_argument('--repeats', type=int, default=3, help='runs per cell (median reported)')
    ap.add_argument('--sets', nargs='*', default=list(SETS), choices=list(SETS))
    ap.add_argument('--segments', choices=['manager', 'ort'], default='manager',
                    help="segment libraries: the backend manager's accepted candidates, or ORT")
    benchlib.common_args(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.frames, args.repeats, args.loads = 6, 1, [0.0, 0.6]
    res = benchlib.Results('exp5_multi_dnn', 'Several DNNs on the shared executor',
                           'Kim 2021 Figs. 5-7', args.machine, args.out)
    power = benchlib.Power()
    res.power = power.source
    board, jetson = example_board(100, args.loads)
    names = sorted({n for s in args.sets for _, n in SETS[s]})
    chosen, libs, why = managers_choice(names)
    for name in names:
        seg = (', '.join(x.name for x in libs[name]) if args.segments == 'manager'
               else 'onnxruntime/t1')
        res.note(f'{name}: chosen {chosen[name].name} ({why[name][:160]}); executor segment '
                 f'libraries: {seg}')
    if args.segments == 'ort':
        libs = {}
    try:
        for set_name in args.sets:
            instances = SETS[set_name]
            tensors = ep.bag_tensors(args.frames, instances)
            refs = ep.references(tensors)
            sim = simulated(instances, 100, args.loads)
            n_frames = args.frames * len(instances)
            for load in args.loads:
                cells = {}
                for pol in ['chosen', 'naive'] + list(POLICIES):
                    runs = []
                    for _ in range(args.repeats):
                        t0 = time.monotonic()
                        if pol in ('naive', 'chosen'):
                            r = ep.run_naive(tensors, refs, load, instances,
                                             chosen if pol == 'chosen' else None)
                        else:
                            r = ep.run_policy(pol, tensors, refs, load, instances, libs)
                        r['mj'] = 1e3 * power.joules(t0, time.monotonic()) / n_frames
                        runs.append(r)
                    cells[pol] = runs
                    print(f'[exp5] {set_name} load {load:.0%} {pol}: '
                          + ', '.join(f"{r['fps']:.1f}" for r in runs) + ' frames/s')
                base = benchlib.summary([r['fps'] for r in cells['accelerator-only']])['median']
                naive = benchlib.summary([r['fps'] for r in cells['naive']])['median']
                for pol, runs in cells.items():
                    fps = benchlib.summary([r['fps'] for r in runs])
                    p95 = benchlib.summary([r['p95'] for r in runs])
                    mj = benchlib.summary([r['mj'] for r in runs])
                    s = sim.get((load, pol))
                    j = jetson.get((load, pol))
                    sim_base = sim[(load, 'accelerator-only')]
                    j_base = jetson[(load, 'accelerator-only')]
                    res.add(set=set_name, models=' '.join(i for i, _ in instances), load=load,
                            policy=pol, fps_median=fps['median'], fps_min=fps['min'],
                            fps_max=fps['max'], p95_ms=p95['median'], mj_per_frame=mj['median'],
                            vs_acc_only=fps['median'] / base, vs_naive=fps['median'] / naive,
                            copied_bytes=max(r['copied'] for r in runs),
                            max_rel_err=max(r['err'] for r in runs),
                            load_achieved=benchlib.summary([r['duty'] for r in runs])['median'],
                            placement=runs[-1]['placement'],
                            sim_fps=s['fps'] if s else float('nan'),
                            sim_vs_acc_only=(s['fps'] / sim_base['fps']) if s else float('nan'),
                            jetson_example_vs_acc_only=(
                                1 - j['makespan_ms'] / j_base['makespan_ms'] if j
                                else float('nan')),
                            repeats=fps['n'])
    finally:
        power.close()
    for set_name in args.sets:
        for load in args.loads:
            rows = {r['policy']: r for r in res.rows if r['set'] == set_name and r['load'] == load}
            cm, acc = rows.get('cost-model'), rows.get('accelerator-only')
            own = rows.get('chosen')
            if cm and own:
                res.note(f'{set_name}, accelerator load {load:.0%}: executor cost-model '
                         f'{cm["fps_median"]:.1f} frames/s vs each model on its own chosen '
                         f'backend {own["fps_median"]:.1f} '
                         f'({cm["fps_median"] / own["fps_median"]:.2f}x)')
            if cm and acc:
                res.note(f'{set_name}, accelerator load {load:.0%}: cost-model '
                         f'{cm["fps_median"]:.1f} frames/s vs accelerator-only '
                         f'{acc["fps_median"]:.1f} ({cm["vs_acc_only"]:.2f}x, makespan '
                         f'{1 - 1 / cm["vs_acc_only"]:.0%} shorter) and naive sessions '
                         f'({cm["vs_naive"]:.2f}x); simulator predicted '
                         f'{cm["sim_vs_acc_only"]:.2f}x')
    for set_name in args.sets:
        acc = {r['load']: r['fps_median'] for r in res.rows
               if r['set'] == set_name and r['policy'] == 'accelerator-only'}
        cm = {r['load']: r['fps_median'] for r in res.rows
              if r['set'] == set_name and r['policy'] == 'cost-model'}
        lo, hi = min(args.loads), max(args.loads)
        if lo != hi:
            res.note(f'{set_name}: slowdown from {lo:.0%} to {hi:.0%} accelerator load: '
                     f'accelerator-only {1 - acc[hi] / acc[lo]:.0%}, cost-model '
                     f'{1 - cm[hi] / cm[lo]:.0%} (Kim 2021: up to 77 % -> 17 %)')
    res.note(f'Jetson column: the simulator on {board} (example profile, NOT measured): '
             'makespan gain of each policy over accelerator-only.')
    res.note('Throughput = all frames of all instances / wall time; p95 = submit to result; '
             'mJ/frame = energy of the run window / frames (power source above; it includes the '
             'background load, which on this machine is CPU work).')

    def plot(plt, rows):
        fig, axes = plt.subplots(1, len(args.sets), figsize=(6 * len(args.sets), 4),
                                 squeeze=False)
        pols = ['chosen', 'naive'] + list(POLICIES)
        for ax, set_name in zip(axes[0], args.sets):
            w = 0.8 / len(pols)
            for k, pol in enumerate(pols):
                rs = [r for r in rows if r['set'] == set_name and r['policy'] == pol]
                xs = [args.loads.index(r['load']) + k * w for r in rs]
                med = [r['fps_median'] for r in rs]
                err = [[r['fps_median'] - r['fps_min'] for r in rs],
                       [r['fps_max'] - r['fps_median'] for r in rs]]
                ax.bar(xs, med, w, yerr=err, label=pol)
                ax.scatter(xs, [r['sim_fps'] for r in rs], marker='_', color='k', s=120,
                           zorder=3, label='simulator' if k == 0 else None)
            ax.set_xticks([i + 0.4 - w / 2 for i in range(len(args.loads))],
                          [f'{lo:.0%} load' for lo in args.loads])
            ax.set_ylabel('frames/s, all models (median, min-max)')
            ax.set_title(f'{set_name}: ' + ', '.join(m for m in dict.fromkeys(
                n for _, n in SETS[set_name])), fontsize=8)
            ax.legend(fontsize=7)

    res.write(['set', 'load', 'policy', 'fps_median', 'fps_min', 'fps_max', 'p95_ms',
               'mj_per_frame', 'vs_acc_only', 'vs_naive', 'copied_bytes', 'sim_vs_acc_only',
               'jetson_example_vs_acc_only'],
              ['set', 'accelerator load', 'policy', 'frames/s', 'min', 'max', 'p95 ms',
               'mJ/frame', 'vs accelerator-only', 'vs naive', 'bytes copied/frame',
               'simulated vs acc-only (this machine)', 'Jetson example: makespan gain'],
              plot=plot)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
