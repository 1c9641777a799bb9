# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Where a perception process's memory goes: RSS added by each library and each session.

    ./run.sh exec python bench/product/memory_parts.py [--models nanodet,mobilenet_v2,...]

One process builds, step by step, what the container holds, and prints the
RSS (psutil; the pages the process really touched) after each step and what
the step added:

1. Python with rclpy and the generated messages imported;
2. each inference library imported (onnxruntime, openvino, cv2, ncnn), as
   the backend manager's candidate list imports them;
3. the serving session of each model on the backend the cache chose
   (``$EDGE_INFER_HOME/cache``: run the demo or ``edge_infer profile`` first;
   ``--backend`` names one for all), after one run each;
4. the runners-up the run-time choice keeps open (the next best two of
   each model's cached profile), after one run each;
5. what a profile run leaves: the manager's calibration frames and the
   accuracy reference of one model.

Each step is one figure from one process, so the order matters: a library
imported in step 2 is not counted again in step 3. Prints a Markdown table
and writes it through benchlib (``memory_parts.csv`` / ``.md`` under
bench/results/<machine>/, ``--out DIR`` elsewhere).
"""

import argparse
import gc
import sys

import benchlib
import psutil


def rss() -> float:
    """Return this process's RSS in MB."""
    gc.collect()
    return psutil.Process().memory_info().rss / 1e6


def main() -> int:
    """Build the container's parts step by step; print and save the RSS table."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--models', default='nanodet,mobilenet_v2,movenet_lightning,selfie')
    ap.add_argument('--backend', default='', help='serve every model on this candidate')
    ap.add_argument('--runners-up', type=int, default=2)
    ap.add_argument('--no-trim', dest='trim', action='store_false',
                    help='do not hand freed heap pages back after each session opens '
                         '(what the nodes did before 2026-11-26)')
    benchlib.common_args(ap)
    args = ap.parse_args()
    if args.quick:
        args.models = args.models.split(',')[0]
    rows = []
    last = [rss()]

    def step(what: str) -> None:
        if args.trim:
            from edge_infer.backends.measure.memory import release_freed_memory
            release_freed_memory()
        now = rss()
        rows.append((what, now, now - last[0]))
        print(f'{what:70s} {now:7.0f} MB  {now - last[0]:+7.1f}', flush=True)
        last[0] = now

    step('python, psutil')
    import rclpy  # noqa: F401
    from edge_infer_msgs.msg import DetectionArray  # noqa: F401
    import numpy  # noqa: F401
    step('rclpy, messages, numpy')
    for lib in ('onnxruntime', 'openvino', 'cv2', 'ncnn'):
        try:
            __import__(lib)
        except ImportError as exc:
            print(f'{lib}: not importable ({exc})')
            continue
        step(f'import {lib}')
    from edge_infer import paths
    from edge_infer.backends.manager import shared_manager
    from edge_infer.backends.runtime import Runtime
    from edge_infer.backends.live.runners_up import wanted
    from edge_infer.core.backend import open_session
    from edge_infer.core.registry import load_registry
    mgr = shared_manager(Runtime(), log=lambda s: None)
    step('edge_infer backend manager, candidate list')
    reg = load_registry(paths.config_dir() / 'models.yaml')
    from edge_infer.backends.measure.profiling import calibration_frames
    from edge_infer.core.model import Model
    frame = calibration_frames(1)[0][0]
    step('one camera frame')
    runners, serving = [], []
    for name in args.models.split(','):
        spec = reg[name]
        path = paths.data_home() / 'models' / spec.file
        run = mgr.profile(spec, path, measure=False)
        by_name = {b.name: b for b in mgr.candidates(spec, path)}
        chosen, _ = mgr.select(run.results, spec)
        pick = args.backend or (chosen.backend if chosen else 'onnxruntime/cpu/t1')
        model = Model(spec, by_name[pick], paths.data_home() / 'models', verify_checksum=False)
        model.infer(frame)
        serving.append((model, spec, path, run, by_name, pick))
        step(f'{name}: serving session on {pick}')
    # the runners-up after every serving session (opened inside the loop above,
    # each model's row also counted the runners-up of the model before it)
    for model, spec, path, run, by_name, pick in serving:
        ranked = sorted((r for r in run.results if r.status == 'ok' and r.backend != pick),
                        key=lambda r: r.p50_ms)
        threads = {n: getattr(b, 'intra_op_threads', None) for n, b in by_name.items()}
        for r in wanted([r.backend for r in ranked], threads, pick, args.runners_up):
            sess = open_session(by_name[r], path, spec.input_spec)
            model.with_session(sess).infer(frame)
            runners.append((spec.name, r, sess))
    if runners:
        step(f'runners-up kept open: {len(runners)} sessions ('
             + ', '.join(sorted({r for _, r, _ in runners})) + ')')
    for _, _, s in runners:
        s.close()
    del runners
    from edge_infer.backends.measure.memory import release_freed_memory
    release_freed_memory()
    step('runners-up closed, malloc_trim')
    frames, _ = mgr._frames_for()
    step(f'calibration frames ({len(frames)})')
    lines = ['| step | RSS MB | added MB |', '|---|---|---|']
    lines += [f'| {w} | {r:.0f} | {d:+.1f} |' for w, r, d in rows]
    print('\n'.join(lines))
    # made now: its machine record imports parts of edge_infer, which the steps count
    res = benchlib.Results('memory_parts', "Where a perception process's memory goes: RSS "
                           'added by each library and each session', '(product)',
                           args.machine, args.out)
    for w, r, d in rows:
        res.add(step=w, rss_mb=r, added_mb=d)
    res.note(f'models {args.models}; RSS from psutil after each step, in one process (a '
             f'library imported in one step is not counted again); freed heap pages handed '
             f"back after each step: {'yes' if args.trim else 'no (--no-trim)'}")
    res.write(['step', 'rss_mb', 'added_mb'], ['step', 'RSS MB', 'added MB'],
              md_rows=[{'step': w, 'rss_mb': f'{r:.0f}', 'added_mb': f'{d:+.1f}'}
                       for w, r, d in rows])
    return 0


if __name__ == '__main__':
    sys.exit(main())
