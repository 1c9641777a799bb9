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
matches) or a low-score box that continues no track. A confirmed track
keeps its id through misses and occlusions shorter than ``lost_track_s``.
"""

from collections import deque
from typing import Any, Deque, Dict, Optional, Tuple

import numpy as np

from . import tracking_import
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
    'bytetrack': {'new_track_score': 0.5, 'high_score': 0.5, 'min_iou': 0.1, 'min_hits': 2},
    'sort': {'min_iou': 0.1, 'min_hits': 2},
}
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
                 closed_form: bool = True):
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
        self._gaps: Deque[float] = deque(maxlen=30)     # the last gaps between stamps
        self._cls(**self._opts)         # a bad option fails here, not on the first frame
        self._lib: Any = None                            # the library tracker, all classes
        self._ids: Dict[int, int] = {}                   # library id -> our id
        self._next_id = 1
        self._last_stamp: Optional[float] = None

    def update(self, boxes_xyxy: np.ndarray, scores: np.ndarray, class_ids: np.ndarray,
               stamp_s: float) -> np.ndarray:
        """Match one frame's boxes to the tracks; return their ids (N int64, -1: none yet).

        ``stamp_s``: the frame's capture time in seconds. A stamp that is not
        after the previous one (a frame out of order) leaves the tracks as
        they are and returns -1 for every box.
        """
        # a copy in float64: each class's boxes are moved apart in it (below)
        boxes = np.array(boxes_xyxy, dtype=np.float64).reshape(-1, 4)
        n = len(boxes)
        out = np.full(n, -1, dtype=np.int64)
        stamp = float(stamp_s)
        if self._last_stamp is not None and not stamp > self._last_stamp:
            return out
        if self._last_stamp is not None:
            self._gaps.append(stamp - self._last_stamp)
        self._last_stamp = stamp
        rate = self.frame_rate()
        scores = np.asarray(scores, dtype=np.float32).reshape(n)
        classes = np.asarray(class_ids, dtype=np.int64).reshape(n)
        if self._lib is None:
            self._lib = self._cls(**{**self._opts, 'frame_rate': rate})
        self._lib._frame_rate = rate    # what the library scales elapsed seconds by, each update
        boxes[:, 0::2] += (classes * CLASS_STRIDE)[:, None]     # each class apart
        dets = self._detections(xyxy=boxes, confidence=scores, class_id=classes,
                                data={'row': np.arange(n)})
        res = self._lib.update(dets, timestamp=stamp)
        lib_ids = np.asarray(res.tracker_id, dtype=np.int64)
        if len(lib_ids):
            out[np.asarray(res.data['row'], dtype=np.int64)] = [
                self._our_id(int(i)) for i in lib_ids]
        self._forget()
        return out

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

    def _our_id(self, lib_id: int) -> int:
        """Return the node-wide id of the library's track ``lib_id``."""
        if lib_id < 0:
            return -1
        our = self._ids.get(lib_id)
        if our is None:
            our = self._ids[lib_id] = self._next_id
            self._next_id += 1
        return our

    def _forget(self) -> None:
        """Drop the ids of tracks the library dropped."""
        alive = {int(t.tracker_id) for t in self._lib.tracks}
        for key in [k for k in self._ids if k not in alive]:
            del self._ids[key]

    def live_tracks(self) -> int:
        """Return the number of confirmed tracks alive (matched, or lost under lost_track_s)."""
        return len(self._ids)

    def reset(self) -> None:
        """Forget every track (a new scene, a camera that restarted); ids keep counting up."""
        self._lib = None
        self._ids.clear()
        self._last_stamp = None
        self._gaps.clear()


def make_tracker(name: str, **options: Any) -> Optional[Tracker]:
    """Return the tracker ``name`` with ``options`` (None for 'none'); TrackerError otherwise.

    Options: ``lost_track_s`` (seconds a lost track is kept, default 3.0),
    ``frame_rate`` (the camera's nominal rate, default 30), ``min_hits``
    (matches before a track gets an id, default 2), ``min_iou`` (default
    0.1), ``new_track_score`` (the score a box needs to start a track).
    """
    key = str(name).strip().lower()
    if key in ('none', ''):
        return None
    try:
        return Tracker(key, **{**SETTINGS.get(key, {}), **options})
    except TypeError as e:          # an option the tracker does not take
        raise TrackerError(f'tracker {key}: {e}') from e
