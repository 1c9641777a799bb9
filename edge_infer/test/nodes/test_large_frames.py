# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Large frames between processes with the shipped Fast DDS profile (fastdds_large_frames.xml).

A frame is sent as 64 KB fragments (UDP's message size bounds the whole
participant); when the receiver does not keep up (a busy core), all of them
must fit in the sender's segment and the receiver's port queue, or the frame
is lost without a trace. The receiver is stopped (SIGSTOP) during each send
here, the worst case; the README and the profile name the largest frame.
"""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image

SUBSCRIBER = """
import rclpy
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image
rclpy.init()
node = rclpy.create_node('large_frames_sub')
node.create_subscription(Image, '/large_frames', lambda raw: print(len(raw), flush=True),
                         qos_profile_sensor_data, raw=True)
print('ready', flush=True)
try:
    rclpy.spin(node)
except KeyboardInterrupt:
    pass
"""


def _frame(mib: float) -> Image:
    w = 4096
    h = int(mib * 2 ** 20) // (w * 3)
    return Image(height=h, width=w, encoding='rgb8', step=w * 3, data=bytes(h * w * 3))


@pytest.mark.slow
def test_frames_up_to_the_documented_size_survive_a_stalled_receiver(ros):
    sub = subprocess.Popen([sys.executable, '-c', SUBSCRIBER], env=ros.env, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines = []
    threading.Thread(target=lambda: [lines.append(x.strip()) for x in sub.stdout],
                     daemon=True).start()
    pub = ros.node.create_publisher(Image, '/large_frames', qos_profile_sensor_data)
    try:
        assert ros.spin_until(lambda: pub.get_subscription_count() and 'ready' in lines, 30), \
            lines

        def received(n):
            return ros.spin_until(lambda: len(lines) > n, 5)
        for _ in range(10):     # the first samples after matching may be lost: warm up
            n = len(lines)
            pub.publish(_frame(0.1))
            if received(n):
                break
        got = {}
        for mib, stall in ((11.4, False), (48, True), (63, True), (11.4, False), (48, True)):
            msg, n = _frame(mib), len(lines)
            if stall:
                os.kill(sub.pid, signal.SIGSTOP)
            pub.publish(msg)
            if stall:
                time.sleep(0.2)
                os.kill(sub.pid, signal.SIGCONT)
            got[(len(got), mib, stall)] = received(n)
        assert all(got.values()), f'lost (frame, MiB, receiver stopped): {got}'
    finally:
        ros.node.destroy_publisher(pub)
        os.kill(sub.pid, signal.SIGCONT)
        sub.send_signal(signal.SIGINT)
        try:
            sub.wait(10)
        except subprocess.TimeoutExpired:
            sub.kill()


def _own_segments_mb(pid: int) -> list:
    """Return the sizes of the Fast DDS segments process ``pid`` sends from, in MiB."""
    from edge_infer import shm
    held = shm.open_by_live_processes(only=[str(pid)])      # it maps senders' segments too
    segments = [f for f in held if f.startswith('/dev/shm/fastrtps_') and 'port' not in f and
                f + '_el' in held]      # the lock file of its own segment
    assert segments, sorted(held)
    return [os.stat(f).st_size / 2 ** 20 for f in segments]


@pytest.mark.parametrize('exported', ['none', 'ours'])
def test_a_container_started_by_hand_loads_the_profile_itself(ros, tmp_path, exported):
    """With no profile, or edge_infer's large-frame one, the container loads its own.

    Its segment holds what it sends (16 MiB), not a camera's 64 MiB: Fast DDS
    writes the whole segment, so that was 67 MB of the container's memory.
    """
    from edge_infer import paths, procs
    env = {k: v for k, v in ros.env.items() if k not in procs.PROFILE_VARS}
    if exported == 'ours':      # what the launch file and the edge_infer commands export
        env['FASTRTPS_DEFAULT_PROFILES_FILE'] = str(paths.fastdds_profile())
    env.pop('RMW_IMPLEMENTATION', None)
    log = tmp_path / 'container.log'
    proc = procs.start_container(env, log_path=log)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and 'DDS:' not in log.read_text(errors='replace'):
            assert proc.poll() is None, log.read_text(errors='replace')
            time.sleep(0.1)
        text = log.read_text(errors='replace')
        assert 'DDS: Fast DDS profile fastdds_container.xml loaded' in text, text[-2000:]
        sizes = _own_segments_mb(proc.pid)     # (a participant of Fast DDS's defaults: 0.5)
        assert 15 < max(sizes) < 20 and sum(sizes) < 20, sizes
    finally:
        procs.stop(proc)
    if exported == 'ours':
        return
    mine = tmp_path / 'mine.xml'
    mine.write_text(procs.paths.fastdds_profile().read_text())
    env['FASTDDS_DEFAULT_PROFILES_FILE'] = str(mine)
    log2 = tmp_path / 'container2.log'
    proc = procs.start_container(env, log_path=log2)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and 'DDS:' not in log2.read_text(errors='replace'):
            time.sleep(0.1)
        assert f'Fast DDS profile from $FASTDDS_DEFAULT_PROFILES_FILE: {mine}' in \
            log2.read_text(errors='replace')
    finally:
        procs.stop(proc)


PUBLISHER = """
import sys, time
import rclpy
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image
rclpy.init()
node = rclpy.create_node('oversized_frames_pub')
pub = node.create_publisher(Image, '/camera/image_raw', qos_profile_sensor_data)
def frame(w, h, stamp):
    msg = Image(height=h, width=w, encoding='bgr8', step=w * 3, data=bytes(w * h * 3))
    msg.header.stamp.sec = stamp
    return msg
