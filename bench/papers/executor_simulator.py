# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The schedule simulator's tables: the example Jetson profile, and this machine's costs.

    ./run.sh exec python bench/papers/executor_simulator.py [--profile FILE] [--frames 100]

For each background load on the accelerator (0/40/60/80 %) and each policy:
throughput, p95 latency, makespan, and the gain in makespan over
accelerator-only (Kim 2021 reports 52-71 % at 60 % GPU load on a Jetson AGX
Xavier with AlexNet/DenseNet/ResNet/VGG). Both tables go to
``executor_simulator.csv`` / ``.md`` (benchlib), a ``profile`` column apart.
Experiment 5 (exp5_multi_dnn.py) runs the same simulator beside its
measurements; this script is its stand-alone view.
"""

import argparse

import benchlib
from edge_infer import paths
from edge_infer.executor.core import SharedExecutor
from edge_infer.testing.schedule import from_executor, load_profile, POLICIES, simulate


def table(title: str, models: dict, transfer_ms: float, frames: int, loads,
          res: benchlib.Results, label: str) -> None:
    """Print one Markdown table; add its rows to ``res`` as profile ``label``."""
    print(f'### {title}\n')
    print('| accelerator load | policy | frames/s | p95 ms | makespan ms | vs accelerator-only |'
          ' segments on cpu |')
    print('|---|---|---|---|---|---|---|')
    for load in loads:
        base = None
        for pol in POLICIES:
            r = simulate(models, pol, frames=frames, load=load, transfer_ms=transfer_ms)
            base = base or r['makespan_ms']
            print(f"| {load:.0%} | {pol} | {r['fps']:.1f} | {r['p95_ms']:.1f} | "
                  f"{r['makespan_ms']:.0f} | {1 - r['makespan_ms'] / base:+.0%} | "
                  f"{r['share']['cpu']:.0%} |")
            res.add(profile=label, load=load, policy=pol, fps=r['fps'], p95_ms=r['p95_ms'],
                    makespan_ms=r['makespan_ms'], gain=1 - r['makespan_ms'] / base,
                    cpu_share=r['share']['cpu'])
    print()


def main() -> None:
    """Print and save the example profile's table and this machine's."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--profile', default=str(paths.config_dir() / 'executor_profiles' /
                                             'jetson_xavier_example.yaml'))
    ap.add_argument('--frames', type=int, default=100)
    benchlib.common_args(ap)
    args = ap.parse_args()
    frames = min(args.frames, 20) if args.quick else args.frames
    res = benchlib.Results('executor_simulator', "The schedule simulator's tables: an "
                           "example profile and this machine's costs",
                           'Kim 2021 Figs. 5-7 (simulated)', args.machine, args.out)
    loads = (0.0, 0.4, 0.6, 0.8)
    prof = load_profile(args.profile)
    table(f"{prof['board']} (example profile, NOT measured)", prof['models'],
          prof['transfer_ms'], frames, loads, res, f"{prof['board']} (example, NOT measured)")
    ex = SharedExecutor('cost-model', log=lambda s: None)
    for inst, name in (('nanodet#1', 'nanodet'), ('mobilenet_v2', 'mobilenet_v2'),
                       ('nanodet#2', 'nanodet')):
        ex.add_model(inst, paths.models_dir() / f'{name}.onnx')
    measured = from_executor(ex)
    ex.close()
    table('this machine (costs measured now; the accelerator is one CPU core)', measured, 0.0,
          frames, loads, res, 'this machine (measured)')
    res.note('this machine: segment costs measured now, the accelerator is one CPU core')
    res.note(f'{frames} frames per model; profile {benchlib.shown_path(args.profile)}; gain = '
             '1 - makespan / accelerator-only makespan at the same load; cpu share = the '
             'segments placed on the CPU')
    res.write(['profile', 'load', 'policy', 'fps', 'p95_ms', 'makespan_ms', 'gain',
               'cpu_share'],
              ['profile', 'accelerator load', 'policy', 'frames/s', 'p95 ms', 'makespan ms',
               'vs accelerator-only (makespan gain)', 'segments on cpu (share)'])


if __name__ == '__main__':
    main()
