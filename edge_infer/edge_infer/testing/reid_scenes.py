# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Tracking scenes made of real people, with exact truth: crossings, occlusions, exits.

Eight pedestrians were cut out of OpenCV's ``vtest.avi`` (a real street
video, 768x576): each at a frame where NanoDet found them alone (score
>= 0.67), their silhouette the pixels that differ from the video's median
background. A scene pastes them walking on that background, in front of
each other by depth (the lower feet nearer), and behind a pillar cut from the
video's own building, at 15 fps with jittered stamps. Each frame's
detections are the boxes of the visible part of the people at least half
visible (their silhouette pixels counted after pasting), with 1.5 px of noise and 2 % missed
(the truth: those visible, missed or not), so the truth is exact, and the
pixels a tracker's appearance sees are real.

Scenes (:data:`SCENES`): crossings (one passes behind the other; side by
side, meeting face to face, an overtaking at the same depth), occlusions
of 0.5-3 s behind the pillar, exits and re-entries of 1-5 s, the held-out
kind (a crossing with a 1 s occlusion, then an exit of 4 s), and
``alike_*``: two different people in the same dark jacket and jeans, where a
returning person must not be given the other's id. :func:`reentries` scores
the share of returns that got their old id back.
"""

from dataclasses import dataclass
import functools
import pathlib
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import cv2
import numpy as np

from .track_scenes import SceneFrame

#: name -> (vtest.avi frame, box x1 y1 x2 y2) of a person alone in view.
SPRITES = {
    'red_jacket': (440, (616, 256, 649, 354)),
    'red_blue': (600, (452, 301, 506, 421)),
    'blonde_black': (600, (283, 429, 339, 576)),
    'black_black': (400, (687, 298, 743, 412)),
    'dark_jeans': (200, (616, 265, 651, 369)),
    'dark_jeans_2': (480, (464, 238, 506, 333)),    # another man, dressed alike
    'black_white': (640, (645, 209, 681, 304)),
    'grey_jeans': (520, (488, 207, 524, 304)),
}
#: The pillar: a strip of the building's brick wall, pasted in front of the people.
PILLAR_SOURCE = (330, 0, 400, 100)
FPS = 15.0
SIZE = (768, 576)
SCALE = 1.4         # the people a little nearer than in the video


@dataclass
class Sprite:
    """A person's pixels (BGR) and silhouette (bool), at the scene's scale."""

    pixels: np.ndarray
    mask: np.ndarray


@dataclass
class Actor:
    """A person walking through waypoints (t, centre x, feet y); absent outside them."""

    oid: int
    sprite: str
    path: Sequence[Tuple[float, float, float]]

    def where(self, t: float) -> Optional[Tuple[float, float, bool]]:
        """Return (centre x, feet y, facing left) at ``t``, or None outside the path."""
        pts = self.path
        if not pts[0][0] <= t <= pts[-1][0]:
            return None
        for (t0, x0, y0), (t1, x1, y1) in zip(pts, pts[1:]):
            if t0 <= t <= t1:
                a = (t - t0) / max(1e-9, t1 - t0)
                return x0 + a * (x1 - x0), y0 + a * (y1 - y0), x1 < x0
        return None


def _video(path: pathlib.Path) -> List[np.ndarray]:
    """Return every 8th frame of the video and the frames the sprites come from."""
    cap = cv2.VideoCapture(str(path))
    want = {f for f, _ in SPRITES.values()}
    frames, picked, k = [], {}, 0
    while True:
        ok, img = cap.read()
        if not ok:
            break
        if k % 8 == 0:
            frames.append(img)
        if k in want:
            picked[k] = img
        k += 1
    cap.release()
    if not frames or len(picked) < len(want):
        raise FileNotFoundError(f'{path}: not the vtest.avi these scenes are cut from')
    background = np.median(np.stack(frames), axis=0).astype(np.uint8)
    return [background] + [picked[f] for f in sorted(picked)]


@functools.lru_cache(maxsize=2)
def material(video: str) -> Tuple[np.ndarray, Dict[str, Sprite], np.ndarray]:
    """Return the background, the sprites and the pillar, cut from ``video`` (vtest.avi)."""
    background, *picked = _video(pathlib.Path(video))
    by_frame = dict(zip(sorted({f for f, _ in SPRITES.values()}), picked))
    sprites = {}
    kernel = np.ones((3, 3), np.uint8)
    for name, (f, (x1, y1, x2, y2)) in SPRITES.items():
        crop = by_frame[f][y1:y2, x1:x2]
        diff = np.abs(crop.astype(np.int16) - background[y1:y2, x1:x2]).max(axis=2)
        mask = cv2.morphologyEx((diff > 30).astype(np.uint8), cv2.MORPH_CLOSE, kernel)
        size = (int(round((x2 - x1) * SCALE)), int(round((y2 - y1) * SCALE)))
        sprites[name] = Sprite(cv2.resize(crop, size, interpolation=cv2.INTER_LINEAR),
                               cv2.resize(mask, size, interpolation=cv2.INTER_NEAREST) > 0)
    x1, y1, x2, y2 = PILLAR_SOURCE
    pillar = cv2.resize(background[y1:y2, x1:x2], (x2 - x1, 400))
    return background, sprites, pillar


class Scene:
    """Actors, an optional pillar (left x, width), and the frames a camera at 15 fps gives."""

    def __init__(self, actors: List[Actor], duration_s: float,
                 pillar: Optional[Tuple[int, int]] = None):
        self.actors, self.duration_s, self.pillar = actors, duration_s, pillar

    def image(self, video: str, t: float
              ) -> Tuple[np.ndarray, Dict[int, Tuple[np.ndarray, float]]]:
        """Return the frame at ``t`` and each actor's visible (box, share of its body) in it."""
        background, sprites, pillar = material(video)
        img = background.copy()
        owner = np.zeros(img.shape[:2], dtype=np.int32)
        placed = []
        for a in self.actors:
            at = a.where(t)
            if at is not None:
                placed.append((at[1], a, at))
        boxes = {}
        for _, a, (cx, feet, left) in sorted(placed, key=lambda p: p[0]):  # far ones first
            sp = sprites[a.sprite]
            pix, mask = (sp.pixels[:, ::-1], sp.mask[:, ::-1]) if left else (sp.pixels, sp.mask)
            h, w = mask.shape
            x1, y1 = int(round(cx - w / 2)), int(round(feet - h))
            sx0, sy0 = max(0, -x1), max(0, -y1)
            sx1, sy1 = min(w, SIZE[0] - x1), min(h, SIZE[1] - y1)
            if sx1 <= sx0 or sy1 <= sy0:
                continue
            m = mask[sy0:sy1, sx0:sx1]
            region = (slice(y1 + sy0, y1 + sy1), slice(x1 + sx0, x1 + sx1))
            img[region][m] = pix[sy0:sy1, sx0:sx1][m]
            owner[region][m] = a.oid
            boxes[a.oid] = (np.array([x1, y1, x1 + w, y1 + h], dtype=np.float64),
                            float(mask.sum()))
        if self.pillar is not None:
            x, width = self.pillar
            img[SIZE[1] - 400:, x:x + width] = cv2.resize(pillar, (width, 400))
            owner[SIZE[1] - 400:, x:x + width] = 0
        out = {}
        for oid, (box, total) in boxes.items():
            ys, xs = np.nonzero(owner == oid)
            if len(xs):     # what a detector boxes: the visible part
                out[oid] = (np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1],
                                     dtype=np.float64), len(xs) / total)
        return img, out

    def frames(self, video: str, seed: int = 0, noise_px: float = 1.5,
               miss: float = 0.02) -> List[SceneFrame]:
        """Return the detections of every frame; each frame's ``image()`` gives its pixels."""
        rng = np.random.default_rng(seed)
        base = {a.oid: float(rng.uniform(0.6, 0.9)) for a in self.actors}
        out = []
        for k in range(int(self.duration_s * FPS)):
            t = k / FPS + float(rng.uniform(-0.004, 0.004))
            _, seen = self.image(video, t)
            rows, scores, truth, missed = [], [], [], []
            for oid, (box, visible) in sorted(seen.items()):
                if visible < 0.5:       # hidden: not expected of a detector (no truth)
                    continue
                if rng.random() < miss:
                    missed.append(oid)
                    continue
                rows.append(box + rng.normal(0.0, noise_px, 4))
                scores.append(min(0.99, max(0.36, base[oid] + float(rng.normal(0.0, 0.06)))))
                truth.append(oid)
            n = len(rows)
            f = SceneFrame(t, np.array(rows, dtype=np.float32).reshape(n, 4),
                           np.array(scores, dtype=np.float32), np.zeros(n, dtype=np.int64),
                           np.array(truth, dtype=np.int64), tuple(missed))
            f.image = functools.partial(self._pixels, video, t)     # type: ignore[attr-defined]
            out.append(f)
        return out

    def _pixels(self, video: str, t: float) -> np.ndarray:
        return self.image(video, t)[0]


