# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The default graph's four models in one process under a changing foreign load: regret.

    ./run.sh exec python bench/product/graph_under_load.py [--phase-s 20] [--candidates 3]
        [--fps 0] [--models nanodet,mobilenet_v2,movenet_lightning,selfie]
        [--machine NAME | --out DIR] [--quick]

What ``bench/product/selection_under_load.py`` does for one model, for the four
models of ``config/perception.yaml`` at once, as the container runs them:
one :class:`~edge_infer.backends.manager.BackendManager` shared by four
:class:`~edge_infer.backends.live.choice.LiveChoice` (1 inference thread
per model: the container's thread budget for four models on two cores;
the node parameters' defaults, ``reselect_idle_s`` 30 s among them), each
model's frames on a thread of its own, as the container's executor runs
its nodes. The cache starts empty, as on a robot's first start: every
model serves on a provisional backend at once while the profiles run in
the background; the phases begin once all four have settled (the time of
each is printed).

Each model's thread runs its frames through its runtime and its best
``--candidates`` candidates pinned (its own profile's ranking; each a
:class:`~edge_infer.core.model.Model`, so that a ``+pre`` candidate gets the
frame as the runtime would give it; each frame's preprocessing and
inference compared, as the profile ranks them: a ``+pre`` candidate's
inference includes its preprocessing), in an order
shuffled per frame, flat out or at ``--fps`` frames a second per model (as
a camera gives them): the four threads and the pinned sessions are each
other's load. A load generator in another
process (``selection_under_load.Load``) takes 0 %, 50 % and 100 % of a core
per phase; in the last phase the load appears and then goes. Per model and
phase: the time-weighted regret (the runtime's total time over the best
pinned candidate's on the same frames), the time from each load change to
the runtime's settling on a candidate within 5 % of the best (20 frames in
a row), the switches, and the share of frames a runner-up ran. A drift
re-evaluation, if one runs, runs beside the frames and counts (it is what
a robot gets). Goals (issue 35): regret <= 1.05 in every phase, settled
within 5 s of a change.

Written under bench/results/<machine>/ (``--out DIR`` elsewhere): the table
through benchlib (``graph_under_load.csv`` / ``.md``) and each model's
per-frame rows (``graph_under_load_<model>.csv``).
"""

import argparse
import csv
import os
import pathlib
import random
import tempfile
import threading
import time

import benchlib
from edge_infer import paths
from edge_infer.backends.live.choice import LiveChoice, LiveSettings
from edge_infer.backends.manager import BackendManager, load_config
from edge_infer.backends.measure.profiling import calibration_frames
from edge_infer.core.model import Model
from edge_infer.core.registry import load_registry
from edge_infer.testing.observer import RecordingObserver
from selection_under_load import analyse, Load, settle_text, timeline

GRAPH = 'nanodet,mobilenet_v2,movenet_lightning,selfie'     # config/perception.yaml's four
CORES_PER_MODEL = 1     # the container's thread budget: four models on two cores


def run_frame(live, pinned, frame, row, order) -> None:
    """Run one frame through ``live`` and every pinned session, in ``order``'s shuffle."""
    names = ['after'] + list(pinned)
    order.shuffle(names)
    for name in names:
        if name == 'after':
            res = live.infer(frame)
            row['after'] = res.preprocess_ms + res.inference_ms
            row['after:backend'] = live.backend_name
            row['after:ran'] = res.backend
            live.after_frame()
        else:
            with live.runtime.gate.shared():    # a frame, as the choice's are
                res = pinned[name].infer(frame)
            row[name] = res.preprocess_ms + res.inference_ms


def serve_until(models: dict, frames, stop, phase_of, rows: dict, load: Load,
                t0_of, fps: float = 0.0) -> None:
    """Serve every model on its own thread until ``stop()``; rows per model.

    ``phase_of()``: the phase now (None: the start, not recorded);
    ``t0_of()``: when it began; ``fps``: each model's frame rate, as a
    camera gives it (0: flat out). A model late for its next frame runs it
    at once and does not catch up (the node keeps the newest frame).
    """
    period = 1.0 / fps if fps > 0 else 0.0

    def one(name):
        m = models[name]
        order = random.Random(name)
        k = 0
        due = time.monotonic()
        while not stop():
            if period:
                now = time.monotonic()
                if now < due:
                    time.sleep(min(due - now, 0.05))    # the camera's clock
                    continue
                due = max(due + period, now)
            phase = phase_of()
            row = {'phase': phase, 't': time.monotonic() - t0_of(), 'load': load.share}
            if m['pinned']:
                run_frame(m['live'], m['pinned'], frames[k % len(frames)], row, order)
            else:
                m['live'].infer(frames[k % len(frames)])
                m['live'].after_frame()
            if phase is not None:
                rows[name].append(row)
            k += 1
    threads = [threading.Thread(target=one, args=(n,), daemon=True) for n in models]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main() -> None:
    """Start the four models cold, run the phases; print and save the regret table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--models', default=GRAPH)
    ap.add_argument('--phase-s', type=float, default=20.0)
    ap.add_argument('--candidates', type=int, default=3)
    ap.add_argument('--settle-timeout', type=float, default=300.0)
    ap.add_argument('--fps', type=float, default=0.0,
                    help="each model's frame rate in the phases, as a camera's (0: flat out)")
    benchlib.common_args(ap)
    args = ap.parse_args()
    if args.quick:
        args.phase_s, args.candidates = min(args.phase_s, 4.0), min(args.candidates, 2)
    res = benchlib.Results('graph_under_load', "The default graph's models in one process "
                           'under a changing foreign load: regret',
                           'issue 35 (regret <= 1.05, settled within 5 s)', args.machine,
                           args.out)
    registry = load_registry(paths.config_dir() / 'models.yaml')
    names = args.models.split(',')
    frames = calibration_frames(8)[0]
    cache = pathlib.Path(tempfile.mkdtemp(prefix='edge_infer_graph_'))
    quiet = {'quiet_foreign_cores': 99.0}   # this bench is about run time, not the cache
    lines = []
    manager = BackendManager(cache, config={**load_config(), **quiet},
                             log=lambda s: lines.append(('manager', time.monotonic(), s)))
    manager.cap_threads(CORES_PER_MODEL, f'{len(names)} models share 2 cores in this process')
    if manager.config['measure_apart']:
        manager.measure_apart()     # as the nodes' shared manager does
    settings = LiveSettings(runners_idle_s=30.0)        # the node parameters' defaults
    models = {}
    res.note(f'{len(names)} models, empty cache; load average at start '
             f'{os.getloadavg()[0]:.2f}; {args.phase_s:g} s phases, best {args.candidates} '
             f'candidates pinned, ' + (f'{args.fps:g} frames/s per model' if args.fps > 0
                                       else 'flat out'))
    t_start = time.monotonic()
    for n in names:
        spec = registry[n]
        live = LiveChoice(manager, spec, paths.models_dir() / spec.file, settings=settings,
                          log=lambda s, n=n: lines.append((n, time.monotonic(), s)),
                          warn=lambda s, n=n: lines.append((n, time.monotonic(), 'WARN ' + s)),
                          observer=RecordingObserver())
        live.start()
        models[n] = {'live': live, 'pinned': {}, 'spec': spec}
    rows = {n: [] for n in names}
    state = {'phase': None, 't0': t_start, 'stop': False}

    def settled():
        return all(not m['live'].provisional for m in models.values()) or \
            time.monotonic() - t_start > args.settle_timeout
    serve_until(models, frames, settled, lambda: None, rows, Load(), lambda: t_start)
    print(f'settled in {time.monotonic() - t_start:.1f} s after the start:')
    for n, m in models.items():
        live = m['live']
        still = ' (STILL provisional)' if live.provisional else ''
        print(f'  {n:18} {live.settled_s:5.1f} s on {live.backend_name}{still}')
        ranked = [r.backend for r in sorted(
            (r for r in live.run.results if r.status == 'ok' and not r.cut_short),
            key=lambda r: r.p50_ms)][:args.candidates]
        path = paths.models_dir() / m['spec'].file
        by_name = {b.name: b for b in manager.candidates(m['spec'], path)}
        m['pinned'] = {b: Model(m['spec'], by_name[b], paths.models_dir(),
                                verify_checksum=False) for b in ranked}
        print(f"    pinned: {', '.join(ranked)}")
    load = Load()
    p = args.phase_s
    phases = [('0 %', 0.0, (), []), ('50 %', 0.5, (), [0.0]), ('100 %', 1.0, (), [0.0]),
              ('appears, then goes', 0.0, ((p / 4, 1.0), (p * 3 / 4, 0.0)), [p / 4, p * 3 / 4])]
    starts = []
    try:
        for phase, share, changes, _ in phases:
            load.run_at(share)
            state['t0'] = time.monotonic()
            state['phase'] = phase
            starts.append((state['t0'], phase))
            length = p * (2 if changes else 1)
            pending = sorted(changes)

            def stop(length=length, pending=pending):
                now = time.monotonic() - state['t0']
                while pending and pending[0][0] <= now:   # the first thread to see it
                    load.run_at(pending.pop(0)[1])
                return now >= length
            lock = threading.Lock()

            def locked_stop(stop=stop):
                with lock:
                    return stop()
            serve_until(models, frames, locked_stop, lambda: state['phase'], rows, load,
                        lambda: state['t0'], args.fps)
            print(f'phase {phase}: ' + ', '.join(
                f"{n} {sum(1 for r in rows[n] if r['phase'] == phase)}" for n in names)
                + ' frames')
    finally:
        load.run_at(0.0)
    print()
    res.note(f'load generator: another process, share of one core per 10 ms; load average '
             f'at end {os.getloadavg()[0]:.2f}')
    print()
    print('| model | phase | frames | regret | choice regret | best pinned | runtime p50 ms | '
          'best p50 ms | backends used | frames a runner-up ran | settled after a change |')
    print('|---|---|---|---|---|---|---|---|---|---|---|')
    worst = {}
    for n, m in models.items():
        table = analyse(rows[n], {'after': None}, m['pinned'],
                        [(ph, at) for ph, _, _, at in phases])
        for r in table:
            print(f"| {n} | {r['phase']} | {r['frames']} | {r['regret']:.3f} | "
                  f"{r['choice']:.3f} | {r['best_pinned']} | {r['ms_p50']:.2f} | "
                  f"{r['best_p50']:.2f} | {r['used']} | {r['served']} | "
                  f"{settle_text(r['settle'])} |")
            res.add(model=n, **{k: v for k, v in r.items() if k not in ('settle', 'runtime')},
                    settle=settle_text(r['settle']), settled_s=m['live'].settled_s)
        slow = [s for r in table for _, _, s in r['settle']]
        worst[n] = (max(r['regret'] for r in table),
                    max((s for s in slow if s is not None), default=0.0),
                    sum(s is None for s in slow))
    print()
    for n, m in models.items():
        live = m['live']
        reg, settle, never = worst[n]
        res.note(f'{n}: worst regret {reg:.3f} (goal <= 1.05), slowest settle {settle:.1f} s'
                 f'{f", {never} change(s) NOT settled" if never else ""} (goal <= 5 s); '
                 f'runner-up share {live.overhead(since_start=True):.1%}; '
                 f'{len(live.switches)} switch(es): ' + '; '.join(
                     f"{s['from']} -> {s['to']} ({s['trigger']})" for s in live.switches))
    print("\ntimeline (5 s steps): the runtime's time / the best pinned candidate's")
    for n, m in models.items():
        for (t0, phase) in starts:
            print(f'{n}, {phase}:')
            print('\n'.join(timeline(rows[n], 'after', m['pinned'], phase)))
    print('\nlog lines after the start (drift, looks, switches):')
    for who, t, s in lines:
        if t >= starts[0][0] and any(w in s for w in ('drift', 'switch', 'expected now',
                                                      'WARN', 'won')):
            ph = max((x for x in starts if x[0] <= t), default=(t, 'start'))
            print(f'  {who} [{ph[1]} +{t - ph[0]:.1f} s] {s[:160]}')
    for m in models.values():
        m['live'].close()
        for s in m['pinned'].values():
            s.close()
    res.write(['model', 'phase', 'frames', 'regret', 'choice', 'best_pinned', 'ms_p50',
               'best_p50', 'used', 'served', 'settle'],
              ['model', 'phase', 'frames', 'regret', 'choice regret', 'best pinned',
               'runtime p50 ms', 'best p50 ms', 'backends used', 'frames a runner-up ran',
               'settled after a change'],
              md_rows=[dict(r, regret=f"{r['regret']:.3f}", choice=f"{r['choice']:.3f}")
                       for r in res.rows])
    for n in names:
        with open(res.dir / f'graph_under_load_{n}.csv', 'w', newline='') as f:
            keys = sorted({k for r in rows[n] for k in r})
            w = csv.DictWriter(f, keys, restval='')
            w.writeheader()
            w.writerows(rows[n])


if __name__ == '__main__':
    main()
