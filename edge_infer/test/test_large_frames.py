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


def test_a_container_started_by_hand_loads_the_profile_itself(ros, tmp_path):
    """Without the variable the edge_infer commands export, the container sets it itself."""
    from edge_infer import procs
    env = {k: v for k, v in ros.env.items() if k not in procs.PROFILE_VARS}
    env.pop('RMW_IMPLEMENTATION', None)
    log = tmp_path / 'container.log'
    proc = procs.start_container(env, log_path=log)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and 'DDS:' not in log.read_text(errors='replace'):
            assert proc.poll() is None, log.read_text(errors='replace')
            time.sleep(0.1)
        text = log.read_text(errors='replace')
        assert 'DDS: Fast DDS profile fastdds_large_frames.xml loaded' in text, text[-2000:]
    finally:
        procs.stop(proc)
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
