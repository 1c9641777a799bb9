# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Re-association by appearance (core/reid.py, core/appearance.py) on real people.

The scenes (edge_infer.testing.reid_scenes) paste people cut out of
vtest.avi onto its background with exact truth. The thresholds are the
measured figures with a margin (bench/product/tracking.py: ByteTrack with
re-association scored IDF1 0.96-0.99 on every crossing, occlusion and
re-entry scene, at full rate and with 30 % of frames dropped, and gave back
every returning person's id; without it, a re-entry or a 3 s occlusion cost
an id every time).
"""

import warnings

from edge_infer import paths
from edge_infer.core.appearance import ColourHistograms
from edge_infer.core.image import Frame
from edge_infer.core.postprocess import InstanceMasks, Poses
from edge_infer.core.reid import NEW, Reassociation, WAIT
from edge_infer.core.tracking import make_tracker, TrackerError
from edge_infer.testing import reid_scenes as rs
from edge_infer.testing import track_scenes as ts
import numpy as np
import pytest


@pytest.fixture(scope='module')
def video():
    """Return the path of vtest.avi (the set-up fetches it), its cut-outs made once."""
    path = paths.cache_dir() / 'vtest.avi'
    if not path.is_file():
        pytest.skip(f'{path} missing: run the set-up (python -m edge_infer.data prepare)')
    pytest.importorskip('trackers', reason='the trackers library (requirements-nodeps.txt)')
    rs.material(str(path))
    return str(path)


def _track(frames, reid=True, **options):
    warnings.simplefilter('ignore')     # the library's notices
    tracker = make_tracker('bytetrack', reid_window_s=10.0 if reid else 0.0, **options)
    ids = [tracker.update(f.boxes, f.scores, f.classes, f.stamp,
                          Frame(f.image(), 'bgr') if reid else None) for f in frames]
    return ids, tracker


@pytest.mark.slow     # cuts the people out of vtest.avi first: ~3 s
def test_a_person_looks_like_themself_on_other_ground_not_like_another(video):
    _, sprites, _ = rs.material(video)
    scene = rs.Scene([rs.Actor(1, 'red_jacket', [(0, 120, 520), (1, 121, 520)]),   # on grass
                      rs.Actor(2, 'red_jacket', [(0, 600, 260), (1, 601, 260)]),   # on road
                      rs.Actor(3, 'black_black', [(0, 360, 300), (1, 361, 300)])], 1.0)
    img, seen = scene.image(video, 0.5)
    boxes = np.stack([seen[k][0] for k in (1, 2, 3)])
    emb = ColourHistograms()
    looks = emb.describe(Frame(img, 'bgr'), boxes)
    d = emb.distance(looks, looks)
    assert d[0, 1] < 0.3 and d[0, 2] > 0.5 and d[1, 2] > 0.5, d
    assert abs(d[0, 0]) < 1e-3
    # the same pixels in RGB order, and decoded at half size, give the same look
    rgb = Frame(np.ascontiguousarray(img[..., ::-1]), 'rgb')
    assert emb.distance(emb.describe(rgb, boxes[:1]), emb.describe(Frame(img, 'bgr'),
                                                                   boxes[:1]))[0, 0] < 1e-3
    half = Frame(img[::2, ::2], 'bgr', source_size=(img.shape[1], img.shape[0]))
    assert emb.distance(emb.describe(half, boxes), emb.describe(Frame(img, 'bgr'),
                                                                boxes)).diagonal().max() < 0.2
    mono = Frame(img[..., 1], 'mono')           # brightness only: still a descriptor
    assert np.isfinite(emb.describe(mono, boxes)).all()


@pytest.mark.slow     # scenes composed frame by frame: ~1-2 s each
@pytest.mark.parametrize('scene', ['reentry_3.5s', 'occlusion_3.0s', 'held_out_kind'])
def test_a_returning_person_gets_their_id_back(video, scene):
    frames = rs.SCENES[scene]().frames(video, seed=1)
    for fraction in (0.0, 0.3):
        run = ts.drop(frames, fraction, seed=101) if fraction else frames
        ids, tracker = _track(run)
        scores = ts.score(run, ids)
        returns, kept = rs.reentries(run, ids)
        assert scores['switches'] == 0 and scores['shared'] == 0, (scene, fraction, scores)
        assert returns >= 1 and kept == returns, (scene, fraction, returns, kept)
        assert scores.get('idf1', 1.0) >= 0.95, (scene, fraction, scores)
        assert tracker.reid.given_back >= 1
    base, _ = _track(frames, reid=False)        # what it repairs: ByteTrack alone lost the id
    returns, kept = rs.reentries(frames, base)
    assert kept < returns


@pytest.mark.slow     # scenes composed frame by frame: ~1-2 s each
def test_crossings_switch_no_id(video):
    for name in ('crossing', 'crossing_slow', 'crossing_alike'):
        frames = rs.SCENES[name]().frames(video, seed=2)
        ids, _ = _track(ts.drop(frames, 0.3, seed=102))
        scores = ts.score(frames, _track(frames)[0])
        assert scores['switches'] == 0 and scores['shared'] == 0, (name, scores)
        assert ts.exact_counts(ts.drop(frames, 0.3, seed=102), ids)['switches'] == 0, name


@pytest.mark.slow     # scenes composed frame by frame: ~1-2 s each
def test_looks_keep_two_people_side_by_side_on_their_own_tracks(video):
    """Where boxes compete for tracks, looking alike weighs (the library's iou option)."""
    frames = ts.drop(rs.SCENES['side_by_side']().frames(video, seed=2), 0.3, seed=102)
    alone = ts.exact_counts(frames, _track(frames, reid=False)[0])
    assert alone['switches'] > 0 and alone['shared'] > 0, alone     # IoU alone swapped them
    assert ts.exact_counts(frames, _track(frames)[0])['switches'] == 0
    for seed in range(2):
        frames = rs.SCENES['meet']().frames(video, seed=seed)
        for run in (frames, ts.drop(frames, 0.3, seed=100 + seed)):
            counts = ts.exact_counts(run, _track(run)[0])
            assert counts['switches'] == 0 and counts['shared'] == 0, (seed, counts)


@pytest.mark.slow     # scenes composed frame by frame: ~1-2 s each
def test_two_men_dressed_alike_are_never_given_each_others_id(video):
    """Both leave by the same side; the one who returns looks like both: refused."""
    for seed in range(2):
        frames = rs.ALIKE['alike_both_out']().frames(video, seed=seed)
        ids, tracker = _track(frames)
        counts = ts.exact_counts(frames, ids)
        assert counts['shared'] == 0, counts        # no id ever on the other man
        first = {}
        for f, row in zip(frames, ids):
            for oid, tid in zip(f.truth.tolist(), row.tolist()):
                if tid >= 0:
                    first.setdefault(oid, tid)
        back = [tid for f, row in zip(frames, ids) if f.stamp > 7.5
                for oid, tid in zip(f.truth.tolist(), row.tolist()) if oid == 1 and tid >= 0]
        assert back and back[0] not in first.values(), (first, back[:3])   # a new id


def _store(reid, oid, desc, box, seen, aspect=0.45):
    from edge_infer.core.reid import Seen
    reid.ids[oid] = Seen(0, np.asarray(box, float), seen, np.asarray(desc, np.float32),
                         aspect=aspect)


class _Fixed:
    """An embedder whose looks are given: a box's look is its row in ``looks``."""

    name = 'fixed'

    def __init__(self, looks):
        self.looks = np.asarray(looks, np.float32)

    def describe(self, frame, boxes):
        return self.looks[:len(boxes)]

    def distance(self, a, b):
        return np.abs(np.asarray(a)[:, None, 0] - np.asarray(b)[None, :, 0])

    def mix(self, desc, look, weight):
        return (1 - weight) * desc + weight * look


def test_the_margin_rule_and_the_gates():
    frame = Frame(np.zeros((576, 768, 3), np.uint8), 'bgr')
    box = np.array([[300.0, 200.0, 345.0, 300.0]])      # a clean, whole box mid-view
    reid = Reassociation(window_s=5.0, max_distance=0.45, margin=0.08, embedder=_Fixed([[0.2]]))
    _store(reid, 7, [0.1], [290, 200, 335, 300], seen=9.0)
    _store(reid, 8, [0.15], [310, 200, 355, 300], seen=9.0)
    assert reid.decide(10.0, frame, box, np.zeros(1), set(), {0: 3}) == {0: NEW}   # 0.1 vs 0.05
    reid.ids[8].desc = np.array([0.9], np.float32)
    assert reid.decide(10.0, frame, box, np.zeros(1), set(), {0: 3}) == {0: 7}
    assert reid.decide(10.0, frame, box, np.zeros(1), {8}, {0: 3}) == {0: 7}
    reid.ids[8].desc = np.array([0.25], np.float32)     # someone in view looks the same
    assert reid.decide(10.0, frame, box, np.zeros(1), {8}, {0: 3}) == {0: NEW}
    del reid.ids[8]
    assert reid.decide(15.5, frame, box, np.zeros(1), set(), {0: 3}) == {0: NEW}  # too long
    reid.ids[7].box = np.array([290, 130, 335, 300.0])  # 1.7x as tall: another object
    assert reid.decide(10.0, frame, box, np.zeros(1), set(), {0: 3}) == {0: NEW}
    _store(reid, 7, [0.2], [0, 200, 45, 300], seen=5.5)     # it left by the left border
    assert reid.decide(10.0, frame, np.array([[720.0, 200, 765, 300]]), np.zeros(1), set(),
                       {0: 3}) == {0: NEW}                  # and comes in by the right
    partial = np.array([[2.0, 200, 30, 300]])                # coming in by the left, cut
    assert reid.decide(8.0, frame, partial, np.zeros(1), set(), {0: 4}) == {0: WAIT}
    assert reid.decide(9.6, frame, partial, np.zeros(1), set(), {0: 4}) == {0: 7}   # waited
    assert reid.given_back == 3


def test_bad_options_are_one_clear_error():
    pytest.importorskip('trackers', reason='the trackers library (requirements-nodeps.txt)')
    with pytest.raises(TrackerError, match=r'tracker bytetrack: reid: .*margin \(1.5\)'):
        make_tracker('bytetrack', reid_margin=1.5)
    assert make_tracker('bytetrack', reid_window_s=0).reid is None
    assert make_tracker('bytetrack').reid is not None       # on by default


def test_rows_keeps_every_per_box_field_and_renumbers_masks():
    boxes = np.arange(12, dtype=np.float32).reshape(3, 4)
    poses = Poses(boxes, np.ones(3, np.float32), np.zeros(3, np.int64),
                  keypoints=np.arange(3 * 2 * 3, dtype=np.float32).reshape(3, 2, 3),
                  track_ids=np.array([4, -1, 5]))
    kept = poses.rows(poses.track_ids >= 0)
    assert isinstance(kept, Poses) and len(kept) == 2
    assert kept.keypoints.tolist() == poses.keypoints[[0, 2]].tolist()
    assert kept.track_ids.tolist() == [4, 5] and kept.boxes.tolist() == boxes[[0, 2]].tolist()
    mask = np.array([[0, 1, 2, 3]], np.uint8)
    inst = InstanceMasks(boxes, np.ones(3, np.float32), np.zeros(3, np.int64), mask=mask)
    assert inst.rows(np.array([True, False, True])).mask.tolist() == [[0, 1, 0, 2]]
