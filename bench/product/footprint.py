# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The default graph's footprint: memory, settle time, switches and stop time, cold and warm.

    ./run.sh exec python bench/product/footprint.py [--steady-s 60] [--runs cold,warm,plain]
        [--out bench/results/<machine>]

Starts the perception container with config/perception.yaml's default graph
(detector, classifier, pose, segmenter, telemetry; autostart) as
``edge_infer bringup`` does, with the demo bag played in a loop from the
same moment (a camera that is already publishing), and samples every 0.5 s:

- the container's RSS (psutil), and its child processes' (the measuring
  child, the int8 quantizer under it) apart, and the two together at the
  same sample (``total_peak_mb``: what the board must hold);
- from its log: when each node's measured choice came (``profile done in``
  or a choice read from the cache), and every backend switch after it.

Runs:
- ``cold``: a cache folder (EDGE_INFER_CACHE) with no profile, as on a
  robot's first start after ``edge_infer prepare``: only the files prepare
  made (``variants/`` and ``ncnn/``, linked from the default cache; a start
  never makes one); it runs until every node has settled (or ``--timeout``), then
  ``--steady-s`` more, then is stopped with SIGINT: the stop's time and exit
  code are reported. A second cold run is stopped ``--stop-after-s`` after
  start, while the profile runs: the stop's time during a profile;
- ``warm``: the cache the cold run left (without a cold run and without
  ``--cache``: a copy of the default cache's profile); steady RSS (median and max after the
  first 10 s) and switches per model per minute over ``--steady-s``;
- ``plain``: the same four model files in one process on a plain ONNX
  Runtime (1 thread each) and a plain OpenVINO (bf16 where the CPU has it,
  1 thread each), rclpy imported, after one run each: the floor.

