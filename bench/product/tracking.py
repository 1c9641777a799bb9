# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Tracking libraries compared: ids on exact truth, on the real video with drops, cost.

    ./run.sh exec python bench/product/tracking.py [--skip-video] [--skip-cost] [--skip-people]
                                                   [--cost-frames 300]
    ./run.sh exec python bench/product/tracking.py --import-only

Candidates: Roboflow's ``trackers`` (OC-SORT, ByteTrack, SORT) through
edge_infer.core.tracking (the node's interface, with its settings and the
nominal rate estimated from the stamps; also with the camera's rate given as
``frame_rate``, with a wrong one (30), OC-SORT with ``min_hits`` 1), with the
library's own thresholds, ByteTrack and SORT on the library's general Kalman
filter in place of core/tracking_filter.py's closed form, and ``norfair``
(its IoU distance; it counts frames, so it is stepped once per nominal frame
period that elapsed).
norfair is not in the pinned set (its metadata asks numpy < 2):
``pip install --no-deps norfair==2.3.0 filterpy==1.4.5`` to include it.

1. **Synthetic scenes with exact truth** (edge_infer.testing.track_scenes:
   crossing paths, a 2 s occlusion, objects entering and leaving, a car on a
   person's box), 15 fps with jittered stamps, 6 seeds, at full rate and with
   30 % of frames dropped at random: motmetrics' IDF1, MOTA, id switches, and
   ids shared by two objects (counted exactly: each box knows its object).
2. **The real video**: NanoDet (onnxruntime, CPU, one thread) on every frame
   of vtest.avi (10 fps), person boxes cached; tracked at full rate and with
   30 % of frames dropped at random (four drop seeds). IDF1 and id switches
   of the dropped run against the full-rate run's ids (same boxes, so
   matched exactly), ids per 100 person-boxes, track lengths (s) median /
   p90. ``[pixels]``: the candidates that re-associate by appearance, given
   the decoded frames (tracking_people.py).
3. **Cost**: one update with 20 objects in view, candidates interleaved
   frame by frame, p50 / p90 (ms).
5. **Real people** (tracking_people.py, ``--skip-people`` leaves it out):
   crossings, occlusions of 0.5-3 s, exits and re-entries of 1-5 s and two
   men dressed alike, made of people cut out of vtest.avi with exact truth;
   ByteTrack with and without re-association, norfair with and without its
   histogram ReID; and the cost of an update with 20 people in view, looks
   included.
4. ``--import-only``: what making the first tracker adds to a process that
   has already imported what the container imports (rclpy, cv2, openvino,
   the node modules): RSS, USS (psutil) and seconds, 3 fresh processes.

