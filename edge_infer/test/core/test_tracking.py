# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Tracking (core/tracking.py) on synthetic scenes with exact truth.

Each box of a scene knows its object (edge_infer.testing.track_scenes), so id
switches and ids shared by two objects are counted exactly; IDF1 and MOTA come
from motmetrics (a test tool of the pinned set) where it is installed. The
thresholds are the measured figures with a margin (bench/product/tracking.py: the
default, ByteTrack, scored IDF1 0.97-0.99 and MOTA 0.95-0.97 on these scenes,
6 seeds each, with no switch).
"""

import sys

from edge_infer.core.tracking import ALGORITHMS, DEFAULT, make_tracker, TrackerError
from edge_infer.testing import track_scenes as ts
import numpy as np
import pytest

needs_library = pytest.mark.filterwarnings('ignore::UserWarning')


def _library():
    pytest.importorskip('trackers', reason='the trackers library (requirements-nodeps.txt)')


def _one_person(box=(10, 10, 50, 90)):
    """Return one box's arrays: boxes, scores, class ids (a person)."""
    return np.array([box], np.float32), np.full(1, 0.8, np.float32), np.zeros(1, np.int64)


def _ids(name, frames, **options):
    tracker = make_tracker(name, **options)     # frame_rate from the stamps, as in the node
    return ts.run(lambda f: tracker.update(f.boxes, f.scores, f.classes, f.stamp), frames)


def test_none_gives_no_tracker():
    assert make_tracker('none') is None
    assert make_tracker('None') is None


def test_an_unknown_name_is_one_clear_error():
    with pytest.raises(TrackerError, match="unknown tracker 'deepsort' \\(choose none, bytetrack"):
        make_tracker('deepsort')


def test_an_unknown_option_is_one_clear_error():
    _library()
    with pytest.raises(TrackerError, match="sort has no 'high_score'"):
        make_tracker('sort', high_score=0.5)
    with pytest.raises(TrackerError, match='tracker ocsort: .*unexpected keyword'):
        make_tracker('ocsort', lost_frames=3)
    with pytest.raises(TrackerError, match=r'min_hits \(0\) >= 1'):
        make_tracker('bytetrack', min_hits=0)


def test_without_the_library_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, 'trackers', None)      # import trackers fails
    with pytest.raises(TrackerError, match='pip install --no-deps trackers==2.6.1'):
        make_tracker(DEFAULT)


@needs_library
@pytest.mark.parametrize('scene', ['crossing', 'occlusion', 'enter_leave'])
@pytest.mark.parametrize('dropped', [0.0, 0.3])
def test_the_default_keeps_ids_on_exact_truth(scene, dropped):
    """Crossing paths, a 2 s occlusion, entering and leaving; full rate and 30 % dropped."""
    _library()
    for seed in range(3):
        frames = ts.SCENES[scene](seed)
        if dropped:
            frames = ts.drop(frames, dropped, seed=100 + seed)
        got = ts.score(frames, _ids(DEFAULT, frames))
        assert got['switches'] == 0 and got['shared'] == 0, (seed, got)
        assert got['ids'] == got['objects'], (seed, got)     # one id per object, for life
        if 'idf1' in got:
            assert got['idf1'] >= 0.9 and got['mota'] >= 0.82, (seed, got)


@needs_library
def test_the_nominal_rate_is_read_from_the_stamps_through_drops():
    _library()
    frames = ts.drop(ts.crossing(0), 0.5, seed=4)
    tracker = make_tracker(DEFAULT)
    assert tracker.frame_rate() == 30.0          # nothing to go by yet
    for f in frames:
        tracker.update(f.boxes, f.scores, f.classes, f.stamp)
    assert 14.0 < tracker.frame_rate() < 16.0    # the scenes' camera: 15 fps
    assert make_tracker(DEFAULT, frame_rate=10.0).frame_rate() == 10.0


@needs_library
def test_motmetrics_agrees_with_the_exact_counts():
    _library()
    pytest.importorskip('motmetrics', reason='a test tool of requirements.txt')
    frames = ts.crossing(0)
    ids = _ids('bytetrack', frames, new_track_score=None, high_score=None, min_iou=None)
    got = ts.score(frames, ids)
    assert got['mm_switches'] == got['switches']


