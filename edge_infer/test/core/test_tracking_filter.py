# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The closed-form box filter against the library's general one: same state, covariance, ids."""

from edge_infer.core import tracking_filter as tf
from edge_infer.core.tracking import make_tracker
from edge_infer.testing import track_scenes as ts
import numpy as np
import pytest

library = pytest.importorskip('trackers.utils.state_representations',
                              reason='the trackers library (requirements-nodeps.txt)')

#: (measurement, process, first state) noise: ByteTrack's tuning, then SORT's.
TUNINGS = {
    'bytetrack': (np.eye(4) * 0.1, np.eye(8) * 0.01, None),
    'sort': (np.eye(4) * 0.1, np.eye(8) * 0.01, np.eye(8)),
}


def _pair(box, tuning):
    """Return the library's estimator and ours, configured alike."""
    lib = library.XYXYStateEstimator(box)
    ours = tf.make_estimator_class()(box)
    for est in (lib, ours):
        est.set_kf_covariances(*tuning)
    return lib, ours


def _covariance(est):
    return est.get_state()['state_covariance']


@pytest.mark.parametrize('name', sorted(TUNINGS))
def test_same_state_and_covariance_as_the_library_over_steps_and_gaps(name):
    rng = np.random.default_rng(3)
    box = np.array([100.0, 80.0, 160.0, 240.0])
    lib, ours = _pair(box, TUNINGS[name])
    assert ours.closed_form()
    # nominal frames, stamp jitter inside and outside the library's band, gaps, a half step
    for k, step in enumerate([1.0, 1.0003, 1.2, 2.7, 0.5, 1.0, 4.0, 1.0, 1.0, 3.3] * 3):
        for est in (lib, ours):
            est.predict(step, 15.0 if k % 2 else None)
        np.testing.assert_allclose(ours.state_to_bbox(), lib.state_to_bbox(), rtol=1e-9)
        z = None if k % 4 == 3 else box + rng.normal(0, 3, 4) + k * np.array([4, 1, 4, 1])
        for est in (lib, ours):
            est.update(z)
        np.testing.assert_allclose(ours.state_to_bbox(), lib.state_to_bbox(), rtol=1e-9)
        np.testing.assert_allclose(_covariance(ours), _covariance(lib), rtol=1e-9, atol=1e-12)
    assert ours.closed_form()


def test_noise_without_the_block_form_runs_the_library_filter():
    box = np.array([10.0, 20.0, 50.0, 90.0])
    r = np.diag([0.1, 0.1, 1.0, 1.0])            # coordinates unlike: no common block
    lib, ours = _pair(box, (r, np.eye(8) * 0.01, None))
    assert not ours.closed_form()
    for step, z in [(1.0, box + 2), (2.5, None), (1.0, box + 9)]:
        for est in (lib, ours):
            est.predict(step, 15.0)
            est.update(z)
    np.testing.assert_allclose(ours.state_to_bbox(), lib.state_to_bbox(), rtol=1e-12)
    np.testing.assert_allclose(_covariance(ours), _covariance(lib), rtol=1e-12)


def test_block_of_refuses_coupled_or_unlike_coordinates():
    blk = np.kron(np.array([[2.0, 0.5], [0.5, 3.0]]), np.eye(4))
    assert tf.block_of(blk) == (2.0, 0.5, 3.0)
    coupled = blk.copy()
    coupled[0, 1] = coupled[1, 0] = 0.1
    unlike = blk.copy()
    unlike[3, 3] = 2.5
    assert tf.block_of(coupled) is None and tf.block_of(unlike) is None
    assert tf.block_of(np.eye(7)) is None


@pytest.mark.parametrize('name', ['bytetrack', 'sort'])
@pytest.mark.parametrize('scene', ['crossing', 'occlusion', 'enter_leave'])
def test_trackers_give_the_same_ids_with_either_filter(name, scene):
    frames = ts.drop(ts.SCENES[scene](4), 0.3, seed=4)
    closed, library = make_tracker(name), make_tracker(name, closed_form=False)
    confirmed = 0
    for f in frames:
        ids = closed.update(f.boxes, f.scores, f.classes, f.stamp)
        np.testing.assert_array_equal(ids, library.update(f.boxes, f.scores, f.classes, f.stamp))
        confirmed += int((ids > 0).sum())
    assert confirmed > len(frames)          # the scenes were tracked, not all -1
