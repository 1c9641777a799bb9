# Copyright 2026 edge_infer contributors. Apache-2.0.
"""``edge_infer arm-check``: prepare the aarch64 environment, run the workers, report.

    edge_infer arm-check [--models probe,mobilenet_v2,...] [--only PATTERN ...]
                         [--frames N] [--all-threads] [--jobs N] [--timeout S]
                         [--tolerance T] [--report FILE] [--prepare-only]

- ``--models``: ``probe`` (every candidate on the manager's probe model) and
  registry models (default: probe and every registry model);
- ``--only``: profile only the candidates whose name matches one of these
  shell patterns (e.g. ``'openvino/*' 'onnxruntime/cpu/t1'``); the probe job
  always probes every candidate;
- ``--frames``: real frames of the accuracy check (default 2: one video
  frame, one photo); ``--all-threads``: every configured thread count
  (default: one thread per library: results do not depend on it, and
  emulated timings mean nothing);
- exit status: 0 all ran; 1 a candidate crashed or failed, an fp32 output
  differs from x86 ONNX Runtime beyond ``--tolerance``, or the accuracy check
  could not run; 2 usage; 3 the emulation cannot be had here (one line says
  why: no apt-get / dpkg-deb, not x86_64, downloads failed).

Each job is one emulated process (:mod:`.worker`); up to ``--jobs`` run at
once (default: one per core). Each registry model gets a second job that
makes its fp16 / int8 variant files ahead, the way its candidates would
(the int8 calibration alone is ~45 s emulated), while the model's own job
runs the other candidates. When one dies (a native crash or ``--timeout``), the candidate it was
in is recorded as crashed and the job runs again without it. The emulated
manager keeps its profile cache in ``$EDGE_INFER_HOME/arm/profiles/<model>``:
the host's profile cache is never written. Afterwards the host runs x86 ONNX
Runtime (fp32) on every input a candidate's first run saw and compares: an
fp32 candidate passes when max |diff| <= T x max(1, max |x86 output|).
"""

import argparse
import concurrent.futures
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import threading
import time
from typing import List

from . import prepare as prep
from .report import (failures, HostReference, libraries_line, model_table, openvino_line,
                     probe_table, summarise)
from .wheels import WHEELS
from ... import paths

NOT_EMULATED = [
    'ROS 2: the ros-jazzy wheels are x86_64 only, so the nodes, the container, the '
    'executor and the DDS transport do not run here; the ROS-free core '
    '(edge_infer.core, edge_infer.backends) does',
    'GPU: qemu-user has no CUDA, OpenCL or Vulkan device; those candidates are listed '
    'unavailable with the reason, as on a board without the driver',
    'timing: every latency here is EMULATED (qemu TCG, 100-300x slower, fp16 arithmetic '
    'slower still) and meaningless for ranking; the choice made here is not the board one',
]
MAX_ATTEMPTS = 3
FAILED = 1
UNAVAILABLE = 3
EMULATION_BUDGET = {'warmup': 0, 'min_runs': 1, 'screen_s': 0.0, 'budget_s': 0.0,
                    'max_leaders': 1}
ONE_THREAD = {'ort_threads': [1], 'openvino_threads': [1], 'ncnn_threads': [1],
              'variant_threads': 1}
SRC_ROOT = pathlib.Path(__file__).resolve().parents[3]    # folder holding edge_infer/


def _events(path: pathlib.Path) -> List[dict]:
    out = []
    try:
        for line in path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:      # a line cut by a crash
                pass
    except OSError:
        pass
    return out


def _tail(path: pathlib.Path, n: int = 6) -> List[str]:
    try:
        lines = path.read_text(errors='replace').splitlines()
    except OSError:
        return []
    noise = ('dlopen failed libvulkan', 'load vulkan driver failed', 'MIDR_EL1')
    return [ln for ln in lines if ln.strip() and not any(s in ln for s in noise)][-n:]