@needs_library
@pytest.mark.parametrize('name', ALGORITHMS)
def test_every_algorithm_gives_ids_in_input_order(name):
    _library()
    tracker = make_tracker(name, frame_rate=15.0)
    rng = np.random.default_rng(0)
    boxes = np.array([[10, 10, 50, 110], [200, 40, 240, 140], [400, 300, 460, 400]], np.float32)
    scores = np.full(3, 0.8, np.float32)
    classes = np.zeros(3, np.int64)
    first = None
    for k in range(8):
        order = rng.permutation(3)
        ids = tracker.update(boxes[order] + 2.0 * k, scores, classes, k / 15.0)
        if k >= 2:
            by_box = dict(zip(order.tolist(), ids.tolist()))
            assert min(by_box.values()) >= 1
            first = first or by_box
            assert by_box == first


@needs_library
def test_a_new_object_gets_a_new_id_and_ids_are_never_reused():
    _library()
    tracker = make_tracker(DEFAULT, frame_rate=15.0, lost_track_s=1.0)
    box, one, person = _one_person((100, 100, 140, 200))
    seen = []
    t = 0.0
    for _ in range(3):          # an object for 1 s, then nothing for 2 s (> lost_track_s)
        for _ in range(15):
            seen.append(int(tracker.update(box, one, person, t)[0]))
            t += 1 / 15
        for _ in range(30):
            tracker.update(np.zeros((0, 4), np.float32), one[:0], person[:0], t)
            t += 1 / 15
    ids = [i for i in seen if i >= 0]
    assert len(set(ids)) == 3 and sorted(set(ids)) == sorted(dict.fromkeys(ids))
    assert tracker.live_tracks() == 0


@needs_library
def test_gaps_are_measured_from_the_stamps_not_counted_in_frames():
    """The same 12 frames without the object: 0.8 s at 15 fps keeps its id, 6 s loses it."""
    _library()
    box, one, person = _one_person((100, 100, 140, 200))
    none = (np.zeros((0, 4), np.float32), one[:0], person[:0])
    for gap_period, same in ((1 / 15, True), (0.5, False)):
        tracker = make_tracker(DEFAULT, frame_rate=15.0, lost_track_s=3.0)
        t = 0.0
        for _ in range(10):
            before = tracker.update(box, one, person, t)[0]
            t += 1 / 15
        for _ in range(12):
            tracker.update(*none, t)
            t += gap_period
        after = tracker.update(box, one, person, t)[0]
        after = tracker.update(box, one, person, t + 1 / 15)[0] if after < 0 else after
        assert bool(after == before) is same, (gap_period, before, after)


@needs_library
@pytest.mark.parametrize('name', ALGORITHMS)
def test_different_classes_never_share_an_id(name):
    """A person and a backpack with the same box: two tracks, two ids, every frame."""
    _library()
    tracker = make_tracker(name, frame_rate=15.0)
    ids_by_class = {0: set(), 24: set()}
    for k in range(20):
        box = np.array([[100 + 3 * k, 100, 140 + 3 * k, 200]] * 2, np.float32)
        classes = np.array([0, 24], np.int64) if k % 2 else np.array([24, 0], np.int64)
        ids = tracker.update(box, np.full(2, 0.8, np.float32), classes, k / 15.0)
        for c, i in zip(classes.tolist(), ids.tolist()):
            if i >= 0:
                ids_by_class[c].add(i)
    assert len(ids_by_class[0]) == 1 and len(ids_by_class[24]) == 1
    assert not ids_by_class[0] & ids_by_class[24]


