# Copyright 2026 edge_infer contributors. Apache-2.0.
"""GPU check for an NVIDIA box (Jetson or desktop): probe, then run experiments 2 and 4.

    ./run.sh exec python bench/gpu_check.py [--machine NAME] [--quick] [--probe-only]

Needs a GPU build of ONNX Runtime in the environment (``pip install
onnxruntime-gpu`` on x86, NVIDIA's Jetson wheel on a Jetson; not part of the
default set-up, whose CPU wheel has no CUDA provider) and, for mapped
zero-copy buffers, pycuda. It writes bench/results/<machine>/gpu_check.md:

1. nvidia-smi's view of the GPU (or why it is absent);
2. every candidate of the backend manager whose device is not the CPU (ONNX
   Runtime CUDA and TensorRT providers, OpenCV DNN CUDA/OpenCL): the probe's
   verdict, i.e. a small conv net run on it and compared with ORT CPU, a
   provider that silently falls back to the CPU counted as unavailable;
3. pycuda: import, device name, and mapped pinned memory (the zero-copy path
   the shared executor uses), with the reason when absent;
4. the shared executor's device choice;
then runs experiment 2 (every model on every backend) and experiment 4
(zero-copy vs copy) through bench/run.py, so their tables land beside it.
Exit status 0 when the checks ran (whatever they found); 1 when an
experiment failed.
"""

import argparse
import pathlib
import subprocess
import sys
import tempfile

import benchlib


def nvidia_smi() -> str:
    """Return nvidia-smi's GPU list and driver, or why it is not there."""
    try:
        out = subprocess.run(['nvidia-smi', '--query-gpu=name,driver_version,memory.total',
                              '--format=csv,noheader'], capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f'nvidia-smi not runnable: {exc}'
    return (out.stdout.strip() or out.stderr.strip() or f'exit {out.returncode}')


def backend_probes() -> list:
    """Return (candidate, available, reason) for every non-CPU candidate."""
    from edge_infer.backends.manager import BackendManager
    from edge_infer.backends.measure.profiling import probe_backend
    cache = pathlib.Path(tempfile.mkdtemp(prefix='edge_infer_gpu_check_'))
    mgr = BackendManager(cache, log=lambda s: None)
    out = []
    for b in mgr.candidates():
        if b.device == 'cpu':
            continue
        try:
            ok, why = probe_backend(b, cache)
        except Exception as exc:  # a broken driver must not stop the report
            ok, why = False, f'probe raised {type(exc).__name__}: {exc}'
        out.append((b.name, ok, why))
    return out


def pycuda_check() -> tuple:
    """Return (ok, detail) for pycuda and mapped pinned memory."""
    from edge_infer.executor.buffers import CudaMappedBuffers
    try:
        import pycuda  # noqa: F401
    except ImportError as exc:
        return False, f'pycuda not importable ({exc}); pip install pycuda on the GPU machine'
    ok, why = CudaMappedBuffers().available()
    return ok, why


def main(argv=None) -> int:
    """Probe, write gpu_check.md, run experiments 2 and 4."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--probe-only', action='store_true', help='skip experiments 2 and 4')
    benchlib.common_args(ap)
    args = ap.parse_args(argv)
    import onnxruntime as ort
    machine = args.machine or benchlib.machine_slug()
    out = pathlib.Path(args.out) if args.out else benchlib.BENCH_DIR / 'results' / machine
    lines = ['# GPU check', '', '```', benchlib.Results.command(), '```', '',
             ', '.join(f'{k}: {v}' for k, v in benchlib.machine_record().items()), '',
             f'onnxruntime {ort.__version__}, providers: '
             f'{", ".join(ort.get_available_providers())}', '',
             f'nvidia-smi: {nvidia_smi()}', '', '| candidate | available | probe |',
             '|---|---|---|']
    probes = backend_probes()
    for name, ok, why in probes:
        lines.append(f'| {name} | {"yes" if ok else "no"} | {why} |')
    ok, why = pycuda_check()
    lines += ['', f'pycuda mapped pinned memory: {"yes" if ok else "no"}: {why}']
    from edge_infer.executor.core import default_devices
    said = []
    devices = default_devices(log=said.append)
    lines += ['', 'shared executor: ' + '; '.join(said) + ' -> '
              + ', '.join(f'{n}={p}' for n, _, p in devices)]
    if not any(ok for _, ok, _ in probes):
        lines += ['', 'No GPU candidate works here: experiments 2 and 4 '
                  + ('(not run: --probe-only) would run' if args.probe_only else 'ran')
                  + ' on the CPU only. Install a GPU build of ONNX Runtime (and pycuda) '
                  'and run again.']
    out.mkdir(parents=True, exist_ok=True)
    (out / 'gpu_check.md').write_text('\n'.join(lines) + '\n')
    print('\n'.join(lines))
    print(f'wrote {out / "gpu_check.md"}')
    if args.probe_only:
        return 0
    run = [sys.executable, str(benchlib.BENCH_DIR / 'run.py'), '2', '4', '--machine', machine,
           '--out', str(out)] + (['--quick'] if args.quick else [])
    return 0 if subprocess.call(run) == 0 else 1


if __name__ == '__main__':
    raise SystemExit(main())
