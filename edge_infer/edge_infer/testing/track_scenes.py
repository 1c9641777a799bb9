# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Synthetic tracking scenes with exact truth, and the scores of a tracker's ids on them.

Each scene is a list of :class:`SceneFrame`: the frame's stamp, the boxes a
detector would give (truth plus pixel noise, a few misses), their scores,
classes and the true object id of each box. Scenes: ``crossing`` (two pairs
of people whose paths cross), ``occlusion`` (one walks behind something for
2 s), ``enter_leave`` (people and cars come in and go out at the edges, a car
with the same box as a person), and :func:`drop` removes frames at random as a
node under load does. :func:`score` runs the metrics: IDF1, MOTA and id
switches from motmetrics (1.4.0) where it is installed, and its own exact
counts (each box knows its object, so no matching is needed).
"""

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np


@dataclass
class SceneFrame:
    """One frame's detections and their truth."""

    stamp: float
    boxes: np.ndarray       # N x 4 float32, x1 y1 x2 y2
    scores: np.ndarray      # N float32
    classes: np.ndarray     # N int64
    truth: np.ndarray       # N int64: the object each box is
    missed: Tuple[int, ...] = ()    # visible objects the detector missed (misses)


@dataclass
class Walker:
    """An object moving in a straight line, visible between ``t0`` and ``t1``."""

    oid: int
    cls: int
    x: float                    # centre at t0
    y: float
    vx: float                   # pixels per second
    vy: float
    w: float = 40.0
    h: float = 100.0
    t0: float = 0.0
    t1: float = 1e9
    hidden: Sequence[float] = ()    # (start, end) of an occlusion


def render(walkers: List[Walker], duration_s: float, fps: float = 15.0, seed: int = 0,
           noise_px: float = 1.5, miss: float = 0.02, jitter_s: float = 0.004) -> List[SceneFrame]:
    """Return the frames of ``walkers`` seen by a camera at ``fps`` (stamps jittered)."""
    rng = np.random.default_rng(seed)
    base = {wk.oid: float(rng.uniform(0.5, 0.9)) for wk in walkers}   # each object's score
    frames = []
    for k in range(int(duration_s * fps)):
        t = k / fps + float(rng.uniform(-jitter_s, jitter_s))
        rows, scores, truth, classes, missed = [], [], [], [], []
        for wk in walkers:
            if not wk.t0 <= t <= wk.t1:
                continue
            if len(wk.hidden) == 2 and wk.hidden[0] <= t < wk.hidden[1]:
                continue
            if rng.random() < miss:
                missed.append(wk.oid)
                continue
            dt = t - wk.t0
            cx, cy = wk.x + wk.vx * dt, wk.y + wk.vy * dt
            box = np.array([cx - wk.w / 2, cy - wk.h / 2, cx + wk.w / 2, cy + wk.h / 2])
            rows.append(box + rng.normal(0.0, noise_px, 4))
            scores.append(min(0.99, max(0.36, base[wk.oid] + float(rng.normal(0.0, 0.06)))))
            truth.append(wk.oid)
            classes.append(wk.cls)
        n = len(rows)
        frames.append(SceneFrame(
            t, np.array(rows, dtype=np.float32).reshape(n, 4),
            np.array(scores, dtype=np.float32),
            np.array(classes, dtype=np.int64), np.array(truth, dtype=np.int64), tuple(missed)))
    return frames


def crossing(seed: int = 0) -> List[SceneFrame]:
    """Return two pairs of people walking through each other (same class)."""
    return render([
        Walker(1, 0, 100, 300, 110, 0), Walker(2, 0, 700, 310, -110, 0),
        Walker(3, 0, 150, 100, 90, 60), Walker(4, 0, 650, 100, -90, 60),
    ], 6.0, seed=seed)


def occlusion(seed: int = 0) -> List[SceneFrame]:
    """Return a person hidden for 2 s mid-walk, and one passing the other way."""
    return render([
        Walker(1, 0, 80, 300, 80, 0, hidden=(2.0, 4.0)),
        Walker(2, 0, 700, 120, -70, 10),
    ], 7.0, seed=seed)


