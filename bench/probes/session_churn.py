# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Sessions opened and closed again and again: does the memory floor of a process rise.

    ./run.sh exec python bench/probes/session_churn.py [--cycles 150] [--model nanodet]

A day's live choice opens and closes runner-up sessions about 30 times an
hour per node (issue 56: the container's RSS rose ~12 MB/h over an hour,
with swings of +-30 MB). This opens one model on each CPU candidate the
manager lists with one thread (OpenVINO, ONNX Runtime, ncnn, OpenCV DNN),
in turn, ``--cycles`` times each: open, 3 frames, close, then what the live
choice does after a look (``release_freed_memory``: gc and malloc_trim). After
each cycle it reads the process's RSS and its anonymous part. The table
gives, per block of cycles, the floor (median RSS after the trim); the
notes say how many KB a cycle adds in the first and in the second half. A
floor that stops rising is a cache that fills (the libraries' own), not a
leak.
"""

import argparse
import pathlib
import statistics
import sys
import time

import numpy as np


def rss_mb() -> tuple:
    """Return (RSS, its anonymous part), MB, of this process."""
    vals = {}
    for line in pathlib.Path('/proc/self/status').read_text().splitlines():
        if line.startswith(('VmRSS:', 'RssAnon:')):
            vals[line.split(':')[0]] = int(line.split()[1]) / 1024
    return vals.get('VmRSS', float('nan')), vals.get('RssAnon', float('nan'))


def per_cycle_kb(points: list) -> float:
    """Return the least-squares slope of (cycle, MB) points, KB per cycle."""
    if len(points) < 3:
        return float('nan')
    xs, ys = zip(*points)
    return float(np.polyfit(xs, ys, 1)[0] * 1024)


def main(argv=None) -> int:
    """Open and close each candidate's session in turn; write the table."""
    import benchlib
    from edge_infer import paths
    from edge_infer.backends.config import load_config
    from edge_infer.backends.manager import BackendManager, default_cache_dir
    from edge_infer.backends.measure.load_probe import describe, LoadProbe
    from edge_infer.backends.measure.memory import release_freed_memory
    from edge_infer.core.image import Frame
    from edge_infer.core.model import Model
    from edge_infer.core.registry import load_models
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--cycles', type=int, default=150, help='open/close cycles per candidate')
    ap.add_argument('--model', default='nanodet')
    ap.add_argument('--block', type=int, default=25, help='cycles per row of the table')
    benchlib.common_args(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.cycles, args.block = 6, 3
    spec = load_models()[args.model]
    folder = paths.models_dir()
    manager = BackendManager(default_cache_dir(), config=load_config(), log=lambda *_: None)
    picked = [b for b in manager.candidates()
              if b.name.endswith(('/cpu/t1', '/cpu/t1/bf16', '/cpu/t1/f32'))]
    frame = Frame(np.random.default_rng(1).integers(0, 255, (480, 640, 3), np.uint8), 'bgr')
    kept, why = [], {}
    for b in picked:        # one warm cycle each: libraries load their plugins once
        try:
            m = Model(spec, b, folder)
            m.infer(frame)
            m.close()
            kept.append(b)
        except Exception as exc:    # noqa: BLE001 - a candidate that cannot run is said
            why[b.name] = str(exc).splitlines()[0][:120]
    release_freed_memory()
    start = rss_mb()
    points = []
    probe = LoadProbe().start()
    t0 = time.monotonic()
    for k in range(args.cycles):
        for b in kept:
            m = Model(spec, b, folder)
            for _ in range(3):
                m.infer(frame)
            m.close()
        release_freed_memory()
        rss, anon = rss_mb()
        points.append((k + 1, rss, anon))
    load = describe(probe.stop())
    took = time.monotonic() - t0
    res = benchlib.Results('session_churn', 'Sessions opened and closed: the memory floor',
                           f'--cycles {args.cycles} --model {args.model}', args.machine,
                           args.out)
    for i in range(0, len(points), args.block):
        part = points[i:i + args.block]
        res.add(cycles=f'{part[0][0]}-{part[-1][0]}',
                rss_mb=round(statistics.median(p[1] for p in part), 1),
                anon_mb=round(statistics.median(p[2] for p in part), 1))
    half = len(points) // 2
    first = per_cycle_kb([(c, r) for c, r, _ in points[:half]])
    second = per_cycle_kb([(c, r) for c, r, _ in points[half:]])
    res.note(f'{args.model}; each cycle opens, runs 3 frames on and closes: '
             f'{", ".join(b.name for b in kept)}; then gc and malloc_trim')
    res.note(f'RSS after the warm cycle {start[0]:.1f} MB (anonymous {start[1]:.1f}); after '
             f'{args.cycles} cycles {points[-1][1]:.1f} MB (anonymous {points[-1][2]:.1f})')
    res.note(f'per cycle (least squares): first half {first:+.0f} KB, second half '
             f'{second:+.0f} KB; {took:.0f} s; {load}')
    for name, reason in why.items():
        res.note(f'not run: {name}: {reason}')
    res.write(['cycles', 'rss_mb', 'anon_mb'])
    return 0


if __name__ == '__main__':
    sys.exit(main())