class Runner:
    """Runs jobs in the emulator, restarting a job without the candidate that crashed it."""

    def __init__(self, emu: prep.Emulator, runs: pathlib.Path, data_home: pathlib.Path,
                 timeout: float, log=print):
        self.emu = emu
        self.runs = runs
        self.data_home = data_home
        self.timeout = timeout
        self.log = log
        self._lock = threading.Lock()
        self._procs: List[subprocess.Popen] = []

    def _once(self, job: dict, out: pathlib.Path) -> dict:
        out.mkdir(parents=True, exist_ok=True)
        job_file = out / 'job.json'
        job_file.write_text(json.dumps({**job, 'out': str(out)}, indent=1))
        cmd = self.emu.command(['-m', 'edge_infer.tools.armcheck.worker', str(job_file)])
        env = self.emu.env([SRC_ROOT], {'EDGE_INFER_HOME': str(self.data_home),
                                        'EDGE_INFER_CONFIG': str(paths.config_dir())})
        t0 = time.monotonic()
        with open(out / 'stderr.log', 'w') as err, open(out / 'stdout.log', 'w') as log:
            proc = subprocess.Popen(cmd, env=env, cwd=out, stdout=subprocess.PIPE,
                                    stderr=err, text=True, errors='replace')
            with self._lock:
                self._procs.append(proc)
            timer = threading.Timer(self.timeout, proc.kill)
            timer.start()
            assert proc.stdout is not None      # stdout=PIPE
            try:
                for line in proc.stdout:
                    log.write(line)
                    log.flush()
                    self.log(f'  [aarch64 {job["name"]}] {line.rstrip()}')
                rc = proc.wait()
            finally:
                timer.cancel()
                with self._lock:
                    self._procs.remove(proc)
        timed_out = time.monotonic() - t0 >= self.timeout and rc != 0
        return {'rc': rc, 'timed_out': timed_out, 'seconds': time.monotonic() - t0,
                'events': _events(out / 'events.jsonl'), 'stderr': _tail(out / 'stderr.log')}

    def run(self, job: dict) -> dict:
        """Run a job until it completes or a crash cannot be pinned on a new candidate."""
        job = {'name': job['model'], **job}
        model = job['name']
        base = self.runs / model.replace(':', '.')
        shutil.rmtree(base, ignore_errors=True)
        crashes: List[dict] = []
        errors: List[str] = []
        seconds = 0.0
        res: dict = {}
        for attempt in range(1, MAX_ATTEMPTS + 1):
            job = {**job, 'exclude': [c['candidate'] for c in crashes]}
            res = self._once(job, base / f'attempt{attempt}')
            seconds += res['seconds']
            events = res['events']
            err = next((e for e in events if e['event'] == 'error'), None)
            if res['rc'] == 0:
                break
            if err is not None:
                errors.append(f'{model}: the worker raised {err["error"]}')
                break
            at = next((e for e in reversed(events) if e['event'] == 'at'), None)
            how = ('timed out after {:.0f} s'.format(self.timeout) if res['timed_out'] else
                   f'died with signal {-res["rc"]}' if res['rc'] < 0 else
                   f'exited with status {res["rc"]}')
            if at is None or at['candidate'] in [c['candidate'] for c in crashes]:
                errors.append(f'{model}: the emulated process {how} outside any candidate '
                              f'({" | ".join(res["stderr"][-2:])})')
                break
            crashes.append({'candidate': at['candidate'], 'during': at['what'],
                            'phase': at.get('phase', ''), 'how': how,
                            'stderr': res['stderr']})
            self.log(f'  [aarch64 {model}] CRASH: {at["candidate"]} ({at["what"]}) {how}; '
                     f'running the job again without it')
        else:
            errors.append(f'{model}: still crashing after {MAX_ATTEMPTS} attempts')
        return {'model': job['model'], 'name': model, 'kind': job.get('kind', ''),
                'events': res.get('events', []), 'crashes': crashes,
                'errors': errors, 'attempts': attempt, 'seconds': round(seconds, 1),
                'out': str(base / f'attempt{attempt}')}

    def kill_all(self) -> None:
        with self._lock:
            for p in self._procs:
                p.kill()