def enter_leave(seed: int = 0) -> List[SceneFrame]:
    """Return people and cars entering and leaving; car 7 has person 6's box."""
    return render([
        Walker(1, 0, -20, 200, 120, 0, t0=0.0, t1=4.0),
        Walker(2, 0, 780, 260, -100, 0, t0=1.0, t1=6.0),
        Walker(3, 2, -40, 420, 150, 0, w=120, h=60, t0=2.0, t1=6.5),
        Walker(4, 0, 400, 600, 0, -90, t0=3.0, t1=8.0),
        Walker(5, 2, 820, 480, -160, 0, w=120, h=60, t0=5.0, t1=9.5),
        Walker(6, 0, 200, 150, 60, 20, t0=6.0, t1=10.0),
        Walker(7, 2, 200, 150, 60, 20, t0=6.0, t1=10.0),
    ], 10.0, seed=seed)


SCENES: Dict[str, Callable[[int], List[SceneFrame]]] = {
    'crossing': crossing, 'occlusion': occlusion, 'enter_leave': enter_leave}


def drop(frames: List[SceneFrame], fraction: float, seed: int = 1) -> List[SceneFrame]:
    """Return ``frames`` less a random ``fraction`` of them (the first kept)."""
    rng = np.random.default_rng(seed)
    keep = rng.random(len(frames)) >= fraction
    keep[0] = True
    return [f for f, k in zip(frames, keep) if k]


def run(update: Callable[[SceneFrame], np.ndarray], frames: List[SceneFrame]) -> List[np.ndarray]:
    """Return the ids ``update`` gives each frame's boxes."""
    return [np.asarray(update(f), dtype=np.int64) for f in frames]


def exact_counts(frames: List[SceneFrame], ids: List[np.ndarray]) -> Dict[str, int]:
    """Return id switches, ids shared by two objects, and boxes left without an id.

    A switch: an object's id (-1 skipped) differs from the id it had last.
    """
    last: Dict[int, int] = {}
    owner: Dict[int, int] = {}
    switches = shared = unassigned = 0
    for f, hyp in zip(frames, ids):
        for oid, tid in zip(f.truth.tolist(), hyp.tolist()):
            if tid < 0:
                unassigned += 1
                continue
            if oid in last and last[oid] != tid:
                switches += 1
            last[oid] = tid
            if owner.setdefault(tid, oid) != oid:
                shared += 1
    return {'switches': switches, 'shared': shared, 'unassigned': unassigned,
            'ids': len(owner), 'objects': len(last)}


def motmetrics_scores(frames: List[SceneFrame], ids: List[np.ndarray]) -> Optional[Dict]:
    """Return motmetrics' IDF1, MOTA and id switches (None without motmetrics).

    The truth is every visible object, missed ones included; a box's id is
    matched to its own object only (distance 0), so the scores judge the
    ids, not the boxes.
    """
    try:
        import motmetrics as mm
    except ImportError:
        return None
    acc = mm.MOTAccumulator(auto_id=True)
    for f, hyp in zip(frames, ids):
        keep = hyp >= 0
        gt = f.truth.tolist() + list(f.missed)      # a missed object: never matched
        dist = np.full((len(gt), int(keep.sum())), np.nan)
        rows = np.flatnonzero(keep)
        for j, r in enumerate(rows):
            dist[r, j] = 0.0
        acc.update(gt, hyp[keep].tolist(), dist)
    s = mm.metrics.create().compute(acc, metrics=['idf1', 'mota', 'num_switches'], name='x')
    return {'idf1': float(s['idf1'].iloc[0]), 'mota': float(s['mota'].iloc[0]),
            'switches': int(s['num_switches'].iloc[0])}


def score(frames: List[SceneFrame], ids: List[np.ndarray]) -> Dict:
    """Return the exact counts and, where motmetrics is installed, its scores."""
    out: Dict = dict(exact_counts(frames, ids))
    mm = motmetrics_scores(frames, ids)
    if mm is not None:
        out.update({'idf1': mm['idf1'], 'mota': mm['mota'], 'mm_switches': mm['switches']})
    return out
