# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Multi-object tracking of a node's detections: ids that last a track's life (no ROS).

A detection, pose or instance-segmentation node calls :func:`make_tracker`
once with its ``tracker`` parameter and then :meth:`Tracker.update` once per
result, with the result's boxes and the frame's stamp::

    tracker = make_tracker('bytetrack')       # None for 'none'
    ids = tracker.update(boxes_xyxy, scores, class_ids, stamp_s)

The algorithms are those of Roboflow's ``trackers`` library (2.6.1,
Apache-2.0, no torch; docs/tracking.md compares it with the others and says
why): ``bytetrack`` (the default: no id switch on the synthetic scenes, the
most consistent ids on the real video with 30 % of frames dropped, the
cheapest after SORT), ``ocsort`` and ``sort``. The library
is imported here, not at the module's import, so a robot without it still
runs with ``tracker: none`` and is told what to install if it asks for one;
and only its three trackers are (tracking_import.py: not the package's
``__init__``, which brings all of scipy.optimize and supervision's
annotators, ~60 MB of the container's RSS).

**Stamps, not a fixed rate.** The node keeps only the newest frame, so the
tracker sees irregular gaps. Each update passes the frame's stamp to the
library, which predicts its Kalman filters over the elapsed time
(``elapsed x frame_rate`` nominal frames: the motion model's units) and
forgets a lost track after ``lost_track_s`` seconds without a match,
whatever number of frames that was. ``frame_rate`` is the camera's nominal
rate; unset, it is estimated from the gaps between stamps (a wrong one cost
ByteTrack and SORT ids: 30 on a 10 fps video, IDF1 0.71 instead of 0.89).

**The box filter.** ByteTrack and SORT keep a Kalman filter per track on
the box corners; the library's general one (8x8 matrices, an inverse per
update) was 70 % of an update. tracking_filter.py gives the library the same
filter in closed form, through its ``state_estimator_class`` option: the same
states and ids (test_tracking_filter.py), a fraction of the time.
``closed_form=False`` keeps the library's own.

**Classes.** The library matches boxes whatever their class. So that a
person never takes a chair's id, each class's boxes are moved
``class_id x CLASS_STRIDE`` pixels along x before the library sees them: boxes
of two classes never overlap (IoU 0, under every ``min_iou``), and the box
filters, linear in the coordinates, track each class as they would alone.
One library tracker serves all classes (one per class cost ~0.075 ms more
per class present: 0.69 ms for 8 objects in 8 classes, 0.18 in one). Ids
come from one counter over all classes: unique in the node's life, from 1.

**Ids.** ``update`` returns one id per input box, in input order; ``-1``
for a box not confirmed yet (a new track needs ``min_hits`` consecutive
matches, except in the tracker's first frame) or a low-score box that
continues no track. A confirmed track keeps its id through misses and
occlusions shorter than ``lost_track_s``; an object that comes back later,
or from out of view, gets its old id back when it looks like it
(:mod:`.reid`, from the ``frame`` given to each update). Where boxes compete
for a track (people side by side), looking alike weighs in the library's
matching too (:meth:`Tracker.looks_bonus`).
"""

from collections import deque
from typing import Any, Deque, Dict, Optional, Tuple

import numpy as np

from . import tracking_import
from .image import Frame
from .reid import NEW, Reassociation, WAIT
from .tracking_filter import make_estimator_class

#: The ``tracker`` parameter's values: ``'none'`` or one of these.
ALGORITHMS = ('bytetrack', 'ocsort', 'sort')
DEFAULT = 'bytetrack'
#: The nominal rate before two stamps have come (frame_rate not set).
FALLBACK_RATE = 30.0
#: Settings that differ from the library's: its score thresholds (0.6, 0.7)
#: are above most of what NanoDet gives a person (its boxes start at 0.35), and
#: its 30 fps frame counts are seconds here. bench/product/tracking.py compared them.
SETTINGS: Dict[str, Dict[str, Any]] = {
    'ocsort': {'high_score': 0.4, 'min_iou': 0.2, 'min_hits': 2},
    'bytetrack': {'new_track_score': 0.4, 'high_score': 0.4, 'min_iou': 0.1, 'min_hits': 2},
    'sort': {'min_iou': 0.1, 'min_hits': 2},
}
#: A box this far over the model's own score threshold starts a track
#: (:func:`score_settings`).
OVER_MODEL_THRESHOLD = 0.05
#: The algorithms whose matching also weighs looks where boxes compete
#: (:meth:`Tracker.looks_bonus`, through the library's ``iou`` option).
CONTESTED = ('bytetrack', 'sort')
#: What looking alike (distance 0) adds to a contested pair's IoU.
LOOKS_BONUS = 1.0
#: A stamp further back than this from the last is a new stream (a bag that
#: looped, a camera that restarted): the tracks start afresh.
BACKWARDS_S = 1.0
#: Seconds an id lost is kept for re-association by appearance (0: none; reid.py).
REID_WINDOW_S = 10.0
#: Pixels between two classes' copies of the image plane (larger than any frame).
CLASS_STRIDE = 100_000.0
#: The algorithms whose box filter runs in closed form (tracking_filter.py).
CLOSED_FORM = ('bytetrack', 'sort')
#: What to install for the algorithms (requirements-nodeps.txt pins them).
INSTALL = ('pip install --no-deps trackers==2.6.1 supervision==0.31.2 pydeprecate==0.13.0 '
           'defusedxml==0.7.1')


class TrackerError(ValueError):
    """An unknown tracker name or option, or its library missing: the message says what to do."""


def _library() -> Tuple[Dict[str, Any], Any]:
    """Import the library's trackers (lazily, lean: tracking_import.py); (classes, Detections)."""
    try:
        return tracking_import.library()
    except ImportError as e:
        raise TrackerError(f'tracking needs the trackers library, not importable here ({e}): '
                           f'{INSTALL}') from e


def _library_options(name: str, lost_track_s: float, frame_rate: float,
                     min_hits: Optional[int], min_iou: Optional[float],
                     new_track_score: Optional[float],
                     high_score: Optional[float]) -> Dict[str, Any]:
    """Return the library constructor's arguments for ``name`` (None: the library's default).

    ``lost_track_buffer`` is in 30 fps frames: the library turns it into
    ``lost_track_buffer / 30`` seconds when it is given stamps.
    """
    opts: Dict[str, Any] = {
        'lost_track_buffer': max(1, int(round(lost_track_s * 30.0))),
        'frame_rate': float(frame_rate),
    }
    if min_hits is not None:
        opts['minimum_consecutive_frames'] = int(min_hits)
    if min_iou is not None:
        opts['minimum_iou_threshold'] = float(min_iou)
    if new_track_score is not None:
        if name == 'ocsort':
            raise TrackerError("ocsort has no 'new_track_score' option (it starts tracks "
                               "from the boxes over 'high_score')")
        opts['track_activation_threshold'] = float(new_track_score)
    if high_score is not None:
        if name == 'sort':
            raise TrackerError("sort has no 'high_score' option (one matching stage)")
        opts['high_conf_det_threshold'] = float(high_score)
    return opts


class Tracker:
    """One algorithm of the library for every class (classes kept apart), ids unique."""

    def __init__(self, name: str, lost_track_s: float = 3.0, frame_rate: Optional[float] = None,
                 min_hits: Optional[int] = None, min_iou: Optional[float] = None,
                 new_track_score: Optional[float] = None, high_score: Optional[float] = None,
                 closed_form: bool = True, reid_window_s: float = 0.0,
                 reid_margin: Optional[float] = None, reid_max_distance: Optional[float] = None):
        if name not in ALGORITHMS:
            raise TrackerError(f"unknown tracker '{name}' (choose none, "
                               f"{', '.join(ALGORITHMS)})")
        if not lost_track_s > 0 or (frame_rate is not None and not frame_rate > 0) or (
                min_hits is not None and min_hits < 1):
            raise TrackerError(f'tracker {name}: lost_track_s ({lost_track_s}) and frame_rate '
                               f'({frame_rate}) must be > 0, min_hits ({min_hits}) >= 1')
        self.name = name
        classes, self._detections = _library()
        self._cls = classes[name]
        self._opts = _library_options(name, lost_track_s, frame_rate or FALLBACK_RATE,
                                      min_hits, min_iou, new_track_score, high_score)
        if closed_form and name in CLOSED_FORM:
            self._opts['state_estimator_class'] = make_estimator_class()
        self._fixed_rate = frame_rate
        self._lost_s = float(lost_track_s)
        self._size: Optional[Tuple[int, int]] = None     # the frames' (width, height)
        self._gaps: Deque[float] = deque(maxlen=30)     # the last gaps between stamps
        self._cls(**self._opts)         # a bad option fails here, not on the first frame
        self.reid: Optional[Reassociation] = None
        if reid_window_s:
            given = {'margin': reid_margin, 'max_distance': reid_max_distance}
            opts: Dict[str, Any] = {k: float(v) for k, v in given.items() if v is not None}
            try:
                self.reid = Reassociation(window_s=float(reid_window_s), **opts)
            except ValueError as e:
                raise TrackerError(f'tracker {name}: {e}') from e
            if name in CONTESTED:       # the library's IoU, with looks where boxes compete
                self._opts['iou'] = _Contested(self, self._cls(**self._opts).iou)
        self._seen: Tuple[Optional[Frame], np.ndarray, np.ndarray] = (
            None, np.zeros((0, 4)), np.zeros((0, 4)))       # this frame: pixels, boxes moved, not
        self._lib: Any = None                            # the library tracker, all classes
        self._ids: Dict[int, int] = {}                   # library id -> our id
        self._next_id = 1
        self._last_stamp: Optional[float] = None

    def update(self, boxes_xyxy: np.ndarray, scores: np.ndarray, class_ids: np.ndarray,
               stamp_s: float, frame: Optional[Frame] = None) -> np.ndarray:
        """Match one frame's boxes to the tracks; return their ids (N int64, -1: none yet).

        ``stamp_s``: the frame's capture time in seconds. A stamp that is not
        after the previous one by up to ``BACKWARDS_S`` (a frame out of
        order) leaves the tracks as they are and returns -1 for every box.
        The tracks start afresh (:meth:`_restart`) after a stamp further back
        (a bag that looped), a gap longer than ``lost_track_s`` (no track
        outlives it) or a frame of another size (another image). ``frame``:
        its pixels, for re-association by appearance (none without them).
        """
        # a copy in float64: each class's boxes are moved apart in it (below)
        boxes = np.array(boxes_xyxy, dtype=np.float64).reshape(-1, 4)
        n = len(boxes)
        out = np.full(n, -1, dtype=np.int64)
        stamp = float(stamp_s)
        last = self._last_stamp
        if last is not None and last - BACKWARDS_S <= stamp <= last:
            return out          # a frame out of order: the tracks stay as they are
        size = (frame.width, frame.height) if frame is not None else self._size
        other = None not in (size, self._size) and size != self._size      # another image
        if last is not None and (stamp < last or stamp - last > self._lost_s or other):
            self._restart(keep_looks=stamp > last and not other)
        elif last is not None:
            self._gaps.append(stamp - last)
        self._last_stamp, self._size = stamp, size
        rate = self.frame_rate()
        scores = np.asarray(scores, dtype=np.float32).reshape(n)
        classes = np.asarray(class_ids, dtype=np.int64).reshape(n)
        first = self._lib is None
        if first:
            self._lib = self._cls(**{**self._opts, 'frame_rate': rate})
        self._lib._frame_rate = rate    # what the library scales elapsed seconds by, each update
        boxes[:, 0::2] += (classes * CLASS_STRIDE)[:, None]     # each class apart
        dets = self._detections(xyxy=boxes, confidence=scores, class_id=classes,
                                data={'row': np.arange(n)})
        self._seen = (frame, boxes, np.asarray(boxes_xyxy, np.float64).reshape(-1, 4))
        try:
            res = self._lib.update(dets, timestamp=stamp)
        finally:    # the frame's pixels (a view on its message) are not kept past the update
            self._seen = (None, boxes[:0], boxes[:0])
        lib = np.full(n, -1, dtype=np.int64)
        if len(res.tracker_id):
            lib[np.asarray(res.data['row'], dtype=np.int64)] = res.tracker_id
        if first:
            self._confirm_first(boxes, lib)
        new = {}
        for row, key in enumerate(lib.tolist()):
            if key >= 0 and key in self._ids:
                out[row] = self._ids[key]
            elif key >= 0:
                new[row] = key
        if new:
            self._name_new(new, out, stamp, frame, boxes_xyxy, classes)
        if self.reid is not None:
            self.reid.observe(stamp, frame, np.asarray(boxes_xyxy).reshape(-1, 4), scores,
                              classes, out)
        self._forget()
        return out

    def looks_bonus(self, predicted: np.ndarray, boxes: np.ndarray, sim: np.ndarray
                    ) -> np.ndarray:
        """Return the library's IoU ``sim`` with a bonus for looking alike where boxes compete.

        Where a track's predicted box overlaps two boxes or more (over the
        library's IoU threshold), or a box two tracks or more, each such pair
        gains ``LOOKS_BONUS x (1 - distance)`` of its track's look and its
        box's: two people side by side keep their own tracks. A bonus only
        (a match is never lost for it); pairs without a look gain nothing.
        """
        frame, moved, pixel = self._seen
        reid = self.reid
        if frame is None or reid is None or sim.size == 0:
            return sim
        near = sim >= float(getattr(self._lib, 'minimum_iou_threshold', 0.1))
        contested = near & ((near.sum(axis=1) >= 2)[:, None] | (near.sum(axis=0) >= 2)[None, :])
        if not contested.any():
            return sim
        tracks = self._lib.tracks
        states = np.array([np.asarray(t.get_state_bbox(), np.float64).reshape(4) for t in tracks])
        rows, cols = np.flatnonzero(contested.any(axis=1)), np.flatnonzero(contested.any(axis=0))
        descs = {}
        for r in rows:
            k = int(np.argmin(np.abs(states - predicted[r]).sum(axis=1)))
            seen = reid.ids.get(self._ids.get(int(tracks[k].tracker_id), -1))
            if seen is not None and seen.desc is not None:
                descs[r] = seen.desc
        if not descs:
            return sim
        dets = [int(np.argmin(np.abs(moved - boxes[c]).sum(axis=1))) for c in cols]
        looks = reid.embedder.describe(frame, pixel[dets])
        out = sim.copy()
        keys = sorted(descs)
        dist = reid.embedder.distance(np.stack([descs[r] for r in keys]), looks)
        for i, r in enumerate(keys):
            for j, c in enumerate(cols):
                if contested[r, c]:
                    out[r, c] += LOOKS_BONUS * (1.0 - dist[i, j])
        return out

    def _confirm_first(self, boxes: np.ndarray, lib: np.ndarray) -> None:
        """Confirm the tracks of the tracker's first frame at once, as ByteTrack's paper does.

        The library waits ``min_hits`` matches for every track; the first
        frame after a start or a reset has nothing to confirm against, and
        Ultralytics' track mode (and so yolo_ros) shows its boxes with ids.
        Each new track gets the library's next id (its own allocator) and is
        found by its box (its filter starts at it).
        """
        for t in self._lib.tracks:
            if t.tracker_id != -1:
                continue
            free = np.flatnonzero(lib < 0)
            if not len(free):
                break
            gap = np.abs(boxes[free] - np.asarray(t.get_state_bbox()).reshape(4)).sum(axis=1)
            row = int(free[int(np.argmin(gap))])
            if gap.min() <= 1.0:
                t.tracker_id = self._lib._allocate_tracker_id()
                lib[row] = t.tracker_id

    def _name_new(self, new: Dict[int, int], out: np.ndarray, stamp: float,
                  frame: Optional[Frame], boxes: np.ndarray, classes: np.ndarray) -> None:
        """Give the tracks confirmed this frame (row -> library id) a new id or an old one."""
        verdicts = {row: NEW for row in new}
        if self.reid is not None:
            verdicts = self.reid.decide(stamp, frame, np.asarray(boxes).reshape(-1, 4), classes,
                                        {int(i) for i in out if i >= 0}, new)
        for row, key in new.items():
            verdict = verdicts[row]
            if verdict == WAIT:
                continue
            if verdict == NEW:
                verdict = self._next_id
                self._next_id += 1
            else:               # an old id back: its lost track, if the library keeps it, goes
                for old in [k for k, v in self._ids.items() if v == verdict]:
                    del self._ids[old]
                    self._lib.tracks = [t for t in self._lib.tracks if t.tracker_id != old]
            self._ids[key] = out[row] = verdict

    def frame_rate(self) -> float:
        """Return the camera's nominal rate: as set, or from the last 30 gaps between stamps.

        Drops only lengthen gaps: the gaps' first quartile stays one frame
        period while fewer than ~70 % of the frames are dropped.
        """
        if self._fixed_rate is not None:
            return float(self._fixed_rate)
        if not self._gaps:
            return FALLBACK_RATE
        return 1.0 / sorted(self._gaps)[len(self._gaps) // 4]     # (np.percentile: 20 us)

    def _forget(self) -> None:
        """Drop the ids of tracks the library dropped."""
        alive = {int(t.tracker_id) for t in self._lib.tracks}
        for key in [k for k in self._ids if k not in alive]:
            del self._ids[key]
        if self.reid is not None:
            self.reid.forget_tracks(alive)

    def live_tracks(self) -> int:
        """Return the number of confirmed tracks alive (matched, or lost under lost_track_s)."""
        return len(self._ids)

    def reset(self) -> None:
        """Forget every track (a new scene, a camera that restarted); ids keep counting up."""
        self._restart(keep_looks=False)
        self._last_stamp = None
        self._gaps.clear()

    def _restart(self, keep_looks: bool) -> None:
        """Start the library afresh: after a gap no track outlives, or frames of another size.

        Its next frame is a first frame: its boxes get ids at once. The looks
        of the ids lost are kept after a gap (they may come back), not when
        the image changed.
        """
        self._lib = None
        self._ids.clear()
        if self.reid is not None and not keep_looks:
            self.reid.reset()


def score_settings(name: str, model_threshold: float) -> Dict[str, float]:
    """Return the score options for a model whose boxes start at ``model_threshold``.

    Models score on their own scales (NanoDet's people from 0.35, MoveNet's
    mean keypoint score from 0.25): a box ``OVER_MODEL_THRESHOLD`` over the
    model's threshold starts a track and takes part in the first matching
    stage; boxes under that only continue tracks. With a node that publishes
    only tracked boxes, a box that never starts a track is never published.
    SETTINGS' 0.4 is this rule for NanoDet (bench/product/tracking.py).
    """
    cut = round(float(model_threshold) + OVER_MODEL_THRESHOLD, 3)
    keys = {'bytetrack': ('new_track_score', 'high_score'), 'ocsort': ('high_score',),
            'sort': ('new_track_score',)}.get(str(name).strip().lower(), ())
    return {key: cut for key in keys}


def make_tracker(name: str, **options: Any) -> Optional[Tracker]:
    """Return the tracker ``name`` with ``options`` (None for 'none'); TrackerError otherwise.

    Options: ``lost_track_s`` (seconds a lost track is kept, default 3.0),
    ``frame_rate`` (the camera's nominal rate, default 30), ``min_hits``
    (matches before a track gets an id, default 2), ``min_iou`` (default
    0.1), ``new_track_score`` (the score a box needs to start a track),
    ``reid_window_s`` (re-association by appearance, :mod:`.reid`: default
    10 s, 0 = off; it needs each update's ``frame``), ``reid_margin``,
    ``reid_max_distance``.
    """
    key = str(name).strip().lower()
    if key in ('none', ''):
        return None
    try:
        return Tracker(key, **{'reid_window_s': REID_WINDOW_S, **SETTINGS.get(key, {}),
                               **options})
    except TypeError as e:          # an option the tracker does not take
        raise TrackerError(f'tracker {key}: {e}') from e


class _Contested:
    """The library's IoU (its ``iou`` option's ``compute``) with :meth:`Tracker.looks_bonus`."""

    def __init__(self, tracker: Tracker, base: Any):
        self.tracker, self.base = tracker, base

    def compute(self, boxes_1: np.ndarray, boxes_2: np.ndarray) -> np.ndarray:
        """Return the tracks' (``boxes_1``) and boxes' similarity."""
        return self.tracker.looks_bonus(boxes_1, boxes_2, self.base.compute(boxes_1, boxes_2))
