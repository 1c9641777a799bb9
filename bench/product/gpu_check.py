# Copyright 2026 edge_infer contributors. Apache-2.0.
"""GPU check on an NVIDIA machine: probes, NVML energy, experiments 5 and 4 on the GPU, profiles.

    ./run.sh exec python bench/product/gpu_check.py [--quick] [--out DIR] [--deadline-s 420]

Needs, beside edge_infer's own set-up: a CUDA build of PyTorch and
``onnx2torch`` (the ``torch/cuda:0`` candidates and the executor's
``torch-cuda`` device), ``nvidia-ml-py`` (NVML energy), optionally CuPy (the
background GPU load; PyTorch otherwise) and, for ncnn on the GPU, ncnn, the
pnnx binary and a Vulkan loader (``bench/product/gpu_device.sh`` unpacks them on a
bare machine). One file, ``gpu_check.md``, one section per step, written
after each step, so a run cut short keeps what it measured:

1. machine: nvidia-smi, torch and CUDA, NVML, Vulkan devices, pinned memory;
2. ``edge_infer backends``: every candidate's probe verdict;
3. energy per inference from NVML's energy counter (mJ since the driver
   loaded; board power of the GPU only, not the CPU's) for each GPU
   candidate and ONNX Runtime on the CPU, in interleaved rounds, with the
   idle draw measured before and subtracted in a second column;
4. experiment 5 (Kim 2021): three model instances (nanodet, mobilenet_v2,
   nanodet) on the shared executor, accelerator = PyTorch CUDA, at 0 / 40 /
   60 % background GPU load from a duty-cycled kernel loop in another
   process (CuPy, or PyTorch), per policy; plus each instance whole on ONNX
   Runtime CPU as the no-GPU reference;
5. experiment 4 (Lee & Kang 2016): each model's segments chained on the GPU
   with the kernels reading pinned host memory in place ("mapped") vs one
   host-to-device and device-to-host copy per segment ("pinned + copy"), vs
   the whole model on the GPU with one copy in and out; interleaved passes;
6. ``edge_infer profile`` of each model with ``--energy``, objective latency
   then energy: the measured choice with the GPU candidates among the rest.

Where no GPU is usable (this project's CI, a laptop) steps 3-5 say why, in
one line each, and the script still exits 0. Exit 1 only when a step
raised. ``--deadline-s`` skips the steps that would start after it (said in
the file). Figures from a data-centre GPU are NOT a Jetson's: the file says
which GPU measured them.
"""

import argparse
import os
import pathlib
import subprocess
import sys
import time
import traceback

import benchlib
import gpu_parts as gp

MODELS = ('nanodet', 'mobilenet_v2')


class Report:
    """gpu_check.md, rewritten after every step."""

    def __init__(self, path: pathlib.Path, head: list):
        self.path, self.lines, self.failed = path, list(head), 0

    def section(self, title: str, lines: list, took_s: float) -> None:
        self.lines += ['', f'## {title}', '', f'(took {took_s:.1f} s)', ''] + lines
        self.path.write_text('\n'.join(self.lines) + '\n')
        print('\n'.join([f'## {title}'] + lines[-40:]), flush=True)


def cli(args: list, timeout: float) -> list:
    """Run ``edge_infer <args>`` (this checkout's) and return its output as a code block."""
    cmd = [sys.executable, '-m', 'edge_infer.cli'] + args
    t = time.monotonic()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        text, rc = out.stdout + out.stderr, out.returncode
    except subprocess.TimeoutExpired as exc:
        text, rc = ((exc.stdout or b'').decode(errors='replace') if isinstance(
            exc.stdout, bytes) else (exc.stdout or '')), f'timeout after {timeout:.0f} s'
    return ['```', '$ edge_infer ' + ' '.join(args),
            *[ln for ln in text.splitlines() if ln.strip()][-60:],
            f'(exit {rc}, {time.monotonic() - t:.1f} s)', '```']


def step_machine(args) -> list:
    return gp.machine_lines()


def step_backends(args) -> list:
    return cli(['backends'], 300)


def step_energy(args) -> list:
    return gp.energy_lines(MODELS, seconds=0.5 if args.quick else 1.5,
                           rounds=2 if args.quick else 3)


def step_exp5(args) -> list:
    return gp.exp5_lines(loads=args.loads, frames=4 if args.quick else 20,
                         repeats=1 if args.quick else 3)


def step_exp4(args) -> list:
    return gp.exp4_lines(MODELS, frames=4 if args.quick else 20,
                         repeats=2 if args.quick else 5, seconds=0.2 if args.quick else 1.0)


def step_profiles(args) -> list:
    lines = []
    budget = ['--budget', '0.3'] if args.quick else []
    for model in MODELS:
        for objective in ('latency', 'energy'):
            lines += cli(['profile', model, '--energy', '--objective', objective,
                          '--png', os.devnull] + budget, 400)
    return lines


STEPS = [('Machine', step_machine), ('Candidates: edge_infer backends', step_backends),
         ('Energy per inference from NVML', step_energy),
         ('Experiment 5 on the GPU: several DNNs under background GPU load', step_exp5),
         ('Experiment 4 on the GPU: mapped pinned memory vs copies', step_exp4),
         ('The measured choice: edge_infer profile', step_profiles)]


def main(argv=None) -> int:
    """Run every step within the deadline; write gpu_check.md after each."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--deadline-s', type=float, default=480.0,
                    help='start no step after this many seconds')
    ap.add_argument('--loads', type=float, nargs='*', default=[0.0, 0.4, 0.6],
                    help='background GPU duty cycles for experiment 5')
    ap.add_argument('--steps', nargs='*', type=int, default=list(range(1, len(STEPS) + 1)),
                    help='which steps (1-based), default all')
    benchlib.common_args(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.loads = [0.0, 0.6]
    machine = args.machine or benchlib.machine_slug()
    out = pathlib.Path(args.out) if args.out else benchlib.BENCH_DIR / 'results' / machine
    out.mkdir(parents=True, exist_ok=True)
    head = ['# GPU check', '', '```', benchlib.Results.command(), '```', '',
            ', '.join(f'{k}: {v}' for k, v in benchlib.machine_record().items()), '',
            f'GPU: {gp.gpu_name()}. A lent data-centre GPU is not a Jetson: its figures show '
            'that the GPU paths run and how they rank there, not what a board does.',
            '' if not args.quick else '\n**--quick: a smoke run; figures not for publishing.**']
    report = Report(out / 'gpu_check.md', head)
    t0 = time.monotonic()
    for i, (title, fn) in enumerate(STEPS, 1):
        if i not in args.steps:
            continue
        if time.monotonic() - t0 > args.deadline_s:
            report.section(title, [f'not run: the deadline ({args.deadline_s:.0f} s) had '
                                   'passed'], 0.0)
            continue
        t = time.monotonic()
        try:
            lines = fn(args)
        except Exception as exc:  # one step's failure must not lose the others' figures
            report.failed += 1
            lines = [f'**failed**: {type(exc).__name__}: {exc}', '', '```',
                     *traceback.format_exc().splitlines()[-12:], '```']
        report.section(title, lines, time.monotonic() - t)
    print(f'wrote {report.path} ({time.monotonic() - t0:.0f} s)')
    return 1 if report.failed else 0


if __name__ == '__main__':
    raise SystemExit(main())