The table is printed and written to bench/results/<machine>/tracking_<date>.md
(``tracking_<date>_partial.md`` when a part is skipped or the seeds differ).
"""

import argparse
import datetime
import importlib.metadata as md
import pathlib
import sys
import tempfile
import time
from typing import Callable, Dict, List, Sequence, Tuple
import warnings

import benchlib
from edge_infer import paths
from edge_infer.core.tracking import CLOSED_FORM, make_tracker, SETTINGS
from edge_infer.testing import track_scenes as ts
import numpy as np
from packaging.requirements import Requirement
import tracking_people

Update = Callable[[np.ndarray, np.ndarray, np.ndarray, float], np.ndarray]
LOST_S = 3.0
#: Settings tried beside the node's (OC-SORT gives -1 to a confirmed track's box
#: until it has min_hits matches in a row again after a miss).
VARIANTS = {'ocsort': {'min_hits': 1}}


def candidates(fps: float) -> Dict[str, Callable[[], Update]]:
    """Return name -> a function making a fresh tracker's update (norfair where installed).

    The node's case: frame_rate left unset (estimated from the stamps). Beside
    it, the camera's rate given, and a wrong fixed rate (30 set, ``fps`` true).
    """
    out: Dict[str, Callable[[], Update]] = {}
    for name in SETTINGS:
        out[f'trackers {name}'] = lambda n=name: make_tracker(n, lost_track_s=LOST_S).update
        out[f'trackers {name} (library thresholds)'] = (
            lambda n=name: make_tracker(n, lost_track_s=LOST_S, min_hits=None, min_iou=None,
                                        high_score=None, new_track_score=None).update)
    for name in CLOSED_FORM:            # the library's general Kalman filter, as before
        out[f'trackers {name}, library filter'] = (
            lambda n=name: make_tracker(n, lost_track_s=LOST_S, closed_form=False).update)
    for name, extra in VARIANTS.items():
        out[f"trackers {name}, {', '.join(f'{k} {v}' for k, v in extra.items())}"] = (
            lambda n=name, e=extra: make_tracker(n, lost_track_s=LOST_S, **e).update)
    for name in SETTINGS:
        for label, rate in (('given', fps), ('30 set', 30.0)):
            out[f'trackers {name}, frame_rate {label}'] = (
                lambda n=name, r=rate: make_tracker(n, frame_rate=r, lost_track_s=LOST_S).update)
    try:
        import norfair  # noqa: F401
        out['norfair iou'] = lambda: tracking_people.Norfair(fps, reid=False).update
    except ImportError:
        print('norfair not installed: left out')
    return out


def licences() -> List[str]:
    """Return a Markdown row per library: version, licence, torch in its requirements."""
    rows = []
    for dist in ('trackers', 'supervision', 'norfair', 'filterpy', 'motmetrics'):
        try:
            meta = md.metadata(dist)
        except md.PackageNotFoundError:
            continue
        reqs = [Requirement(r) for r in md.requires(dist) or []]
        hard = sorted({r.name for r in reqs if r.marker is None or r.marker.evaluate()})
        torch = sorted({str(r.marker).split('==')[-1].strip(' "') for r in reqs
                        if r.name.startswith('torch')})
        lic = meta.get('License-Expression') or meta.get('License') or '?'
        rows.append(f"| {dist} {meta['Version']} | {lic[:40]} | {', '.join(hard)} | "
                    f"{'no' if not torch else 'only its extra ' + ', '.join(torch)} |")
    return rows


def synthetic(seeds: int = 6) -> List[str]:
    """Return the table rows of every candidate on every scene (both drop settings)."""
    rows = []
    for name, make in candidates(15.0).items():
        for scene, fn in ts.SCENES.items():
            for frac in (0.0, 0.3):
                agg: Dict[str, List[float]] = {}
                for seed in range(seeds):
                    frames = fn(seed)
                    frames = ts.drop(frames, frac, seed=100 + seed) if frac else frames
                    up = make()
                    ids = ts.run(lambda f: up(f.boxes, f.scores, f.classes, f.stamp), frames)
                    for k, v in ts.score(frames, ids).items():
                        agg.setdefault(k, []).append(v)
                rows.append(
                    f'| {name} | {scene} | {int(frac * 100)} % | '
                    f"{np.mean(agg['idf1']):.3f} (min {min(agg['idf1']):.3f}) | "
                    f"{np.mean(agg['mota']):.3f} | {int(sum(agg['mm_switches']))} | "
                    f"{int(sum(agg['shared']))} |")
    return rows


def video_detections(cache: pathlib.Path
                     ) -> Tuple[List[float], List[np.ndarray], List[np.ndarray]]:
    """Return stamps, person boxes and scores of every vtest.avi frame (NanoDet, cached)."""
    if cache.is_file():
        z = np.load(cache)
        n = z['stamps'].shape[0]
        return (z['stamps'].tolist(), [z[f'b{i}'] for i in range(n)],
                [z[f's{i}'] for i in range(n)])
    import cv2
    from edge_infer.backends.libs.ort import OrtBackend
    from edge_infer.core.image import Frame
    from edge_infer.core.model import open_model
    from edge_infer.core.registry import load_registry
    spec = load_registry(paths.config_dir() / 'models.yaml')['nanodet']
    model = open_model(spec, OrtBackend(intra_op_threads=1))
    cap = cv2.VideoCapture(str(paths.cache_dir() / 'vtest.avi'))
    fps = cap.get(cv2.CAP_PROP_FPS) or 10.0
    stamps, boxes, scores = [], [], []
    while True:
        ok, img = cap.read()
        if not ok:
            break
        det = model.infer(Frame(img, 'bgr')).output
        person = det.class_ids == 0
        stamps.append(len(stamps) / fps)
        boxes.append(det.boxes[person].astype(np.float32))
        scores.append(det.scores[person].astype(np.float32))
    model.close()
    arrays = {f'b{i}': b for i, b in enumerate(boxes)}
    arrays.update({f's{i}': s for i, s in enumerate(scores)})
    np.savez(cache, stamps=np.array(stamps), **arrays)
    return stamps, boxes, scores


def lengths(stamps: List[float], ids: List[np.ndarray]) -> np.ndarray:
    """Return each id's span in seconds (first box to last)."""
    first: Dict[int, float] = {}
    last: Dict[int, float] = {}
    for t, row in zip(stamps, ids):
        for i in row[row >= 0].tolist():
            first.setdefault(i, t)
            last[i] = t
    return np.array([last[i] - first[i] for i in first]) if first else np.zeros(1)