def _walk(oid, sprite, y, x0, x1, t0, t1) -> Actor:
    return Actor(oid, sprite, [(t0, x0, y), (t1, x1, y)])


def crossing(behind: str = 'red_jacket', front: str = 'dark_jeans', seconds: float = 8.0
             ) -> Scene:
    """Two people walk through each other, one behind the other (longer the slower they go)."""
    return Scene([_walk(1, behind, 400, 60, 700, 0.0, seconds),
                  _walk(2, front, 430, 720, 80, 0.0, seconds)], seconds)


def occlusion(hidden_s: float) -> Scene:
    """One walks behind the pillar, hidden for ``hidden_s``; another walks the other way, apart."""
    width = max(70, int(round(50 * hidden_s)))      # hidden while half or more is behind it
    speed = width / hidden_s
    dur = 4.0 + hidden_s + 3.0
    x_mid = 384 + width / 2
    return Scene([_walk(1, 'red_blue', 470, x_mid - speed * (2.0 + hidden_s / 2),
                        x_mid + speed * (dur - 2.0 - hidden_s / 2), 0.0, dur),
                  _walk(2, 'black_black', 250, 700, 100, 0.0, dur)], dur, pillar=(384, width))


def reentry(away_s: float, who: str = 'blonde_black', stays: str = 'red_jacket') -> Scene:
    """One walks out at the left edge and comes back ``away_s`` later; another stays in view."""
    out_at = 3.5
    back_at = out_at + away_s
    return Scene([Actor(1, who, [(0.0, 260, 460), (out_at, -60, 460), (back_at, -60, 460),
                                 (back_at + 3.5, 260, 470)]),
                  _walk(2, stays, 300, 720, 420, 0.0, back_at + 3.5)], back_at + 3.5)