# -------------------------------------------------------------- host comparison
def plan(models: List[str], home: pathlib.Path, site: str, config: dict,
         only: List[str]) -> List[dict]:
    """Return the jobs, longest first: each model, its variants made ahead, then the probe."""
    def job(model: str, kind: str) -> dict:
        return {'name': model if kind != 'variants' else f'{model}:variants', 'model': model,
                'kind': kind, 'cache_dir': str(home / 'profiles' / model), 'site': site,
                'config': config, 'only': only if model != 'probe' else []}
    registry_models = [m for m in models if m != 'probe']
    return ([job(m, 'profile') for m in registry_models] +
            [job(m, 'variants') for m in registry_models] +
            [job('probe', 'probe') for m in models if m == 'probe'])


def main(argv=None) -> int:
    """Run ``edge_infer arm-check``; return the exit status."""
    from ...core.registry import load_registry
    ap = argparse.ArgumentParser(prog='edge_infer arm-check',
                                 description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--models', default='',
                    help='comma-separated: probe and/or registry models (default: all)')
    ap.add_argument('--only', nargs='+', default=[], metavar='PATTERN',
                    help='profile only candidates matching these shell patterns')
    ap.add_argument('--frames', type=int, default=2,
                    help='real frames of the accuracy check (default 2)')
    ap.add_argument('--all-threads', action='store_true',
                    help='every configured thread count (default: one per library)')
    ap.add_argument('--jobs', type=int, default=0,
                    help='emulated processes at once (default: one per core)')
    ap.add_argument('--timeout', type=float, default=1800.0,
                    help='seconds one emulated job may take (default 1800)')
    ap.add_argument('--tolerance', type=float, default=1e-4,
                    help='fp32 outputs vs x86 ONNX Runtime: max |diff| / max(1, max |ref|)')
    ap.add_argument('--report', type=pathlib.Path, default=None,
                    help='JSON report (default: $EDGE_INFER_HOME/arm/report.json)')
    ap.add_argument('--prepare-only', action='store_true',
                    help='make the aarch64 environment and stop')
    args = ap.parse_args(argv)
    registry = load_registry(paths.config_dir() / 'models.yaml')
    models = [m.strip() for m in args.models.split(',') if m.strip()] or \
        [*registry, 'probe']
    unknown = [m for m in models if m != 'probe' and m not in registry]
    if unknown:
        print(f'edge_infer arm-check: unknown model(s) {", ".join(unknown)} '
              f'(known: probe, {", ".join(registry)})', file=sys.stderr)
        return 2
    data_home = paths.data_home()
    missing = [registry[m].file for m in models if m != 'probe'
               and not (paths.models_dir() / registry[m].file).is_file()]
    if missing:
        print(f'edge_infer arm-check: model file(s) {", ".join(missing)} missing in '
              f'{paths.models_dir()}: run edge_infer prepare', file=sys.stderr)
        return FAILED
    t0 = time.monotonic()
    try:
        emu = prep.prepare(log=print)
    except prep.Unavailable as exc:
        print(f'edge_infer arm-check: unavailable here: {exc}')
        return UNAVAILABLE
    t_prepare = time.monotonic() - t0
    print(f'aarch64 environment: Debian {prep.SUITE} arm64 python3.11 '
          f'{emu.debs.get("python3.11", "?")}, libc6 {emu.debs.get("libc6", "?")}, '
          f'qemu-aarch64-static {emu.qemu_version} (QEMU_CPU={prep.CPU}); wheels: '
          + ', '.join(f'{k} {emu.wheels.get(k, "MISSING")}' for k in WHEELS))
    if args.prepare_only:
        return 0
    if not any(paths.cache_dir().glob('*.avi')):
        print(f'edge_infer arm-check: no footage in {paths.cache_dir()}: the accuracy check '
              f'needs real frames (run edge_infer prepare)', file=sys.stderr)
        return FAILED
    # int8-nncf is left out: NNCF (scipy, scikit-learn) is not in the aarch64
    # site, and its quantizer is the same Python on either machine
    config = {**EMULATION_BUDGET, 'calibration_frames': max(1, args.frames),
              'int8_calibration_frames': 4, 'int8_validation_frames': 2,
              'variants': ['fp16', 'int8']}
    if not args.all_threads:
        config.update(ONE_THREAD)
    home = prep.arm_home()
    runner = Runner(emu, home / 'runs', data_home, args.timeout)
    jobs = plan(models, home, str(emu.site), config, args.only)
    n_jobs = args.jobs or max(1, min(len(jobs), os.cpu_count() or 1))
    print(f'running {len(jobs)} job(s) under qemu-aarch64, {n_jobs} at a time: '
          f'{", ".join(j["name"] for j in jobs)} (emulation is 100-300x slower: minutes)')
    t1 = time.monotonic()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=n_jobs)
    try:
        outcomes = list(pool.map(runner.run, jobs))
    except KeyboardInterrupt:
        runner.kill_all()
        raise
    finally:
        pool.shutdown(wait=True)
    t_run = time.monotonic() - t1
    ref = HostReference()
    try:
        summaries = [summarise(o, ref, registry) for o in outcomes]
    finally:
        ref.close()
    report = {
        'command': 'edge_infer arm-check ' + ' '.join(argv if argv is not None
                                                      else sys.argv[2:]),
        'host': {'machine': platform.machine(), 'python': platform.python_version()},
        'emulation': {'qemu': emu.qemu_version, 'cpu': prep.CPU, 'suite': prep.SUITE,
                      'debs': emu.debs, 'wheels': emu.wheels, 'host_pins': emu.host_pins,
                      'config': config, 'profile_cache': str(home / 'profiles')},
        'not_emulated': NOT_EMULATED,
        'tolerance': args.tolerance,
        'seconds': {'prepare': round(t_prepare, 1), 'run': round(t_run, 1)},
        'jobs': summaries,
    }
    report['openvino'] = openvino_line(report)
    report['libraries'] = libraries_line(report)
    report['failures'] = failures(report, args.tolerance)
    print()
    for m in summaries:
        if m['kind'] == 'variants':
            made = ', '.join(f'{v["candidate"]} {v["seconds"]:.0f} s' for v in m['variants'])
            print(f'== aarch64: {m["model"]} variant files, made ahead ({made or "none"})')
        elif m['model'] == 'probe':
            print(f'== aarch64: probe model, every candidate ({m["seconds"]:.0f} s emulated)')
            print(probe_table(m, args.tolerance))
        else:
            print(f'== aarch64: {m["model"]} ({m["frames"] or "no frames"}; accuracy floor '
                  f'{m["floor"]:g}; {m["seconds"]:.0f} s emulated)')
            print(model_table(m, args.tolerance))
            print(f'chosen under emulation: {m["chosen"] or "-"}'
                  + (f' ({m["why"].split(";")[0]})' if m['why'] else '')
                  + ' -- timings EMULATED: not a choice for the board')
        print()
    print(f'machine inside: {", ".join(sorted({m["machine"] for m in summaries}))}; '
          + report['libraries'])
    print(report['openvino'])
    print('vs x86 ORT: max |output difference| from x86 ONNX Runtime fp32 on the same input '
          f'(fp32 candidates must be within {args.tolerance:g} x max(1, max |ref|))')
    print(f'profile cache of the emulated manager: {home / "profiles"} (the host\'s is '
          f'{paths.cache_dir()}, untouched)')
    for line in NOT_EMULATED:
        print(f'not emulated: {line}')
    path = args.report or home / 'report.json'
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, default=str))
    print(f'report: {path} (prepare {t_prepare:.0f} s, emulated run {t_run:.0f} s)')
    for f in report['failures']:
        print(f'FAILED: {f}')
    return FAILED if report['failures'] else 0


def run(argv=None) -> int:
    """Entry point of the ``arm-check`` verb."""
    return main(argv)


if __name__ == '__main__':
    sys.exit(main())
