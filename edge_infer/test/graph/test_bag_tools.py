# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Tests of the bag recorder, reader, player and footage fetcher (no network)."""

from __future__ import annotations

import hashlib
import io
import os
import pathlib
import signal
import subprocess
import sys
import tarfile
import time
import zipfile

import cv2
from edge_infer.core.bag_read import bag_info, decode_image, iter_bag_frames
from edge_infer.tools.bag import footage
from edge_infer.tools.bag.record import (COMPRESSED_TYPE, IMAGE_TYPE, main as record_main,
                                         record_bag, RecordError)
import numpy as np
import pytest

FPS = 15.0
N_FRAMES = 12
SIZE = (64, 48)  # width, height
RAW = '/camera/image_raw'
COMPRESSED = '/camera/image_raw/compressed'
PACKAGE_ROOT = pathlib.Path(__file__).resolve().parents[2]


def _frame(i: int) -> np.ndarray:
    """Smooth BGR frame with a block whose place depends on ``i``."""
    width, height = SIZE
    x = np.linspace(0, 200, width, dtype=np.float32)[None, :]
    y = np.linspace(0, 120, height, dtype=np.float32)[:, None]
    img = np.stack([x + 0 * y, y + 0 * x, np.full((height, width), 60.0)], axis=-1)
    img[8:24, 4 * i:4 * i + 16] = (30, 220, 250)
    return img.astype(np.uint8)


@pytest.fixture(scope='module')
def footage_dir(tmp_path_factory) -> pathlib.Path:
    """Make a small MJPG video and two PNG photos of different sizes."""
    root = tmp_path_factory.mktemp('footage')
    writer = cv2.VideoWriter(str(root / 'clip.avi'), cv2.VideoWriter_fourcc(*'MJPG'), FPS, SIZE)
    assert writer.isOpened()
    for i in range(N_FRAMES):
        writer.write(_frame(i))
    writer.release()
    photos = root / 'photos'
    photos.mkdir()
    rng = np.random.default_rng(0)
    cv2.imwrite(str(photos / 'a.png'), rng.integers(0, 256, (30, 40, 3), dtype=np.uint8))
    cv2.imwrite(str(photos / 'b.png'), rng.integers(0, 256, (20, 50, 3), dtype=np.uint8))
    (photos / 'notes.txt').write_text('not an image')
    return root


def _decoded_video(path: pathlib.Path) -> list[np.ndarray]:
    """Frames of the video as OpenCV decodes them, in RGB."""
    capture = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
    capture.release()
    return frames


def _by_topic(bag: pathlib.Path) -> dict[str, list[tuple[int, int, np.ndarray, object]]]:
    """Read a bag into topic -> [(log_time, header_stamp, rgb, message)]."""
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    out: dict[str, list] = {}
    last_log = -1
    for topic, msgtype, log_time, data in iter_bag_frames(bag):
        assert log_time >= last_log, 'messages are not in log-time order'
        last_log = log_time
        stamp, rgb = decode_image(msgtype, data)
        msg = store.deserialize_cdr(data, msgtype)
        out.setdefault(topic, []).append((log_time, stamp, rgb, msg))
    return out


