# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Tracking real people: ids through crossings, occlusions and exits, with and without looks.

    ./run.sh exec python bench/product/tracking_people.py [--seeds 3] [--cost-frames 300]

Part of bench/product/tracking.py's comparison (it runs this too); alone here
for the re-association work. Scenes: edge_infer.testing.reid_scenes (people
cut out of vtest.avi, pasted walking on its background with exact truth;
detections are the boxes of their visible parts). Candidates, each given the
frame's pixels:

- ``trackers bytetrack``: the node's ByteTrack with re-association off
  (``reid_window_s`` 0): ids from motion and overlap only;
- ``trackers bytetrack + reid``: the node's default (core/reid.py: colour
  histograms of torso and legs, gates, the margin rule);
- ``norfair iou`` and ``norfair iou + histogram reid``: norfair 2.3.0 with
  its ReID hook (``reid_distance_function``) fed a colour histogram of the
  box, as its ReID demo does (Lab, 1 - correlation, threshold 0.5; a dead
  object is kept ``reid_window_s`` for it).

Per scene: IDF1 (motmetrics), id switches and ids shared by two people
(exact), and returns (a person unseen 0.9 s or more, then seen) that got
their old id. 30 % dropped: frames removed at random, as a loaded node does.
``alike_*`` are the refusal scenes: two men dressed alike, where a wrong id
would show as a shared id.
"""

import argparse
import time
from typing import Callable, Dict, List
import warnings

import cv2
from edge_infer import paths
from edge_infer.core.image import Frame
from edge_infer.core.tracking import make_tracker
from edge_infer.testing import reid_scenes as rs
from edge_infer.testing import track_scenes as ts
import numpy as np

Update = Callable[[np.ndarray, np.ndarray, np.ndarray, float, Frame], np.ndarray]
LOST_S, WINDOW_S = 3.0, 10.0


def _hist(frame: Frame, box) -> np.ndarray:
    """Return norfair's demo kind of look: a 2D Lab histogram of the box, normalised."""
    x1, y1, x2, y2 = (int(round(v)) for v in box)
    crop = frame.pixels[max(0, y1):max(y1 + 1, y2), max(0, x1):max(x1 + 1, x2)]
    hist = cv2.calcHist([cv2.cvtColor(crop, cv2.COLOR_BGR2Lab)], [0, 1], None, [128, 128],
                        [0, 256, 0, 256])
    return cv2.normalize(hist, hist).flatten()


def _look_distance(new, old) -> float:
    """Return 1 - correlation of ``new``'s last look with ``old``'s looks (the nearest)."""
    look = new.last_detection.embedding
    if look is None:
        return 1.0
    best = 1.0
    for det in [old.last_detection, *old.past_detections]:
        if det.embedding is not None:
            best = min(best, 1.0 - cv2.compareHist(look, det.embedding, cv2.HISTCMP_CORREL))
    return best


class Norfair:
    """norfair's Tracker behind the node's interface: one step per nominal frame period."""

    def __init__(self, fps: float, reid: bool):
        import norfair
        self.nf, self.period, self.reid = norfair, 1.0 / fps, reid
        extra = {'reid_distance_function': _look_distance, 'reid_distance_threshold': 0.5,
                 'reid_hit_counter_max': int(WINDOW_S * fps), 'past_detections_length': 5
                 } if reid else {}
        self.tracker = norfair.Tracker(distance_function='iou', distance_threshold=0.9,
                                       hit_counter_max=max(2, round(LOST_S * fps)),
                                       initialization_delay=1, **extra)
        self.last = None

    def update(self, boxes, scores, classes, stamp, frame=None):
        """Step over the frames that elapsed, then match this one's boxes (``frame``: looks)."""
        steps = 1 if self.last is None else max(1, round((stamp - self.last) / self.period))
        self.last = stamp
        for _ in range(steps - 1):
            self.tracker.update([])
        dets = [self.nf.Detection(points=b.reshape(2, 2).astype(float), scores=np.array([s, s]),
                                  label=int(c),
                                  embedding=_hist(frame, b) if self.reid else None)
                for b, s, c in zip(boxes, scores, classes)]
        out = np.full(len(dets), -1, dtype=np.int64)
        index = {id(d): i for i, d in enumerate(dets)}
        for obj in self.tracker.update(dets):
            i = index.get(id(obj.last_detection))
            if i is not None and obj.id is not None:
                out[i] = obj.id
        return out


