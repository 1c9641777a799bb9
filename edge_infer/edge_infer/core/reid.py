# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Re-association by appearance: an object that comes back gets its old id (no ROS).

ByteTrack (:mod:`.tracking`) matches boxes by motion and overlap. It keeps a
lost track for ``lost_track_s``; an object hidden longer, one that left the
view and came back, or one that a crossing or an occlusion parted from its
track starts a new track, and would get a new id. :class:`Reassociation`
sits beside it, as DeepStream's NvDCF shadow tracking and BoT-SORT's ReID
do in theirs:

- **A descriptor per confirmed id**, from an :class:`~.appearance.Embedder`
  (colour histograms of the torso and the legs by default). It is refreshed
  at most every ``refresh_s`` and only from a clean look: the box matched
  this frame, scored at least ``min_score``, not overlapped by another box
  (``max_overlap`` of its area), not cut by the image's border, and not
  narrower than its usual width / height (``PART``: half behind a pillar).
  A running mean (``EMA``) of those looks.
- **When the tracker confirms a new track**, its box is compared with the ids
  lost in the last ``window_s`` seconds that pass three gates: the same class,
  a box height within ``max_size_ratio``, and a centre within reach of where
  the id was last seen (``reach`` box heights per second elapsed, plus one):
  the side of the view it left by, or the place it was hidden at.
- **The margin rule.** The nearest candidate is taken only when its distance
  is at most ``max_distance`` *and* ``margin`` under the second nearest look,
  among the other candidates and the ids in view now. Two people dressed
  alike are both near: the rule refuses, and the newcomer gets a new id
  rather than someone else's.
- **A look that is not clean yet** (the new box overlapped, as a person coming
  out from behind another is, or cut by the border it comes in by) waits for
  a clean one, at most ``wait_s``;
  its boxes have no id meanwhile. A new track with no candidate gets its new
  id at once.

The tracker gives the old id to the new track, and removes the old track if
its library still held it lost, so no id is ever on two boxes.
"""

from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Set

import numpy as np

from .appearance import ColourHistograms, Embedder
from .image import Frame

#: A new track's verdicts besides an old id.
NEW, WAIT = -1, -2
#: Weight of a new clean look in an id's running descriptor.
EMA = 0.25
#: A box narrower than this share of an id's usual width / height shows part of it.
PART = 0.95
#: Share of the image's width from its border under which a box touches it
#: (cut by it: not a clean look; an id last seen there left the view by it).
BORDER = 0.01


@dataclass
class Seen:
    """What is known of one confirmed id."""

    cls: int
    box: np.ndarray                     # last box (source pixels)
    seen: float                         # stamp of the last frame it was in
    desc: Optional[np.ndarray] = None   # running descriptor; None before a clean look
    refreshed: float = -1e18            # stamp of the last look taken
    aspect: float = 0.0                 # width / height of its clean looks (running mean)


def overlapped(boxes: np.ndarray) -> np.ndarray:
    """Return, per box, the largest share of its area another box covers (N float)."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    if len(b) < 2:
        return np.zeros(len(b))
    lo, hi = np.maximum(b[:, None, :2], b[None, :, :2]), np.minimum(b[:, None, 2:], b[None, :, 2:])
    iw, ih = np.clip(hi - lo, 0.0, None).transpose(2, 0, 1)
    inter = iw * ih
    np.fill_diagonal(inter, 0.0)
    area = np.maximum(1e-9, (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]))
    return inter.max(axis=1) / area