def test_record_round_trip(footage_dir, tmp_path):
    bag = tmp_path / 'bag'
    stats = record_bag(bag, video=footage_dir / 'clip.avi', images=[footage_dir / 'photos'],
                       log=lambda _: None)
    n = N_FRAMES + 2
    assert stats['frames'] == n and stats['video_frames'] == N_FRAMES
    assert stats['topics'] == {RAW: n, COMPRESSED: n}
    assert stats['fps'] == pytest.approx(FPS)
    assert (bag / 'metadata.yaml').is_file() and list(bag.glob('*.mcap'))
    assert 'version: 9' in (bag / 'metadata.yaml').read_text()

    info = bag_info(bag)
    assert info['messages'] == 2 * n and info['storage'] == 'mcap'
    assert info['topics'] == {RAW: {'type': IMAGE_TYPE, 'count': n},
                              COMPRESSED: {'type': COMPRESSED_TYPE, 'count': n}}
    assert info['duration_s'] == pytest.approx((n - 1) / FPS, abs=1e-6)

    topics = _by_topic(bag)
    raw, comp = topics[RAW], topics[COMPRESSED]
    assert len(raw) == len(comp) == n
    stamps = [s for _, s, _, _ in raw]
    assert stamps == [s for _, s, _, _ in comp]
    assert all(log_time == s for log_time, s, _, _ in raw + comp)
    assert stamps[0] == stats['first_stamp_ns']
    steps = np.diff(stamps)
    assert (steps > 0).all()
    assert np.abs(steps - 1e9 / FPS).max() <= 1

    expected = _decoded_video(footage_dir / 'clip.avi')
    for name in ('a.png', 'b.png'):
        bgr = cv2.imread(str(footage_dir / 'photos' / name))
        expected.append(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
    for (_, _, rgb, msg), (_, _, jpeg_rgb, cmsg), want in zip(raw, comp, expected):
        assert msg.encoding == 'rgb8' and msg.is_bigendian == 0
        assert (msg.height, msg.width) == want.shape[:2]
        assert msg.step == msg.width * 3
        assert msg.header.frame_id == cmsg.header.frame_id == 'camera'
        np.testing.assert_array_equal(rgb, want)
        assert cmsg.format == 'jpeg'
        assert jpeg_rgb.shape == want.shape
        if want.shape[:2] == (SIZE[1], SIZE[0]):  # smooth video frames, not the noise photos
            assert np.abs(jpeg_rgb.astype(int) - want).mean() < 4


def test_a_cameras_bag_holds_each_camera_at_its_rate_view_and_size(footage_dir, tmp_path):
    from edge_infer.tools.bag.cameras_bag import record_cameras
    from edge_infer.tools.bag.record import RecordError
    cams = (('a', 0, 15.0, None, None), ('b', 2, 5.0, (8, 4, 32, 24), None),
            ('c', 1, 10.0, None, (32, 24)))
    stats = record_cameras(tmp_path / 'bag', footage_dir / 'clip.avi', seconds=0.6,
                           cameras=cams, log=lambda _: None)
    assert stats['topics'] == {'/a/image_raw': 9, '/b/image_raw': 3, '/c/image_raw': 6}
    topics = _by_topic(tmp_path / 'bag')      # in stamp order, checked while read
    video = _decoded_video(footage_dir / 'clip.avi')
    for name, start, rate, crop, size in cams:
        got = topics[f'/{name}/image_raw']
        stamps = [s for _, s, _, _ in got]
        assert np.abs(np.diff(stamps) - 1e9 / rate).max() <= 1       # its own rate
        assert {m.header.frame_id for *_, m in got} == {f'{name}_optical'}
        stride = max(1, round(FPS / rate))
        for k, (_, _, rgb, _) in enumerate(got):    # its own view of the video
            want = video[start + k * stride]
            if crop is not None:
                x, y, w, h = crop
                want = want[y:y + h, x:x + w]
            if size is not None:
                want = cv2.resize(want, size, interpolation=cv2.INTER_AREA)
            np.testing.assert_array_equal(rgb, want)
    with pytest.raises(RecordError, match='ends before camera a'):
        record_cameras(tmp_path / 'long', footage_dir / 'clip.avi', seconds=5.0,
                       cameras=cams[:1], log=lambda _: None)
    assert not (tmp_path / 'long').exists()


def test_stride_window_fps_and_options(footage_dir, tmp_path):
    bag = tmp_path / 'bag'
    stats = record_bag(bag, video=footage_dir / 'clip.avi', start_frame=2, stride=3,
                       max_frames=3, compressed=False, topic='cam/image', frame_id='cam0',
                       start_stamp_ns=5 * 10**9, log=lambda _: None)
    assert stats['topics'] == {'/cam/image': 3}
    topics = _by_topic(bag)
    assert set(topics) == {'/cam/image'}
    expected = _decoded_video(footage_dir / 'clip.avi')
    for k, (log_time, stamp, rgb, msg) in enumerate(topics['/cam/image']):
        assert stamp == log_time == 5 * 10**9 + round(k * 3e9 / FPS)
        assert msg.header.frame_id == 'cam0'
        np.testing.assert_array_equal(rgb, expected[2 + 3 * k])

    still = tmp_path / 'still'
    record_bag(still, images=[footage_dir / 'photos' / 'b.png', footage_dir / 'photos'],
               fps=2.0, raw=False, still_format='png', log=lambda _: None)
    comp = _by_topic(still)[COMPRESSED]
    assert [m.format for *_, m in comp] == ['png'] * 3
    assert [s for _, s, _, _ in comp] == [comp[0][1] + k * 500_000_000 for k in range(3)]
    assert [r.shape for _, _, r, _ in comp] == [(20, 50, 3), (30, 40, 3), (20, 50, 3)]
    want = cv2.cvtColor(cv2.imread(str(footage_dir / 'photos' / 'a.png')), cv2.COLOR_BGR2RGB)
    np.testing.assert_array_equal(comp[1][2], want)  # png is lossless


def test_record_errors(footage_dir, tmp_path):
    bag = tmp_path / 'bag'
    record_bag(bag, images=[footage_dir / 'photos'], log=lambda _: None)
    with pytest.raises(RecordError, match='already exists'):
        record_bag(bag, images=[footage_dir / 'photos'], log=lambda _: None)
    stats = record_bag(bag, images=[footage_dir / 'photos' / 'a.png'], overwrite=True,
                       log=lambda _: None)
    assert stats['frames'] == 1 and bag_info(bag)['messages'] == 2
    with pytest.raises(RecordError, match='not a rosbag2 folder'):
        record_bag(footage_dir, images=[footage_dir / 'photos'], overwrite=True,
                   log=lambda _: None)

    garbage = tmp_path / 'garbage.avi'
    garbage.write_bytes(b'\x00not a video' * 100)
    with pytest.raises(RecordError, match='cannot read video .*garbage.avi'):
        record_bag(tmp_path / 'g', video=garbage, log=lambda _: None)
    with pytest.raises(RecordError, match='does not exist'):
        record_bag(tmp_path / 'g', video=tmp_path / 'missing.avi', log=lambda _: None)
    empty = tmp_path / 'empty'
    empty.mkdir()
    with pytest.raises(RecordError, match='holds no image files'):
        record_bag(tmp_path / 'g', images=[empty], log=lambda _: None)
    bad_png = tmp_path / 'bad.png'
    bad_png.write_bytes(b'nope')
    with pytest.raises(RecordError, match='cannot read image'):
        record_bag(tmp_path / 'g', video=footage_dir / 'clip.avi', images=[bad_png],
                   log=lambda _: None)
    assert not (tmp_path / 'g').exists(), 'a failed recording must not leave a partial bag'


def test_record_cli(footage_dir, tmp_path, capsys):
    bag = tmp_path / 'bag'
    argv = [str(bag), '--video', str(footage_dir / 'clip.avi'), '--images',
            str(footage_dir / 'photos'), '--max-frames', '5', '--no-raw', '-q']
    assert record_main(argv) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith('recorded 7 frames (5 video, 2 images) at 15 fps')
    assert 'on disk' in line and '\n' not in line
    assert record_main(argv) == 2
    assert 'already exists' in capsys.readouterr().err
    with pytest.raises(SystemExit):
        record_main(['--help'])
    assert '--max-frames' in capsys.readouterr().out


def _child_env(domain: int) -> dict[str, str]:
    env = dict(os.environ)
    # The ROS wheels re-exec Python once with their library path; a child that
    # inherits the "done" marker without that path cannot import rclpy.
    env.pop('_ROS_WHEELS_BOOTSTRAP_COMPLETE', None)
    env['ROS_DOMAIN_ID'] = str(domain)
    env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    env['PYTHONPATH'] = os.pathsep.join(
        [str(PACKAGE_ROOT)] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p])
    return env