def candidates(fps: float) -> Dict[str, Callable[[], Update]]:
    """Return name -> a function making a fresh tracker's update (norfair where installed)."""
    out: Dict[str, Callable[[], Update]] = {
        'trackers bytetrack': lambda: make_tracker('bytetrack', lost_track_s=LOST_S,
                                                   reid_window_s=0).update,
        'trackers bytetrack + reid (node default)': lambda: make_tracker(
            'bytetrack', lost_track_s=LOST_S, reid_window_s=WINDOW_S).update,
    }
    try:
        import norfair  # noqa: F401
        out['norfair iou'] = lambda: Norfair(fps, reid=False).update
        out['norfair iou + histogram reid'] = lambda: Norfair(fps, reid=True).update
    except ImportError:
        print('norfair not installed (pip install --no-deps norfair==2.3.0 filterpy==1.4.5): '
              'left out')
    return out


def _run(update: Update, frames: List[ts.SceneFrame]) -> List[np.ndarray]:
    return [np.asarray(update(f.boxes, f.scores, f.classes, f.stamp,
                              Frame(f.image(), 'bgr')), dtype=np.int64) for f in frames]


def scenes(video: str, seeds: int = 3) -> List[str]:
    """Return the table rows: every candidate on every scene, full rate and 30 % dropped."""
    rows = []
    cands = candidates(rs.FPS)
    for scene, make in {**rs.SCENES, **rs.ALIKE}.items():
        runs = {}
        for seed in range(seeds):
            frames = make().frames(video, seed=seed)
            runs[seed] = (frames, ts.drop(frames, 0.3, seed=100 + seed))
        for name, new in cands.items():
            for k, label in ((0, 'full'), (1, '30 %')):
                idf1, switches, shared, back, returns = [], 0, 0, 0, 0
                for seed in range(seeds):
                    frames = runs[seed][k]
                    ids = _run(new(), frames)
                    s = ts.score(frames, ids)
                    r, kept = rs.reentries(frames, ids)
                    idf1.append(s.get('idf1', float('nan')))
                    switches += s['switches']
                    shared += s['shared']
                    returns += r
                    back += kept
                rows.append(f'| {scene} | {name} | {label} | {np.mean(idf1):.3f} '
                            f'(min {min(idf1):.3f}) | {switches} | {shared} | '
                            f'{back}/{returns} |')
    return rows


def crowd(n: int = 20, seconds: float = 20.0) -> rs.Scene:
    """Return ``n`` people in view at once: rows of five, strolling apart (the cost scene)."""
    names = list(rs.SPRITES)
    actors = []
    for i in range(n):
        row, col = divmod(i, 5)
        x, feet = 70.0 + 150.0 * col, 150.0 + 140.0 * row
        drift = 6.0 if row % 2 else -6.0
        actors.append(rs.Actor(i + 1, names[i % len(names)],
                               [(0.0, x, feet), (seconds, x + drift * seconds, feet)]))
    return rs.Scene(actors, seconds)


def cost(video: str, frames_n: int) -> List[str]:
    """Return p50 / p90 ms of one update with ~20 people in view, candidates interleaved."""
    frames = crowd(seconds=frames_n / rs.FPS).frames(video, seed=5, miss=0.0)
    images = [Frame(f.image(), 'bgr') for f in frames]
    cands = candidates(rs.FPS)
    ups = {name: make() for name, make in cands.items()}
    times: Dict[str, List[float]] = {name: [] for name in cands}
    order = list(cands)
    for k, (f, img) in enumerate(zip(frames, images)):
        for name in order[k % len(order):] + order[:k % len(order)]:
            t0 = time.perf_counter()
            ups[name](f.boxes, f.scores, f.classes, f.stamp, img)
            times[name].append((time.perf_counter() - t0) * 1e3)
    in_view = int(np.median([len(f.boxes) for f in frames]))
    return [f'| {name} | {in_view} | {np.percentile(v[10:], 50):.3f} | '
            f'{np.percentile(v[10:], 90):.3f} | {max(v[10:]):.3f} |' for name, v in times.items()]


SCENES_HEAD = ['| scene | candidate | frames | IDF1 mean (min) | id switches | shared ids | '
               'returns with their old id |', '|---|---|---|---|---|---|---|']
COST_HEAD = ['| candidate | people in view (median) | p50 ms | p90 ms | max ms |',
             '|---|---|---|---|---|']


def main() -> None:
    """Print the people scenes' table and the cost with looks."""
    warnings.simplefilter('ignore')
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--seeds', type=int, default=3)
    ap.add_argument('--cost-frames', type=int, default=300)
    args = ap.parse_args()
    video = str(paths.cache_dir() / 'vtest.avi')
    print('\n'.join(SCENES_HEAD + scenes(video, args.seeds)))
    print('\n'.join([''] + COST_HEAD + cost(video, args.cost_frames)))


if __name__ == '__main__':
    main()