Writes footprint.md (and footprint_rss.csv, the RSS timeline) under
bench/results/<machine>/. Say what load was present: the run records the
load average at its start and end.
"""

import argparse
import csv
import os
import pathlib
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import benchlib
from edge_infer import graph, paths, procs

PROFILED = re.compile(r'\[(\d+\.\d+)\] \[(\w+)\]: profile done in ([\d.]+) s')
SWITCH = re.compile(r'\[(\d+\.\d+)\] \[(\w+)\]: switching backend (\S+) -> (\S+) \((\w+)\)')
CHOSEN = re.compile(r'\[(\d+\.\d+)\] \[(\w+)\]: backend (\S+)')
NAN = float('nan')
MODELS = {'detector': 'nanodet', 'classifier': 'mobilenet_v2', 'pose': 'movenet_lightning',
          'segmenter': 'selfie'}


def rss_mb(proc) -> tuple:
    """Return (the process's RSS, its children's RSS) in MB; (nan, nan) once it is gone."""
    import psutil
    try:
        p = psutil.Process(proc.pid)
        own = p.memory_info().rss / 1e6
        kids = 0.0
        for c in p.children(recursive=True):
            try:
                kids += c.memory_info().rss / 1e6
            except psutil.Error:
                pass
        return own, kids
    except psutil.Error:
        return float('nan'), float('nan')


def rss_parts(pid: int) -> dict:
    """Return the process's RSS by kind (MB): anonymous (heap), file-backed (libraries), shmem.

    Shared memory (Fast DDS's segments the camera frames cross) counts in RSS
    but is not the process's own: it is shown apart.
    """
    out = {}
    try:
        for line in pathlib.Path(f'/proc/{pid}/status').read_text().splitlines():
            key, _, value = line.partition(':')
            if key in ('RssAnon', 'RssFile', 'RssShmem'):
                out[key[3:].lower() + '_mb'] = int(value.split()[0]) / 1e3
    except OSError:
        pass
    return out


def settled_at(log_text: str, t0_wall: float, warm: bool) -> dict:
    """Return node -> seconds after start at which its measured choice came."""
    out = {}
    for m in PROFILED.finditer(log_text):
        out.setdefault(m.group(2), float(m.group(1)) - t0_wall)
    if warm:        # a complete cached profile: the choice at configure
        for m in CHOSEN.finditer(log_text):
            if m.group(2) in MODELS:
                out.setdefault(m.group(2), float(m.group(1)) - t0_wall)
    return out


def switches(log_text: str, t0_wall: float) -> list:
    """Return [(seconds after start, node, from, to, trigger)] of every switch but 'profiled'."""
    return [(float(m.group(1)) - t0_wall, m.group(2), m.group(3), m.group(4), m.group(5))
            for m in SWITCH.finditer(log_text) if m.group(5) != 'profiled']


def params_with(folder: pathlib.Path, sets) -> pathlib.Path:
    """Return perception.yaml with ``sets`` ('param=value' for every perception node) applied."""
    import yaml
    params = yaml.safe_load((paths.config_dir() / 'perception.yaml').read_text())
    for item in sets:
        key, _, value = item.partition('=')
        for n in MODELS:
            params[n]['ros__parameters'][key] = yaml.safe_load(value)
    path = folder / 'params_set.yaml'
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def prepared(cache: pathlib.Path) -> None:
    """Give an empty cache folder the files ``edge_infer prepare`` made (linked).

    The variant files (``variants/``) and the ncnn conversions (``ncnn/``).
    """
    from edge_infer.backends.manager import default_cache_dir
    cache.mkdir(parents=True, exist_ok=True)
    for part in ('variants', 'ncnn'):
        made = default_cache_dir() / part
        if made.is_dir() and not (cache / part).exists():
            (cache / part).symlink_to(made.resolve(), target_is_directory=True)


def warmed(cache: pathlib.Path) -> None:
    """Copy the default cache's profile (and the libraries' answers) into ``cache``."""
    from edge_infer.backends.manager import default_cache_dir
    for f in default_cache_dir().glob('*.json'):
        shutil.copy2(f, cache / f.name)


def run_graph(label: str, cache: pathlib.Path, folder: pathlib.Path, *, steady_s: float,
              timeout: float, stop_after_s: float = 0.0, warm: bool = False,
              params=None) -> dict:
    """Start the default graph with the bag looped; sample; stop; return the figures."""
    env = procs.ros_env(procs.free_domain_id())
    env['EDGE_INFER_CACHE'] = str(cache)
    log = folder / f'{label}.log'
    (plan,) = graph.plan(autostart=True, params_file=params)
    pfile = plan.write_params(folder / f'{label}.params.yaml')
    t0_wall, t0 = time.time(), time.monotonic()
    proc = procs.spawn('edge_infer.nodes.container',
                       ['--ros-args', '--params-file', str(pfile)], env, log)
    player = procs.start_player(paths.bags_dir() / 'demo', env, ['--loop', '--quiet'])
    samples = []        # (t, own MB, children MB)
    tick = threading.Event()
    settled_t = None
    parts: dict = {}
    try:
        while proc.poll() is None:
            t = time.monotonic() - t0
            own, kids = rss_mb(proc)
            samples.append((t, own, kids))
            parts = rss_parts(proc.pid) or parts
            if stop_after_s and t >= stop_after_s:
                break
            done = settled_at(log.read_text(errors='replace'), t0_wall, warm)
            if settled_t is None and all(n in done for n in MODELS):
                settled_t = t
            if settled_t is not None and t >= settled_t + steady_s:
                break
            if t > timeout:
                break
            tick.wait(0.5)
    finally:
        procs.stop(player)
        t_stop = time.monotonic()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
        try:
            rc = proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait(10)
        stop_s = time.monotonic() - t_stop
    text = log.read_text(errors='replace')
    done = settled_at(text, t0_wall, warm)
    sw = switches(text, t0_wall)
    end = samples[-1][0] if samples else 0.0
    steady_from = (settled_t or end) if not warm else 10.0
    steady = [s[1] for s in samples if s[0] >= steady_from]
    window = max(1e-9, end - steady_from)
    row = {'run': label, 'peak_mb': max((s[1] for s in samples), default=float('nan')),
           'children_peak_mb': max((s[2] for s in samples), default=float('nan')),
           # the board's: the container and its children at the same sample
           'total_peak_mb': max((s[1] + s[2] for s in samples), default=float('nan')),
           'steady_median_mb': statistics.median(steady) if steady else float('nan'),
           'steady_max_mb': max(steady) if steady else float('nan'),
           'settled_s': max(done.values()) if len(done) == len(MODELS) else float('nan'),
           'stop_s': stop_s, 'exit_code': rc,
           'switches_steady': sum(1 for s in sw if s[0] >= steady_from),
           'steady_window_s': window, **parts}
    for n in MODELS:
        row[f'{n}_settled_s'] = done.get(n, float('nan'))
    row['switches_per_model_per_10min'] = row['switches_steady'] / len(MODELS) / window * 600
    with open(folder / f'{label}_rss.csv', 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(['t_s', 'container_mb', 'children_mb'])
        w.writerows((f'{t:.1f}', f'{a:.1f}', f'{b:.1f}') for t, a, b in samples)
    print(f"{label}: peak {row['peak_mb']:.0f} MB (children {row['children_peak_mb']:.0f}), "
          f"steady {row['steady_median_mb']:.0f} MB, settled {row['settled_s']:.1f} s "
          f"({', '.join(f'{n} {done.get(n, NAN):.1f}' for n in MODELS)}), "
          f"{row['switches_steady']} switches in {window:.0f} s, stop {stop_s:.2f} s exit {rc}",
          flush=True)
    for s in sw:
        print(f'   switch at {s[0]:.1f} s: {s[1]} {s[2]} -> {s[3]} ({s[4]})')
    return row


PLAIN = r"""
import sys, time, resource, numpy as np
import rclpy  # noqa: F401  (as a node process has it)
from edge_infer import paths
from edge_infer.core.registry import load_registry
lib = sys.argv[1]
reg = load_registry(paths.config_dir() / 'models.yaml')
sessions = []
for name in %r:
    spec = reg[name]
    path = paths.data_home() / 'models' / spec.file
    i = spec.input_spec
    if lib == 'ort':
        import onnxruntime as ort
        so = ort.SessionOptions(); so.intra_op_num_threads = 1; so.inter_op_num_threads = 1
        s = ort.InferenceSession(str(path), so, providers=['CPUExecutionProvider'])
        inp = s.get_inputs()[0]
        shape = [d if isinstance(d, int) else 1 for d in inp.shape]
        x = np.random.rand(*shape).astype(np.float32)
        s.run(None, {inp.name: x})
    else:
        import openvino as ov
        core = ov.Core()
        hint = 'bf16' if 'bf16' in core.get_property('CPU', 'OPTIMIZATION_CAPABILITIES') \
            or 'BF16' in core.get_property('CPU', 'OPTIMIZATION_CAPABILITIES') else 'f32'
        c = core.compile_model(str(path), 'CPU', {'INFERENCE_NUM_THREADS': 1,
                                                  'INFERENCE_PRECISION_HINT': hint})
        shape = [d if d > 0 else 1 for d in c.inputs[0].get_partial_shape().get_min_shape()]
        x = np.random.rand(*shape).astype(np.float32)
        c(x)
    sessions.append(s if lib == 'ort' else c)
