# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What 3D costs per frame: 20 boxes on a 640x480 depth frame (core/depth.py).

    ./run.sh exec python bench/product/depth_cost.py [--boxes 20] [--reps 2000]

A synthetic frame (a wall at 7 m, ``--boxes`` person-sized boxes at 1.5-6 m,
1 % noise, 15 % holes), per variant one call per frame:

- ``16UC1`` / ``32FC1``: ``from_raw`` on the message bytes (a view) and
  ``locate`` for every box (the median of each box core's valid depths on a
  32 x 32 grid, the 3D centre and size);
- ``16UC1 + masks``: the same within each detection's mask (the
  InstanceMasks id map);
- ``keypoints``: ``keypoints_3d`` for 17 keypoints of each box;
- ``whole core, np.median``: the obvious way, for reference: per box, the
  core's whole crop converted and ``np.median`` of its valid pixels; its
  distances are also compared with ``locate``'s (the grid's sampling error).

The variants run call by call in rotating order (interleaved); p50 / p90 /
max of the single calls, and p50 against the 0.5 ms goal of issue 37.
"""

import argparse
import datetime
import pathlib
import statistics
import sys
import time

import numpy as np

GOAL_MS = 0.5
W, H = 640, 480


def scene(n: int, rng):
    """Return (16UC1 bytes, 32FC1 bytes, boxes N x 4, instance id map, keypoints N x 17 x 3)."""
    depth = np.full((H, W), 7.0)
    ids = np.zeros((H, W), np.uint8)
    boxes = []
    for i in range(n):
        z = rng.uniform(1.5, 6.0)
        w, h = 0.5 * 525 / z, 1.7 * 525 / z
        x1, y1 = rng.uniform(0, W - w), rng.uniform(0, max(H - h, 1))
        b = np.array([x1, y1, min(x1 + w, W), min(y1 + h, H)])
        c = b.round().astype(int)
        depth[c[1]:c[3], c[0]:c[2]] = z
        ids[c[1]:c[3], c[0]:c[2]] = i + 1
        boxes.append(b)
    depth *= 1 + 0.01 * rng.standard_normal(depth.shape)
    depth[rng.random(depth.shape) < 0.15] = 0
    boxes = np.array(boxes, np.float32)
    kp = np.concatenate([rng.uniform(boxes[:, None, 0:1], boxes[:, None, 2:3], (n, 17, 1)),
                         rng.uniform(boxes[:, None, 1:2], boxes[:, None, 3:4], (n, 17, 1)),
                         np.full((n, 17, 1), 0.9)], 2).astype(np.float32)
    mm = (depth * 1000).round().astype('<u2').tobytes()
    return mm, depth.astype('<f4').tobytes(), boxes, ids, kp


def whole_core_median(depth_m: np.ndarray, boxes: np.ndarray, core=0.5, lo=0.1, hi=20.0):
    """Return per box the np.median of every valid pixel of its core (16UC1 mm; the reference)."""
    out = np.full(len(boxes), np.nan, np.float32)
    for i, (x1, y1, x2, y2) in enumerate(boxes):
        mx, my = (1 - core) / 2 * (x2 - x1), (1 - core) / 2 * (y2 - y1)
        crop = depth_m[int(y1 + my):int(np.ceil(y2 - my)), int(x1 + mx):int(np.ceil(x2 - mx))]
        crop = crop.astype(np.float32) * np.float32(0.001)
        v = crop[(crop >= lo) & (crop <= hi)]
        if v.size >= 0.05 * crop.size and v.size:
            out[i] = np.median(v)
    return out


def main() -> int:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))    # bench/: benchlib
    import benchlib
    from edge_infer.core.depth import from_raw, Intrinsics, keypoints_3d, locate
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--boxes', type=int, default=20)
    ap.add_argument('--reps', type=int, default=2000, help='calls per variant')
    benchlib.common_args(ap)
    args = ap.parse_args()
    reps = 100 if args.quick else args.reps
    day = datetime.date.today().strftime('%Y%m%d')
    res = benchlib.Results(f'depth_cost_{day}', f'3D per frame: {args.boxes} boxes, '
                           f'a {W}x{H} depth frame', 'issue 37 (core/depth.py)',
                           machine=args.machine,
                           out_dir=pathlib.Path(args.out) if args.out else None)
    rng = np.random.default_rng(37)
    mm, metres, boxes, ids, kp = scene(args.boxes, rng)
    k = Intrinsics(525.0, 525.0, 319.5, 239.5, W, H)
    frame16 = from_raw('16UC1', H, W, W * 2, mm)
    variants = {
        '16UC1': lambda: locate(from_raw('16UC1', H, W, W * 2, mm), boxes, k,
                                image_size=(W, H)),
        '32FC1': lambda: locate(from_raw('32FC1', H, W, W * 4, metres), boxes, k,
                                image_size=(W, H)),
        '16UC1 + masks': lambda: locate(from_raw('16UC1', H, W, W * 2, mm), boxes, k,
                                        masks=ids, image_size=(W, H)),
        'keypoints': lambda: keypoints_3d(from_raw('16UC1', H, W, W * 2, mm), kp, k),
        'whole core, np.median': lambda: whole_core_median(frame16.pixels, boxes),
    }
    names = list(variants)
    times = {name: [] for name in names}
    for fn in variants.values():     # warm-up
        for _ in range(20):
            fn()
    for r in range(reps):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            t = time.perf_counter()
            variants[name]()
            times[name].append((time.perf_counter() - t) * 1e3)
    grid = locate(frame16, boxes, k).distance
    full = whole_core_median(frame16.pixels, boxes)
    gap = float(np.nanmax(np.abs(grid - full) / full))
    print(f'per call, ms ({reps} interleaved calls each; {args.boxes} boxes, {W}x{H})')
    for name in names:
        v = sorted(times[name])
        p50, p90 = statistics.median(v), v[int(0.9 * (len(v) - 1))]
        row = res.add(variant=name, p50_ms=p50, p90_ms=p90, max_ms=v[-1], calls=len(v),
                      goal_ratio=p50 / GOAL_MS)
        print(f'  {name:22} p50 {p50:.3f}  p90 {p90:.3f}  max {v[-1]:.3f}  '
              f'p50 / goal {row["goal_ratio"]:.2f}')
    res.note(f'Goal (issue 37): <= {GOAL_MS} ms per frame for {args.boxes} boxes; '
             'goal ratio = p50 / goal.')
    res.note('Each call includes from_raw (the message bytes viewed in place) and the '
             'size checks; keypoints: 17 per box, a 5 x 5 window each.')
    res.note(f'Sampling error of the 32 x 32 grid against every core pixel (np.median): '
             f'at most {gap * 100:.3f} % of the distance over the {args.boxes} boxes.')
    if args.quick:
        res.note('--quick: few calls, a smoke run; not figures to publish.')
    res.write(['variant', 'p50_ms', 'p90_ms', 'max_ms', 'calls', 'goal_ratio'],
              ['variant', 'p50 ms', 'p90 ms', 'max ms', 'calls', 'p50 / 0.5 ms'])
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