def held_out_kind() -> Scene:
    """Return a crossing with one hidden behind the other for ~1 s, then one away for 4 s."""
    return Scene([Actor(1, 'grey_jeans', [(0.0, 80, 420), (9.0, 700, 420)]),
                  Actor(2, 'red_blue', [(0.0, 700, 450), (6.0, 260, 450), (8.2, -60, 450),
                                        (12.2, -60, 450), (15.0, 250, 460)])], 15.0)


def alike_return(stays_in_view: bool) -> Scene:
    """Two men dressed alike: one goes out and comes back, the other in view or gone too.

    In view: the returning man looks as much like the one in view as like his
    old self, so the margin rule must refuse. Gone too (out by the same
    side, a second later): the two lost ids are as near, and it must refuse.
    """
    other = [(0.0, 420, 430), (11.0, 480, 430)] if stays_in_view else [
        (0.0, 300, 430), (4.5, -60, 430)]
    return Scene([Actor(1, 'dark_jeans', [(0.0, 240, 460), (3.5, -60, 460), (6.5, -60, 460),
                                          (10.0, 250, 470)]),
                  Actor(2, 'dark_jeans_2', other)], 10.0 if not stays_in_view else 10.0)


def side_by_side() -> Scene:
    """Return two people walking side by side, their boxes overlapping, until one stops."""
    return Scene([Actor(1, 'red_jacket', [(0.0, 100, 420), (4.0, 400, 420), (8.0, 700, 420)]),
                  Actor(2, 'black_white', [(0.0, 150, 428), (4.0, 420, 428), (8.0, 420, 428)])],
                 8.0)


def meet() -> Scene:
    """Return two people who walk up to each other, stand 2 s face to face, and go back."""
    return Scene([Actor(1, 'red_jacket', [(0.0, 100, 420), (3.0, 360, 420), (5.0, 360, 420),
                                          (8.0, 100, 420)]),
                  Actor(2, 'black_white', [(0.0, 650, 424), (3.0, 390, 424), (5.0, 390, 424),
                                           (8.0, 650, 424)])], 8.0)


def overtake() -> Scene:
    """Return one person overtaking another at the same depth, hidden behind them ~1 s."""
    return Scene([_walk(1, 'red_jacket', 420, 80, 700, 0.0, 8.0),
                  _walk(2, 'black_white', 424, 300, 500, 0.0, 8.0)], 8.0)


SCENES: Dict[str, Callable[[], Scene]] = {
    'crossing': crossing,
    'crossing_swapped': lambda: crossing('dark_jeans', 'red_jacket'),
    'crossing_slow': lambda: crossing('black_white', 'red_blue', seconds=16.0),
    'crossing_alike': lambda: crossing('dark_jeans', 'dark_jeans_2', seconds=12.0),
    'side_by_side': side_by_side,
    'meet': meet,
    'overtake': overtake,
    **{f'occlusion_{s}s': functools.partial(occlusion, s) for s in (0.5, 1.0, 2.0, 3.0)},
    **{f'reentry_{s}s': functools.partial(reentry, s) for s in (1.0, 2.0, 3.5, 5.0)},
    'held_out_kind': held_out_kind,
}
ALIKE: Dict[str, Callable[[], Scene]] = {
    'alike_in_view': functools.partial(alike_return, True),
    'alike_both_out': functools.partial(alike_return, False),
}


def reentries(frames: List[SceneFrame], ids: List[np.ndarray], gap_s: float = 0.9
              ) -> Tuple[int, int]:
    """Return (returns, returns with the old id): an object unseen ``gap_s`` or more, then seen.

    The id before the gap is the object's last id; after it, its first id
    (boxes without one skipped on both sides).
    """
    last: Dict[int, Tuple[float, int]] = {}
    returns = kept = 0
    for f, hyp in zip(frames, ids):
        for oid, tid in zip(f.truth.tolist(), hyp.tolist()):
            if tid < 0:
                continue
            prev = last.get(oid)
            if prev is not None and f.stamp - prev[0] >= gap_s:
                returns += 1
                kept += int(prev[1] == tid)
            last[oid] = (f.stamp, tid)
    return returns, kept