import psutil
print(psutil.Process().memory_info().rss / 1e6,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3)
"""


def run_plain(lib: str) -> dict:
    """Return the RSS of one plain process holding the four models on ``lib``."""
    code = PLAIN % (list(MODELS.values()),)
    out = subprocess.run([sys.executable, '-c', code, lib], capture_output=True, text=True,
                         env=procs.ros_env(), timeout=300)
    if out.returncode != 0:
        print(out.stderr[-2000:])
        return {'run': f'plain {lib}', 'steady_median_mb': float('nan')}
    rss, peak = map(float, out.stdout.split()[-2:])
    peak = peak * 1.024     # ru_maxrss is in KiB
    print(f'plain {lib}: RSS {rss:.0f} MB (peak {peak:.0f} MB)', flush=True)
    return {'run': f'plain {lib}', 'steady_median_mb': rss, 'peak_mb': peak}


def fmt(v) -> str:
    if isinstance(v, float):
        return '' if v != v else f'{v:.1f}' if abs(v) < 100 else f'{v:.0f}'
    return str(v)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--runs', default='cold,stop,warm,plain')
    ap.add_argument('--steady-s', type=float, default=60.0)
    ap.add_argument('--timeout', type=float, default=240.0)
    ap.add_argument('--stop-after-s', type=float, default=12.0,
                    help="the 'stop' run: SIGINT this long after start (a profile running)")
    ap.add_argument('--out', type=pathlib.Path, default=None)
    ap.add_argument('--label', default='', help='suffix of the table file (e.g. before)')
    ap.add_argument('--cache', type=pathlib.Path, default=None,
                    help='the cache folder (kept; default: a new one, removed at the end)')
    ap.add_argument('--set', action='append', default=[], metavar='PARAM=VALUE',
                    help='a parameter of every perception node (e.g. reselect_duty=0)')
    args = ap.parse_args()
    runs = args.runs.split(',')
    out = args.out or benchlib.BENCH_DIR / 'results' / benchlib.machine_slug()
    out.mkdir(parents=True, exist_ok=True)
    work = pathlib.Path(tempfile.mkdtemp(prefix='footprint_'))
    cache = args.cache or work / 'cache'      # --cache: kept for later warm runs
    for folder in (cache, work / 'cache_stop'):
        prepared(folder)
    if 'warm' in runs and 'cold' not in runs and args.cache is None:
        warmed(cache)   # warm alone: the default cache's profile, not a first start
    params = params_with(work, args.set) if args.set else None
    load0 = os.getloadavg()
    rows = []
    try:
        if 'cold' in runs:
            rows.append(run_graph('cold', cache, work, steady_s=args.steady_s,
                                  timeout=args.timeout, params=params))
        if 'stop' in runs:
            rows.append(run_graph('stop', work / 'cache_stop', work, steady_s=0,
                                  timeout=args.timeout, stop_after_s=args.stop_after_s,
                                  params=params))
        if 'warm' in runs:
            rows.append(run_graph('warm', cache, work, steady_s=args.steady_s,
                                  timeout=args.timeout, warm=True, params=params))
        if 'plain' in runs:
            rows += [run_plain('ort'), run_plain('openvino')]
    finally:
        load1 = os.getloadavg()
    cols = ['run', 'peak_mb', 'children_peak_mb', 'total_peak_mb', 'steady_median_mb',
            'steady_max_mb', 'anon_mb', 'file_mb', 'shmem_mb', 'settled_s'] + [
            f'{n}_settled_s' for n in MODELS] + [
            'switches_steady', 'steady_window_s', 'switches_per_model_per_10min', 'stop_s',
            'exit_code']
    lines = [f'# Footprint of the default graph ({benchlib.machine_slug()})', '',
             f'`./run.sh exec python bench/product/footprint.py {" ".join(sys.argv[1:])}`, '
             f'{time.strftime("%Y-%m-%d %H:%M")}; load average at start {load0[0]:.2f}, '
             f'at end {load1[0]:.2f} (2 cores).', '',
             '| ' + ' | '.join(cols) + ' |', '|' + '---|' * len(cols)]
    for r in rows:
        lines.append('| ' + ' | '.join(fmt(r.get(c, '')) for c in cols) + ' |')
    name = f'footprint{"_" + args.label if args.label else ""}.md'
    (out / name).write_text('\n'.join(lines) + '\n')
    print('\n'.join(lines))
    print(f'logs: {work}')
    if args.cache is None:
        shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