def _frames(path: pathlib.Path, wanted) -> Dict[int, object]:
    """Return the video's frames ``wanted`` (indices) as Frames, decoded in one pass."""
    import cv2
    from edge_infer.core.image import Frame
    cap, out, k = cv2.VideoCapture(str(path)), {}, 0
    wanted = {int(i) for i in wanted}
    while True:
        ok, img = cap.read()
        if not ok:
            break
        if k in wanted:
            out[k] = Frame(img, 'bgr')
        k += 1
    return out


def video(cache: pathlib.Path, drop: float = 0.3, seeds: Sequence[int] = (7, 8, 9, 10)
          ) -> List[str]:
    """Return the table rows of every candidate on the video: full rate vs 30 % dropped.

    Each drop seed removes other frames; IDF1 and switches are given per seed
    (mean, min) and the per-run figures for the first seed. The candidates
    that look at pixels (re-association) get the decoded frames.
    """
    import motmetrics as mm
    stamps, boxes, scores = video_detections(cache)
    fps = 1.0 / (stamps[1] - stamps[0])
    n_boxes = sum(len(b) for b in boxes)
    rows = [f'{len(stamps)} frames, {n_boxes} person boxes; drop seeds {list(seeds)}.', '']
    cands = {**candidates(fps), **{f'{k} [pixels]': v for k, v in
                                   tracking_people.candidates(fps).items() if 'reid' in k}}
    images: Dict[int, object] = {}
    for name, make in cands.items():
        looks = name.endswith('[pixels]')
        if looks and not images:
            images = _frames(paths.cache_dir() / 'vtest.avi', range(len(stamps)))

        def run(kept, up=None):
            up = make()
            return {int(k): (up(boxes[k], scores[k], np.zeros(len(boxes[k]), np.int64), stamps[k],
                                images[int(k)]) if looks else
                             up(boxes[k], scores[k], np.zeros(len(boxes[k]), np.int64), stamps[k]))
                    for k in kept}

        full = run(range(len(stamps)))
        idf1, switches, cells = [], [], []
        for seed in seeds:
            keep = np.random.default_rng(seed).random(len(stamps)) >= drop
            keep[0] = True
            kept = np.flatnonzero(keep)
            part = run(kept)
            acc = mm.MOTAccumulator(auto_id=True)
            for k in kept:
                a, b = full[int(k)], part[int(k)]
                ra, rb = np.flatnonzero(a >= 0), np.flatnonzero(b >= 0)
                acc.update(a[ra].tolist(), b[rb].tolist(),
                           np.where(ra[:, None] == rb[None, :], 0.0, np.nan))
            sc = mm.metrics.create().compute(acc, metrics=['idf1', 'num_switches'], name='v')
            idf1.append(float(sc['idf1'].iloc[0]))
            switches.append(int(sc['num_switches'].iloc[0]))
            if cells:
                continue
            for run_ids, run_stamps in (([full[k] for k in range(len(stamps))], stamps),
                                        ([part[int(k)] for k in kept],
                                         [stamps[k] for k in kept])):
                boxes_n = sum(len(r) for r in run_ids)
                distinct = len({i for r in run_ids for i in r.tolist() if i >= 0})
                with_id = sum(int((r >= 0).sum()) for r in run_ids)
                span = lengths(run_stamps, run_ids)
                cells.append(f'{100.0 * distinct / max(1, boxes_n):.2f} / '
                             f'{100.0 * with_id / max(1, boxes_n):.0f} % / '
                             f'{np.median(span):.1f} / {np.percentile(span, 90):.1f}')
        per_seed = ' '.join(f'{v:.3f}' for v in idf1)
        rows.append(f'| {name} | {np.mean(idf1):.3f} (min {min(idf1):.3f}) | '
                    f'{per_seed} | {np.mean(switches):.1f} | '
                    f'{cells[0]} | {cells[1]} |')
    return rows


def cost(frames_n: int, classes: int = 1) -> List[str]:
    """Return p50 / p90 ms of one update with 20 objects, candidates interleaved."""
    rng = np.random.default_rng(5)
    walkers = [ts.Walker(i + 1, i % classes, float(rng.uniform(50, 700)),
                         float(rng.uniform(80, 500)),
                         float(rng.uniform(-60, 60)), float(rng.uniform(-30, 30)))
               for i in range(20)]
    frames = ts.render(walkers, frames_n / 15.0, fps=15.0, miss=0.0, seed=5)
    cands = candidates(15.0)
    ups = {name: make() for name, make in cands.items()}
    times: Dict[str, List[float]] = {name: [] for name in cands}
    order = list(cands)
    for k, f in enumerate(frames):
        for name in order[k % len(order):] + order[:k % len(order)]:
            t0 = time.perf_counter()
            ups[name](f.boxes, f.scores, f.classes, f.stamp)
            times[name].append((time.perf_counter() - t0) * 1e3)
    n_in_view = int(np.median([len(f.boxes) for f in frames]))
    return [f'| {name} | {n_in_view} in {classes} class(es) | '
            f'{np.percentile(v[10:], 50):.3f} | {np.percentile(v[10:], 90):.3f} |'
            for name, v in times.items()]