@pytest.mark.slow
def test_player_publishes_bag_over_ros(footage_dir, tmp_path, monkeypatch):
    rclpy = pytest.importorskip('rclpy')
    pytest.importorskip('sensor_msgs.msg')
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rosbags.typesys import Stores, get_typestore
    from sensor_msgs.msg import CompressedImage, Image

    bag = tmp_path / 'bag'
    record_bag(bag, video=footage_dir / 'clip.avi', images=[footage_dir / 'photos'],
               log=lambda _: None)
    stored = {RAW: [], COMPRESSED: []}
    for topic, _, log_time, data in iter_bag_frames(bag):
        stored[topic].append((log_time, data))
    n = len(stored[RAW])

    domain = 30 + os.getpid() % 60
    monkeypatch.setenv('ROS_DOMAIN_ID', str(domain))
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    store = get_typestore(Stores.ROS2_JAZZY)
    received: dict[str, list[bytes]] = {'/remapped/image': [], COMPRESSED: []}
    player = None
    try:
        node = rclpy.create_node('bag_player_test', context=context)
        qos = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
        for topic, cls in (('/remapped/image', Image), (COMPRESSED, CompressedImage)):
            node.create_subscription(cls, topic, received[topic].append, qos, raw=True)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        player = subprocess.Popen(
            [sys.executable, '-m', 'edge_infer.tools.bag.play', str(bag), '--qos', 'reliable',
             '--rate', '2', '--loop', '--wait-for-subscribers', '15', '--remap',
             f'{RAW}:=/remapped/image', '-q'],
            env=_child_env(domain), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 25
        while time.monotonic() < deadline and player.poll() is None and (
                len(received['/remapped/image']) < n or len(received[COMPRESSED]) < n):
            executor.spin_once(timeout_sec=0.05)
        # Ctrl-C stops a looping player cleanly, with its summary.
        player.send_signal(signal.SIGINT)
        out, err = player.communicate(timeout=15)
    finally:
        if player is not None and player.poll() is None:
            player.kill()
            player.communicate()
        rclpy.try_shutdown(context=context)

    assert player.returncode == 0, err
    assert 'interrupted' in out and 'on 2 topics' in out
    assert out.startswith('published '), out
    for topic, bag_topic in (('/remapped/image', RAW), (COMPRESSED, COMPRESSED)):
        got = received[topic][:n]
        assert len(got) == n, f'{topic}: {len(got)} of {n} frames'
        for data, (_, want) in zip(got, stored[bag_topic]):
            # DDS pads the serialized payload to a multiple of 4 bytes.
            assert data[:len(want)] == want, 'bytes differ from the bag'
            assert len(data) - len(want) < 4 and not data[len(want):].strip(b'\0')
        msgtype = IMAGE_TYPE if bag_topic == RAW else COMPRESSED_TYPE
        stamps = [decode_image(msgtype, data)[0] for data in got]
        assert stamps == [log_time for log_time, _ in stored[bag_topic]]
    first = store.deserialize_cdr(received['/remapped/image'][0], IMAGE_TYPE)
    assert (first.width, first.height, first.encoding) == (*SIZE, 'rgb8')


def test_play_helpers():
    pytest.importorskip('rclpy')
    pytest.importorskip('sensor_msgs.msg')
    from edge_infer.tools.bag.play import PlayError, message_class, parse_remaps

    from sensor_msgs.msg import Image
    assert message_class('sensor_msgs/msg/Image') is Image
    with pytest.raises(PlayError, match='not installed'):
        message_class('no_such_pkg/msg/Thing')
    assert parse_remaps(['/a:=/b', 'c:=d']) == {'/a': '/b', 'c': 'd'}
    with pytest.raises(PlayError):
        parse_remaps(['/a=/b'])


_BUSY_SUBSCRIBER = r"""
import sys, time
from edge_infer import procs
import rclpy
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image
procs.use_ros_env_here()     # the DDS settings of edge_infer's nodes
rclpy.init()
node = rclpy.create_node('busy_subscriber')
node.create_subscription(Image, sys.argv[1], lambda m: print(
    'frame', m.header.stamp.sec * 10**9 + m.header.stamp.nanosec, flush=True),
    qos_profile_sensor_data)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    rclpy.spin_once(node, timeout_sec=0.05)
"""


def _read_until(proc, word: str) -> list[str]:
    """Lines of ``proc``'s stdout up to the first one holding ``word`` (or its exit)."""
    lines = []
    for line in proc.stdout:
        lines.append(line.strip())
        if word in line:
            return lines
    raise AssertionError(f'{word!r} never came: {lines}')


@pytest.mark.slow
def test_player_lingers_so_a_busy_best_effort_subscriber_gets_the_last_frames(tmp_path):
    """A subscriber held up (SIGSTOP) from the first frame to past the end gets every frame.

    Best effort acknowledges nothing, so the player cannot wait for it: it keeps
    its publishers up (--linger) after the last frame. 512x512 rgb8 frames
    travel as Fast DDS fragments; a frame whose writer is gone before the
    subscriber reads it can be lost (the integration test lost the bag's last
    photo that way on a busy CI machine).
    """
    pytest.importorskip('rclpy')
    pytest.importorskip('sensor_msgs.msg')
    photos = tmp_path / 'photos'
    photos.mkdir()
    rng = np.random.default_rng(1)
    for i in range(3):
        cv2.imwrite(str(photos / f'p{i}.png'), rng.integers(0, 256, (512, 512, 3), np.uint8))
    bag = tmp_path / 'bag'
    record_bag(bag, images=[photos], fps=10.0, log=lambda _: None)    # 0.1 s apart
    want = sorted(stamp for topic, _, stamp, _ in iter_bag_frames(bag) if topic == RAW)
    assert len(want) == 3
    env = _child_env(30 + (os.getpid() + 7) % 60)
    sub = subprocess.Popen([sys.executable, '-c', _BUSY_SUBSCRIBER, RAW, '40'], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    player = None
    try:
        player = subprocess.Popen(
            [sys.executable, '-m', 'edge_infer.tools.bag.play', str(bag), '--topics', RAW,
             '--wait-for-subscribers', '20', '--linger', '3'],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _read_until(sub, 'frame ')      # the subscriber ends in 40 s
        sub.send_signal(signal.SIGSTOP)     # busy from the first frame on
        try:
            lines = _read_until(player, 'publishers kept up 3 s')
            time.sleep(0.3)         # held up past the last frame: ~0.5 s in all
        finally:
            sub.send_signal(signal.SIGCONT)
        out, err = player.communicate(timeout=15)
        assert player.returncode == 0, err
        assert 'published 3 messages' in out, lines + [out]
        time.sleep(1.0)
        sub.kill()
        said, _ = sub.communicate()
        got = sorted([want[0]] + [int(line.split()[1]) for line in said.splitlines()
                                  if line.startswith('frame ')])
        assert got == want, f'{len(got)} of 3 frames reached the held-up subscriber'
    finally:
        for proc in (player, sub):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
                proc.communicate()


# ---------------------------------------------------------------------- footage
def _ar(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    out.write(b'!<arch>\n')
    for name, data in members.items():
        header = f'{name + "/":<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n'
        out.write(header.encode('ascii'))
        out.write(data + (b'\n' if len(data) % 2 else b''))
    return out.getvalue()


def _fake_deb(video: bytes) -> bytes:
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode='w:xz') as archive:
        for name, data in (('./usr/share/doc/opencv-doc/README', b'doc'),
                           (footage.DEB_MEMBER, video)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return _ar({'debian-binary': b'2.0\n', 'control.tar.xz': b'', 'data.tar.xz': tar.getvalue()})


def test_footage_from_archives_without_network(tmp_path, monkeypatch):
    video = b'fake video bytes' * 100
    photos = {name: f'png {name}'.encode() for name in footage.PHOTO_SHA256}
    (tmp_path / 'opencv-doc_4.6.0+dfsg-12_all.deb').write_bytes(_fake_deb(video))
    with zipfile.ZipFile(tmp_path / 'scikit_image-0.25.2-cp311-cp311-x.whl', 'w') as wheel:
        for name, data in photos.items():
            wheel.writestr(f'skimage/data/{name}', data)

    def no_clients(*args, **kwargs):
        raise AssertionError(f'no client may run: {args}')

    monkeypatch.setattr(footage.subprocess, 'run', no_clients)
    with pytest.raises(footage.FootageError, match='sha256'):
        footage.fetch_footage(tmp_path, log=lambda _: None, keep_archives=True)
    assert not (tmp_path / 'vtest.avi').exists()

    monkeypatch.setattr(footage, 'VIDEO_SHA256', hashlib.sha256(video).hexdigest())
    monkeypatch.setattr(footage, 'PHOTO_SHA256',
                        {n: hashlib.sha256(d).hexdigest() for n, d in photos.items()})
    found = footage.fetch_footage(tmp_path, log=lambda _: None)
    assert found['video'].read_bytes() == video
    assert [p.name for p in found['photos']] == list(photos)
    assert [p.read_bytes() for p in found['photos']] == list(photos.values())
    assert not list(tmp_path.glob('*.deb')) and not list(tmp_path.glob('*.whl'))
    started = time.perf_counter()
    assert footage.fetch_footage(tmp_path, log=lambda _: None) == found
    assert time.perf_counter() - started < 0.5