class Reassociation:
    """Ids lost in the last ``window_s`` seconds, their looks, and the verdict on a new track."""

    def __init__(self, window_s: float = 10.0, max_distance: float = 0.45, margin: float = 0.08,
                 max_size_ratio: float = 1.5, reach: float = 1.5, wait_s: float = 1.5,
                 refresh_s: float = 0.5, min_score: float = 0.5, max_overlap: float = 0.1,
                 embedder: Optional[Embedder] = None):
        if not window_s > 0 or not 0 < max_distance <= 1 or not 0 <= margin < 1 or \
                not max_size_ratio >= 1 or not reach >= 0 or not wait_s >= 0:
            raise ValueError(f'reid: window_s ({window_s}) > 0, 0 < max_distance '
                             f'({max_distance}) <= 1, 0 <= margin ({margin}) < 1, '
                             f'max_size_ratio ({max_size_ratio}) >= 1, reach ({reach}) and '
                             f'wait_s ({wait_s}) >= 0')
        self.window_s, self.max_distance, self.margin = window_s, max_distance, margin
        self.max_size_ratio, self.reach, self.wait_s = max_size_ratio, reach, wait_s
        self.refresh_s, self.min_score, self.max_overlap = refresh_s, min_score, max_overlap
        self.embedder: Embedder = embedder or ColourHistograms()
        self.ids: Dict[int, Seen] = {}
        self._waiting: Dict[int, float] = {}     # library track -> stamp its wait began
        self.given_back = 0                      # ids given back in this tracker's life

    def decide(self, stamp: float, frame: Optional[Frame], boxes: np.ndarray, classes: np.ndarray,
               in_view: Set[int], new: Dict[int, int]) -> Dict[int, int]:
        """Return a verdict per new track: an old id, NEW or WAIT.

        ``new``: row -> library track id of the boxes whose track the tracker
        confirmed but gave no id yet; ``in_view``: the ids on this frame's
        other boxes.
        """
        verdicts: Dict[int, int] = {}
        if frame is None:
            return {row: NEW for row in new}
        share = overlapped(boxes)
        taken = set(in_view)
        for row, lib in new.items():
            cands = self._candidates(stamp, frame, boxes[row], int(classes[row]), taken)
            if not cands:
                verdicts[row] = NEW
                continue
            began = self._waiting.setdefault(lib, stamp)
            usual = max(self.ids[oid].aspect for oid in cands)
            if not self._clean(frame, boxes[row], share[row], usual) and \
                    stamp - began < self.wait_s:
                verdicts[row] = WAIT
                continue
            self._waiting.pop(lib, None)
            verdicts[row] = self._nearest(frame, boxes[row], int(classes[row]), cands, taken)
            if verdicts[row] >= 0:
                taken.add(verdicts[row])
                self.given_back += 1
        return verdicts

    def _candidates(self, stamp: float, frame: Frame, box: np.ndarray, cls: int,
                    taken: Set[int]) -> List[int]:
        """Return the lost ids of ``cls`` that could be ``box``: time, size and place gates.

        The place: an id last seen at a border (it left the view) comes back
        by that border; one lost inside the view (hidden) comes back within
        reach of where it was.
        """
        h = float(box[3] - box[1])
        centre = np.array([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2])
        w = float(box[2] - box[0])
        by = {side for side, gap, room in (     # the borders it may have come in by
            ('left', box[0], w), ('right', frame.width - box[2], w),
            ('top', box[1], h / 4), ('bottom', frame.height - box[3], h / 4))
            if gap <= BORDER * frame.width + room}
        out = []
        for oid, s in self.ids.items():
            elapsed = stamp - s.seen
            if oid in taken or s.cls != cls or s.desc is None or not 0 < elapsed <= self.window_s:
                continue
            h_last = float(s.box[3] - s.box[1])
            if not 1 / self.max_size_ratio <= h / max(1e-9, h_last) <= self.max_size_ratio:
                continue
            last = np.array([(s.box[0] + s.box[2]) / 2, (s.box[1] + s.box[3]) / 2])
            if np.hypot(*(centre - last)) > h_last * (1.0 + self.reach * elapsed):
                continue
            if _borders(frame, s.box) <= by:
                out.append(oid)
        return out

    def _nearest(self, frame: Frame, box: np.ndarray, cls: int, cands: List[int],
                 in_view: Set[int]) -> int:
        """Return the candidate ``box`` looks like beyond the margin, or NEW."""
        look = self.embedder.describe(frame, box[None])
        others = [oid for oid in in_view if oid in self.ids and self.ids[oid].cls == cls]
        looks = [self.ids[k].desc for k in cands + others]
        dist = self.embedder.distance(look, np.stack([d for d in looks if d is not None]))[0]
        best = int(np.argmin(dist[:len(cands)]))
        second = np.delete(dist, best).min(initial=1.0)
        if dist[best] <= self.max_distance and second - dist[best] >= self.margin:
            return cands[best]
        return NEW

    def observe(self, stamp: float, frame: Optional[Frame], boxes: np.ndarray,
                scores: np.ndarray, classes: np.ndarray, ids: np.ndarray) -> None:
        """Take this frame's ids: where each was, and a clean look where one is due."""
        boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        due = []
        share = overlapped(boxes) if frame is not None else None
        for row, oid in enumerate(ids.tolist()):
            if oid < 0:
                continue
            s = self.ids.get(oid)
            if s is None:
                s = self.ids[oid] = Seen(int(classes[row]), boxes[row], stamp)
            s.box, s.seen = boxes[row], stamp
            if (frame is not None and share is not None
                    and stamp - s.refreshed >= self.refresh_s and scores[row] >= self.min_score
                    and self._clean(frame, boxes[row], share[row], s.aspect)):
                due.append(row)
        if due and frame is not None:
            looks = self.embedder.describe(frame, boxes[due])
            for row, look in zip(due, looks):
                s = self.ids[int(ids[row])]
                aspect = _aspect(boxes[row])
                if s.desc is None:
                    s.desc, s.aspect = look, aspect
                else:
                    s.desc = self.embedder.mix(s.desc, look, EMA)
                    s.aspect = (1.0 - EMA) * s.aspect + EMA * aspect
                s.refreshed = stamp
        for oid in [k for k, s in self.ids.items() if stamp - s.seen > self.window_s]:
            del self.ids[oid]

    def _clean(self, frame: Frame, box: np.ndarray, share: float, usual: float) -> bool:
        """Return whether ``box`` shows all of its object and only it: a look to keep.

        Not overlapped by another box (``max_overlap``), not cut by the image's
        border, not narrower than the id's ``usual`` width / height (a person
        half behind a pillar).
        """
        return bool(share <= self.max_overlap and not _borders(frame, box)
                    and _aspect(box) >= PART * usual)

    def forget_tracks(self, alive: Iterable[int]) -> None:
        """Drop the waits of library tracks that are gone."""
        alive = set(alive)
        for lib in [k for k in self._waiting if k not in alive]:
            del self._waiting[lib]

    def reset(self) -> None:
        """Forget every id and wait."""
        self.ids.clear()
        self._waiting.clear()


def _aspect(box: np.ndarray) -> float:
    """Return the width / height of ``box``."""
    return float(box[2] - box[0]) / max(1e-9, float(box[3] - box[1]))


def _borders(frame: Frame, box: np.ndarray) -> Set[str]:
    """Return the image borders ('left', 'top', 'right', 'bottom') ``box`` touches."""
    edge = BORDER * frame.width
    return {side for side, gap in (('left', box[0]), ('top', box[1]),
                                   ('right', frame.width - box[2]),
                                   ('bottom', frame.height - box[3])) if gap <= edge}