IMPORT_PROBE = """
import sys, time, psutil
import numpy, cv2, rclpy, openvino, yaml
import edge_infer.nodes.perception_node, edge_infer.nodes.container_entry
p = psutil.Process()
a = p.memory_full_info()
t = time.perf_counter()
from edge_infer.core.tracking import make_tracker
make_tracker('bytetrack')
dt = time.perf_counter() - t
b = p.memory_full_info()
print((b.rss - a.rss) / 2**20, (b.uss - a.uss) / 2**20, dt)
"""


def import_cost(runs: int = 3) -> List[str]:
    """Return what making the first tracker adds to a process that has the container's imports."""
    import subprocess
    rows = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, '-c', IMPORT_PROBE], capture_output=True,
                             text=True, check=True).stdout.split()
        rss, uss, sec = (float(v) for v in out[-3:])
        rows.append(f'| {rss:.0f} | {uss:.0f} | {sec:.2f} |')
    return rows


def main() -> None:
    """Run the comparison, print it and write it under bench/results/<machine>/."""
    warnings.simplefilter('ignore')       # the libraries' notices, once per tracker
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--skip-video', action='store_true')
    ap.add_argument('--skip-cost', action='store_true')
    ap.add_argument('--skip-people', action='store_true')
    ap.add_argument('--cost-frames', type=int, default=300)
    ap.add_argument('--import-only', action='store_true',
                    help='only what the first tracker adds to a process (RSS, USS, seconds)')
    ap.add_argument('--seeds', type=int, default=6)
    ap.add_argument('--cache', type=pathlib.Path,
                    default=pathlib.Path(tempfile.gettempdir()) / 'edge_infer_tracking_vtest.npz')
    args = ap.parse_args()
    if args.import_only:
        print('| RSS added (MB) | USS added (MB) | seconds |\n|---|---|---|\n'
              + '\n'.join(import_cost()))
        return
    lines = [f'# Tracking libraries compared ({datetime.date.today()})', '',
             f'`python bench/product/tracking.py {" ".join(sys.argv[1:])}`', '',
             ', '.join(f'{k}: {v}' for k, v in benchlib.machine_record().items()), '',
             '| library | licence | requires | torch |', '|---|---|---|---|', *licences(), '',
             '## Synthetic scenes (6 seeds each; IDF1 mean and min, MOTA mean, totals)', '',
             '| candidate | scene | dropped | IDF1 | MOTA | id switches | shared ids |',
             '|---|---|---|---|---|---|---|', *synthetic(args.seeds)]
    if not args.skip_video:
        rows = video(args.cache)
        lines += ['', '## vtest.avi: 30 % dropped vs full rate (NanoDet person boxes)', '',
                  'Per run (first drop seed): ids per 100 person-boxes / boxes with an id / '
                  'track length (s) median / p90. ' + rows[0], '',
                  '| candidate | IDF1 vs full rate, mean (min) | per seed | id switches, mean '
                  '| full rate | 30 % dropped |', '|---|---|---|---|---|---|', *rows[2:]]
    if not args.skip_people:
        video_file = str(paths.cache_dir() / 'vtest.avi')
        lines += ['', '## Real people: crossings, occlusions, exits (tracking_people.py, '
                  f'{min(args.seeds, 3)} seeds each)', '', *tracking_people.SCENES_HEAD,
                  *tracking_people.scenes(video_file, min(args.seeds, 3))]
        if not args.skip_cost:
            lines += ['', '## Cost of one update with 20 people in view, looks included '
                      '(ms, interleaved)', '', *tracking_people.COST_HEAD,
                      *tracking_people.cost(video_file, args.cost_frames)]
    if not args.skip_cost:
        lines += ['', '## Cost of one update (ms, interleaved)', '',
                  '| candidate | objects | p50 | p90 |', '|---|---|---|---|',
                  *cost(args.cost_frames), *cost(args.cost_frames, classes=4)]
    text = '\n'.join(lines) + '\n'
    print(text)
    partial = args.skip_video or args.skip_cost or args.skip_people or args.seeds != 6
    out = (benchlib.BENCH_DIR / 'results' / benchlib.machine_slug()
           / f"tracking_{datetime.date.today():%Y%m%d}{'_partial' if partial else ''}.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f'written: {benchlib.shown_path(str(out))}')


if __name__ == '__main__':
    main()