@needs_library
@pytest.mark.parametrize('name', ALGORITHMS)
def test_all_classes_in_one_tracker_track_as_one_tracker_per_class(name):
    """The same tracks as a tracker fed one class alone, box for box, on mixed scenes.

    Classes mixed into crossing paths (people 1 and 3 become class 2), where
    boxes of two classes overlap; enter_leave: cars beside people and a car
    on a person's box. OC-SORT runs only the first: its library shows
    unconfirmed tracks in a tracker's first ``min_hits`` frames (a video's
    start), and a tracker fed one class alone starts counting frames when
    that class first appears (2 s in), where the joint tracker is long past
    its start and asks ``min_hits`` matches like for any new object.
    """
    _library()
    scenes = [[ts.SceneFrame(f.stamp, f.boxes, f.scores, np.where(f.truth % 2, 2, 0), f.truth)
               for f in ts.crossing(4)]]
    if name != 'ocsort':
        scenes += [ts.enter_leave(3), ts.drop(ts.enter_leave(5), 0.3, seed=2)]
    for frames in scenes:
        joint = make_tracker(name)
        alone = {c: make_tracker(name) for c in (0, 2)}
        pairs = set()
        for f in frames:
            ids = joint.update(f.boxes, f.scores, f.classes, f.stamp)
            for c, trk in alone.items():
                rows = np.flatnonzero(f.classes == c)
                own = trk.update(f.boxes[rows], f.scores[rows], f.classes[rows], f.stamp)
                assert ((ids[rows] < 0) == (own < 0)).all(), (name, c, f.stamp)
                pairs |= {(int(a), (c, int(b))) for a, b in zip(ids[rows], own) if a >= 0}
        assert pairs, 'the scenes were tracked'
        # one to one: each joint id is one class's one track, and the reverse
        assert len({a for a, _ in pairs}) == len({b for _, b in pairs}) == len(pairs)


def _feed(tracker, frames, t0=0.0):
    """Give ``tracker`` one still person for ``frames`` frames at 15 fps; return the last ids."""
    box, one, person = _one_person()
    for k in range(frames):
        ids = tracker.update(box, one, person, t0 + k / 15)
    return ids


@needs_library
def test_a_frame_out_of_order_changes_nothing():
    _library()
    tracker = make_tracker(DEFAULT, frame_rate=15.0)
    last = _feed(tracker, 5, t0=1.0)
    box, one, person = _one_person()
    assert tracker.update(box, one, person, 0.5).tolist() == [-1]
    assert tracker.update(box, one, person, 1.0 + 5 / 15).tolist() == last.tolist()


@needs_library
def test_reset_forgets_the_tracks_and_ids_keep_counting():
    _library()
    tracker = make_tracker(DEFAULT, frame_rate=15.0)
    first = _feed(tracker, 4)[0]
    tracker.reset()
    assert tracker.live_tracks() == 0
    second = _feed(tracker, 4)[0]
    assert first >= 1 and second > first


@needs_library
def test_a_first_frame_a_looped_bag_and_another_image_start_afresh_with_ids():
    """The first frame's boxes have ids at once (as ByteTrack's paper and Ultralytics).

    So do those after a bag loops (stamps 1 s+ back) or the image changes size.
    """
    from edge_infer.core.image import Frame
    _library()
    tracker = make_tracker(DEFAULT, frame_rate=15.0)
    boxes = np.array([[10, 10, 50, 90], [100, 10, 140, 90], [200, 10, 240, 90]], np.float32)
    scores = np.array([0.8, 0.3, 0.9], np.float32)      # 0.3: continues tracks, starts none
    classes = np.array([0, 0, 2])
    first = tracker.update(boxes, scores, classes, 5.0)
    assert first[0] >= 1 and first[2] >= 1 and first[1] == -1
    assert (tracker.update(boxes + 1, scores, classes, 5.1) == first).all()
    looped = tracker.update(boxes, scores, classes, 0.0)    # the bag again: new tracks, ids
    assert looped[0] > first.max() and looped[2] > first.max() and looped[1] == -1
    img = Frame(np.zeros((480, 640, 3), np.uint8), 'bgr')
    assert (tracker.update(boxes, scores, classes, 0.1, img) == looped).all()
    photo = Frame(np.zeros((512, 512, 3), np.uint8), 'bgr')
    other = tracker.update(boxes, scores, classes, 0.2, photo)
    assert other[0] > looped.max() and other[2] > looped.max()      # another image
    assert tracker.update(boxes, scores, classes, 0.25, photo).tolist() == other.tolist()