small, big = frame(64, 48, 1), frame(7680, 4320, 2)       # 8K rgb8: 99.5 MB
while pub.get_subscription_count() == 0:
    time.sleep(0.05)
for line in sys.stdin:      # one frame per line: 'small' or 'big'
    pub.publish(small if line.strip() == 'small' else big)
    print('sent', line.strip(), flush=True)
"""


@pytest.mark.slow
def test_frames_too_large_for_the_transport_are_counted_lost_and_said(ros, container,
                                                                      tmp_path):
    """A plain best-effort publisher's 8K frames never arrive: /diagnostics counts them."""
    from diagnostic_msgs.msg import DiagnosticArray
    from edge_infer.nodes.lifecycle_client import LifecycleClient
    from edge_infer import procs
    container({'detector': {'diagnostics_period': 0.2, 'drift_threshold': 0.0}})
    LifecycleClient(ros.node, ros.executor).bring_up('/detector', timeout=60)
    diag = []

    def on_diag(msg):
        for st in msg.status:
            if st.name.startswith('/detector:'):
                diag.append({kv.key: kv.value for kv in st.values})
    sub = ros.node.create_subscription(DiagnosticArray, '/diagnostics', on_diag, 50)
    env = {k: v for k, v in ros.env.items() if k not in procs.PROFILE_VARS}    # the user's
    pub = subprocess.Popen([sys.executable, '-c', PUBLISHER], env=env, text=True,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def count(key):
        return int(diag[-1].get(key, -1)) if diag else -1

    def send(what):
        pub.stdin.write(what + '\n')
        pub.stdin.flush()
        assert pub.stdout.readline().strip() == f'sent {what}'
    try:
        for _ in range(10):         # best effort: the first frames after matching may be lost
            send('small')
            if ros.spin_until(lambda: count('received') >= 1, 3):
                break
        assert count('received') >= 1, diag[-1:]
        for _ in range(3):
            send('big')
        send('small')
        assert ros.spin_until(lambda: count('lost') >= 1, 30), diag[-1:]
        assert count('lost') <= 3, diag[-1]        # no more than were sent
        log = tmp_path / 'perception.yaml.log'
        assert ros.spin_until(lambda: 'lost in transport' in log.read_text(errors='replace'),
                              5)
    finally:
        ros.node.destroy_subscription(sub)
        pub.stdin.close()
        pub.terminate()
        pub.wait(10)


def test_the_source_trees_copy_of_our_profile_is_ours_too(tmp_path, monkeypatch):
    """A colcon test exports the source tree's profile; the installed container has its own."""
    from edge_infer import procs
    copy = tmp_path / procs.paths.fastdds_profile().name
    copy.write_bytes(procs.paths.fastdds_profile().read_bytes())
    monkeypatch.delenv('FASTDDS_DEFAULT_PROFILES_FILE', raising=False)
    monkeypatch.setenv('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
    monkeypatch.setenv('FASTRTPS_DEFAULT_PROFILES_FILE', str(copy))
    line = procs.use_container_profile()
    container = str(procs.paths.fastdds_container_profile())
    assert 'fastdds_container.xml' in line
    assert os.environ['FASTRTPS_DEFAULT_PROFILES_FILE'] == container
    other = tmp_path / 'other' / copy.name          # same name, the user's own settings
    other.parent.mkdir()
    other.write_text(copy.read_text().replace('</profiles>', '<!-- mine --></profiles>'))
    monkeypatch.setenv('FASTRTPS_DEFAULT_PROFILES_FILE', str(other))
    procs.use_container_profile()
    assert os.environ['FASTRTPS_DEFAULT_PROFILES_FILE'] == str(other)
