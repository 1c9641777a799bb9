# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Depth for 2D results on exact geometry: synthetic scenes with noise and holes.

A person-sized box (0.5 x 1.7 m) stands at a known position 1-6 m in front
of a wall 2 m further back; the scene is rendered into a 640x480 depth frame
with a pinhole K (fx = fy = 525, cx = 319.5, cy = 239.5), Gaussian noise of
1 % of the depth and holes. The 3D centre must come back within 2 % of the
distance. Where the person is larger than the view (1 m), the truth is the
centre of what the camera sees of it.
"""

import threading

from edge_infer.core.depth import (check_aligned, DepthError, from_fields,
                                   from_raw, Intrinsics, keypoints_3d, locate, NO_DEPTH,
                                   OUT_OF_RANGE, OUTSIDE)
from edge_infer.core.depth_buffer import DepthBuffer
import numpy as np
import pytest

W, H = 640, 480
K = Intrinsics(525.0, 525.0, 319.5, 239.5, W, H)
PERSON = (0.5, 1.7)


def person_box(X, Y, Z, size=PERSON):
    """Return the exact box (continuous pixels) of an upright rectangle centred at X, Y, Z."""
    w, h = size
    u1, u2 = K.cx + K.fx * (X - w / 2) / Z, K.cx + K.fx * (X + w / 2) / Z
    v1, v2 = K.cy + K.fy * (Y - h / 2) / Z, K.cy + K.fy * (Y + h / 2) / Z
    return np.array([u1 + 0.5, v1 + 0.5, u2 + 0.5, v2 + 0.5])


def scene(X, Y, Z, rng, holes=0.15, nan_holes=0.0, wall_behind=2.0, noise=0.01):
    """Return (depth in metres, the person's exact box, its pixel mask)."""
    box = person_box(X, Y, Z)
    cols, rows = np.arange(W) + 0.5, np.arange(H) + 0.5      # pixel centres, continuous
    inside = ((rows[:, None] >= box[1]) & (rows[:, None] <= box[3]) &
              (cols[None, :] >= box[0]) & (cols[None, :] <= box[2]))
    depth = np.where(inside, Z, Z + wall_behind).astype(np.float64)
    depth *= 1 + noise * rng.standard_normal(depth.shape)
    hole = rng.random(depth.shape)
    depth[hole < holes] = 0
    depth[(hole >= holes) & (hole < holes + nan_holes)] = np.nan
    return depth.astype(np.float32), box, inside


def as_16uc1(depth_m):
    mm = np.nan_to_num(depth_m * 1000, nan=0).round().astype('<u2')
    return from_raw('16UC1', H, W, W * 2, mm.tobytes())


def as_32fc1(depth_m, pad=0):
    rows = np.zeros((H, W + pad), '<f4')
    rows[:, :W] = depth_m
    return from_raw('32FC1', H, W, (W + pad) * 4, rows.tobytes())


def clipped(box):
    return np.array([max(box[0], 0), max(box[1], 0), min(box[2], W), min(box[3], H)])


def truth(X, Y, Z, box):
    """Return the visible part's centre: the person's own where it lies wholly in view."""
    c = clipped(box)
    if np.allclose(c, box):
        return np.array([X, Y, Z])
    u, v = (c[0] + c[2]) / 2 - 0.5, (c[1] + c[3]) / 2 - 0.5
    return np.array([(u - K.cx) * Z / K.fx, (v - K.cy) * Z / K.fy, Z])


POSITIONS = [(X, Y, Z) for Z in (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0)
             for X, Y in ((0.0, 0.0), (-0.5, 0.1), (0.4, -0.2))]


@pytest.mark.parametrize('encoding', ['16UC1', '32FC1'])
@pytest.mark.parametrize('loose', [0.0, 0.1])
def test_centre_within_two_percent_of_the_distance(encoding, loose):
    """Exact and loose boxes (10 % more each side: wall inside), 1-6 m, noise and holes.

    The distance is checked for every box; the centre for every exact box and
    every loose box the image does not cut (cut, it is no longer centred).
    """
    rng = np.random.default_rng(37)
    for X, Y, Z in POSITIONS:
        depth_m, box, _ = scene(X, Y, Z, rng, holes=rng.uniform(0.1, 0.2),
                                nan_holes=0.05 if encoding == '32FC1' else 0.0)
        frame = as_16uc1(depth_m) if encoding == '16UC1' else as_32fc1(depth_m, pad=3)
        w, h = box[2] - box[0], box[3] - box[1]
        det = clipped(box + loose * np.array([-w, -h, w, h]))
        out = locate(frame, det[None], K, image_size=(W, H))
        assert out.reasons == [''] and out.valid.all()
        assert abs(out.distance[0] - Z) <= 0.02 * Z
        if loose and not np.allclose(det, box + loose * np.array([-w, -h, w, h])):
            continue    # a loose box cut by the image edge is off-centre: its centre is not ours
        err = np.linalg.norm(out.centers[0] - truth(X, Y, Z, box))
        assert err <= 0.02 * Z, (X, Y, Z, out.centers[0], err)
        if loose == 0 and np.allclose(clipped(box), box):     # the whole person in view
            assert out.sizes[0, 0] == pytest.approx(PERSON[0], rel=0.03)
            assert out.sizes[0, 1] == pytest.approx(PERSON[1], rel=0.03)
        assert 0 <= out.sizes[0, 2] <= 0.1 * Z       # the spread of a flat face: its noise


def test_twenty_people_in_one_frame_each_get_their_own_distance():
    rng = np.random.default_rng(1)
    depth = np.full((H, W), 9.0, np.float32)
    boxes, zs = [], []
    for i in range(20):
        Z = 2.0 + 0.2 * i
        b = person_box(-1.2 + 0.12 * i, 0.0, Z, size=(0.1, 0.3))
        c = clipped(b).round().astype(int)
        depth[c[1]:c[3], c[0]:c[2]] = Z * (1 + 0.01 * rng.standard_normal((c[3] - c[1],
                                                                           c[2] - c[0])))
        boxes.append(c)
        zs.append(Z)
    out = locate(depth, np.array(boxes, np.float32), K)
    assert np.allclose(out.distance, zs, rtol=0.02)


def test_mask_picks_the_person_where_the_box_is_mostly_wall():
    """A box reaching far right of the person: its core is wall, its mask the person."""
    rng = np.random.default_rng(2)
    depth_m, box, inside = scene(-0.6, 0.0, 3.0, rng)
    wide = box.copy()
    wide[2] += 3 * (box[2] - box[0])
    assert locate(depth_m, wide[None], K).distance[0] > 4.5          # the wall, 5 m
    ids = inside.astype(np.uint8)                       # InstanceMasks: detection 0 is 1
    by_map = locate(depth_m, wide[None], K, masks=ids)
    by_bool = locate(depth_m, wide[None], K, masks=inside[None])
    for out in (by_map, by_bool):
        assert abs(out.distance[0] - 3.0) <= 0.02 * 3.0
        assert abs(out.centers[0, 2] - 3.0) <= 0.06
    with pytest.raises(ValueError, match='masks of shape'):
        locate(depth_m, wide[None], K, masks=ids[:240])


def test_a_mask_that_misses_its_box_falls_back_to_the_core():
    rng = np.random.default_rng(3)
    depth_m, box, _ = scene(0.0, 0.0, 2.5, rng)
    empty = np.zeros((H, W), np.uint8)
    out = locate(depth_m, np.stack([box, box]), K, masks=empty)
    assert np.allclose(out.distance, 2.5, rtol=0.02)


def test_no_valid_depth_gives_no_3d_and_its_reason():
    zeros = from_raw('16UC1', H, W, W * 2, bytes(W * H * 2))
    nans = np.full((H, W), np.nan, np.float32)
    box = person_box(0, 0, 3.0)[None]
    for frame in (zeros, nans):
        out = locate(frame, box, K)
        assert out.reasons == [NO_DEPTH] and not out.valid.any()
        assert np.isnan(out.centers).all() and np.isnan(out.sizes).all()
        assert out.counts() == {NO_DEPTH: 1}


def test_too_few_valid_pixels_is_no_depth_not_a_guess():
    rng = np.random.default_rng(4)
    depth_m, box, _ = scene(0, 0, 3.0, rng, holes=0.99)      # 1 % left: under 5 %
    assert locate(depth_m, box[None], K).reasons == [NO_DEPTH]
    depth_m, box, _ = scene(0, 0, 3.0, rng, holes=0.8)       # 20 % left: enough
    out = locate(depth_m, box[None], K)
    assert out.reasons == [''] and abs(out.distance[0] - 3) < 0.06


def test_out_of_range_and_outside_the_image():
    far = np.full((H, W), 25.0, np.float32)
    near = np.full((H, W), 0.05, np.float32)
    box = np.array([[300, 200, 340, 280]], np.float32)
    assert locate(far, box, K).reasons == [OUT_OF_RANGE]
    assert locate(near, box, K).reasons == [OUT_OF_RANGE]
    assert locate(far, box, K, max_m=30).reasons == ['']
    out = locate(far, np.array([[700, 10, 800, 50], [300, 200, 340, 280]]), K, max_m=30)
    assert out.reasons == [OUTSIDE, ''] and out.counts() == {OUTSIDE: 1}
    for mm, reason in ((20000, ''), (20001, OUT_OF_RANGE), (100, ''), (99, OUT_OF_RANGE)):
        frame = from_raw('16UC1', H, W, W * 2, np.full((H, W), mm, '<u2').tobytes())
        assert locate(frame, box, K, max_m=20.0).reasons == [reason], mm   # bounds inclusive


def test_no_boxes():
    out = locate(np.ones((H, W), np.float32), np.zeros((0, 4)), K)
    assert out.centers.shape == (0, 3) and out.reasons == []


def test_bad_inputs_raise_one_clear_line():
    with pytest.raises(DepthError, match=r"'bgr8' is not supported.*16UC1.*32FC1"):
        from_raw('bgr8', H, W, W * 3, bytes(W * H * 3))
    with pytest.raises(DepthError, match='data size'):
        from_raw('16UC1', H, W, W * 2, bytes(10))
    with pytest.raises(DepthError, match='step'):
        from_raw('32FC1', 2, 4, 8, bytes(16))
    with pytest.raises(DepthError, match='all zero'):
        Intrinsics.from_camera_info([0.0] * 9, W, H)
    with pytest.raises(DepthError, match='fx'):
        Intrinsics.from_camera_info([0, 0, 319.5, 0, 525, 239.5, 0, 0, 1], W, H)
    with pytest.raises(DepthError, match='9'):
        Intrinsics.from_camera_info([525.0] * 4, W, H)
    half = from_raw('16UC1', 240, 320, 640, bytes(320 * 240 * 2))
    with pytest.raises(DepthError, match='not the colour image.*aligned'):
        locate(half, np.zeros((1, 4)), Intrinsics(262.5, 262.5, 159.5, 119.5, 320, 240),
               image_size=(W, H))
    with pytest.raises(DepthError, match='CameraInfo is for 640x480'):
        check_aligned(half, K)
    assert issubclass(DepthError, ValueError)


def test_camera_info_k_is_read_row_major():
    k = Intrinsics.from_camera_info([525, 0, 319.5, 0, 520, 239.5, 0, 0, 1], W, H)
    assert (k.fx, k.fy, k.cx, k.cy, k.width, k.height) == (525, 520, 319.5, 239.5, W, H)


def test_big_endian_and_mono16_read_as_millimetres():
    mm = np.full((4, 6), 1234, '>u2')
    frame = from_raw('16UC1', 4, 6, 12, mm.tobytes(), is_bigendian=1)
    assert np.allclose(frame.metres(), 1.234)
    frame = from_raw('mono16', 4, 6, 12, mm.astype('<u2').tobytes())
    assert np.allclose(frame.metres(), 1.234)


def test_depth_from_a_serialized_image_is_a_view():
    rclpy_serialization = pytest.importorskip('rclpy.serialization')
    sensor_msgs = pytest.importorskip('sensor_msgs.msg')
    from edge_infer.core.cdr import parse_image
    mm = (np.arange(W * H) % 5000 + 1).astype('<u2').reshape(H, W)
    msg = sensor_msgs.Image(height=H, width=W, encoding='16UC1', step=W * 2,
                            data=mm.tobytes())
    raw = rclpy_serialization.serialize_message(msg)
    frame = from_fields(parse_image(raw))
    base = np.frombuffer(raw, np.uint8).ctypes.data
    assert base <= frame.pixels.ctypes.data < base + len(raw)
    assert np.array_equal(frame.pixels, mm)


def test_keypoints_in_3d_on_a_tilted_plane():
    """A plane Z = 3 + 0.4 X: each keypoint back-projects onto it, within 1 %."""
    rng = np.random.default_rng(5)
    u, v = np.meshgrid(np.arange(W, dtype=np.float64), np.arange(H, dtype=np.float64))
    rx = (u - K.cx) / K.fx
    depth = (3.0 / (1 - 0.4 * rx)).astype(np.float32)      # Z = 3 + 0.4 X, X = rx Z
    depth[rng.random(depth.shape) < 0.15] = 0
    kp = np.concatenate([rng.uniform(20, 620, (2, 17, 1)), rng.uniform(20, 460, (2, 17, 1)),
                         np.full((2, 17, 1), 0.9)], 2)
    kp[1, 3, 2] = 0.1           # not visible
    kp[1, 4, :2] = (-40, 100)   # off the image
    out = keypoints_3d(depth, kp, K, min_score=0.3)
    assert out.shape == (2, 17, 3)
    assert np.isnan(out[1, 3]).all() and np.isnan(out[1, 4]).all()
    ok = np.isfinite(out[..., 2])
    assert ok.sum() == 32
    X, Z = out[..., 0][ok], out[..., 2][ok]
    assert np.allclose(Z, 3 + 0.4 * X, rtol=0.01)
    expected_x = (kp[..., 0][ok] - 0.5 - K.cx) / K.fx * Z
    assert np.allclose(X, expected_x, atol=1e-4)


def test_keypoints_on_holes_have_no_depth():
    depth = np.zeros((H, W), np.float32)
    out = keypoints_3d(depth, np.array([[[100.0, 100.0, 1.0]]]), K)
    assert np.isnan(out).all()


def test_depth_buffer_nearest_within_the_tolerance():
    buf = DepthBuffer(capacity=5, tolerance_s=0.05)
    assert buf.nearest(10.0) == (None, DepthBuffer.NO_DEPTH_YET)
    for t in (10.0, 10.1, 10.033, 10.066):       # out of order: kept sorted
        buf.add(t, f'd{t}')
    assert buf.nearest(10.04) == ('d10.033', '')
    assert buf.nearest(10.09) == ('d10.1', '')
    assert buf.nearest(9.99) == ('d10.0', '')
    item, why = buf.nearest(10.5)
    assert item is None and why == 'nearest depth 0.400 s away (tolerance 0.050 s)'
    assert buf.matched == 3
    assert buf.unmatched == {DepthBuffer.NO_DEPTH_YET: 1, DepthBuffer.TOO_FAR: 1}
    buf.add(10.1, 'again')
    assert buf.nearest(10.1) == ('again', '') and len(buf) == 4


def _asked_while_added(buf: DepthBuffer, stamp: float, item: str):
    """Ask ``nearest(stamp)`` on a worker thread, add ``item`` at ``stamp``; return the answer."""
    asking = threading.Event()
    answer = []

    def worker():
        asking.set()
        answer.append(buf.nearest(stamp, wait_s=30.0))

    t = threading.Thread(target=worker)
    t.start()
    assert asking.wait(10)
    buf.add(stamp, item)
    t.join(30)
    assert not t.is_alive()
    return answer[0]


def test_a_result_waits_for_its_depth_frame_not_an_older_one():
    """The result is ready first; its depth frame is taken while it waits, and wins."""
    buf = DepthBuffer(capacity=5, tolerance_s=0.05)
    buf.add(10.0, 'older')
    # the subscription takes it while the worker waits
    assert _asked_while_added(buf, 10.033, 'its own') == ('its own', '')
    assert buf.nearest(10.02, wait_s=30.0) == ('its own', '')    # here already: no wait


def test_a_silent_depth_stream_costs_one_wait():
    buf = DepthBuffer(capacity=5, tolerance_s=0.05)
    buf.add(10.0, 'last')
    assert buf.nearest(10.03, wait_s=0.05) == ('last', '')       # waited, none came
    # silent now: the next lookups do not wait (a 1000 s wait would hang the test)
    assert buf.nearest(10.04, wait_s=1000.0) == ('last', '')
    assert buf.nearest(20.0, wait_s=1000.0)[0] is None
    buf.add(20.0, 'back')                       # a frame again: waiting is back on
    assert _asked_while_added(buf, 20.05, 'next') == ('next', '')


def test_depth_buffer_keeps_the_newest_capacity_frames():
    buf = DepthBuffer(capacity=3, tolerance_s=0.01)
    for i in range(10):
        buf.add(i * 0.1, i)
    assert len(buf) == 3
    assert buf.nearest(0.0)[0] is None
    assert [buf.nearest(t)[0] for t in (0.7, 0.8, 0.9)] == [7, 8, 9]
    buf.clear()
    assert len(buf) == 0
    with pytest.raises(ValueError):
        DepthBuffer(capacity=0)


def test_depth_buffer_from_two_threads():
    """The subscription adds while the worker asks: every answer is the frame of its stamp."""
    buf = DepthBuffer(capacity=4, tolerance_s=0.0)
    stop = threading.Event()
    wrong = []

    def writer():
        for i in range(20000):
            buf.add(i * 0.001, i)
        stop.set()

    def reader():
        while not stop.is_set():
            for i in range(0, 20000, 7):
                item, _ = buf.nearest(i * 0.001)
                if item is not None and item != i:
                    wrong.append((i, item))

    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert wrong == [] and len(buf) == 4


def test_byte_order_and_row_padding_give_the_same_3d():
    """Little- and big-endian 16UC1, rows padded by an odd byte (a strided view): one answer."""
    rng = np.random.default_rng(6)
    depth_m, box, _ = scene(0.3, 0.0, 4.0, rng)
    mm = np.nan_to_num(depth_m * 1000, nan=0).round().astype('<u2')
    padded = np.zeros((H, W * 2 + 1), np.uint8)
    padded[:, :W * 2] = mm.view(np.uint8).reshape(H, W * 2)
    frames = [from_raw('16UC1', H, W, W * 2, mm.tobytes()),
              from_raw('16UC1', H, W, W * 2, mm.astype('>u2').tobytes(), is_bigendian=1),
              from_raw('16UC1', H, W, W * 2 + 1, padded.tobytes())]
    assert frames[2].flat is None and frames[0].flat is not None
    outs = [locate(f, box[None], K) for f in frames]
    for out in outs[1:]:
        assert np.array_equal(out.centers, outs[0].centers)
    assert abs(outs[0].distance[0] - 4.0) <= 0.08
