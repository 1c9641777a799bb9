# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The graph described once, and the scenarios of the launch tests run through bring-up.

launch / launch_ros / launch_testing do not install on this machine, so the
launch file cannot run here; it and `edge_infer bringup` both take their
processes from edge_infer.graph.plan(), tested below, and the same scenarios
run here through the bring-up (separate processes, lifecycle services).
"""

import os
import pathlib
import signal
import time

from edge_infer import graph, paths, procs, shm
from edge_infer.bringup import Running
from edge_infer_msgs.msg import DetectionArray
import numpy as np
import pytest
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image


def test_plan_defaults_and_arguments():
    (p,) = graph.plan()
    assert p.executable == 'perception_container' and not p.remappings
    assert p.lifecycle_nodes == ['telemetry', 'detector', 'classifier', 'pose', 'segmenter']
    (q,) = graph.plan(camera_topic='/front/image', nodes=['detector', 'detector_cam2'],
                      objective='energy', executor_policy='cost-model', namespace='robot1',
                      autostart=True)
    assert q.remappings == {'/camera/image_raw': '/front/image',
                            '/camera/image_raw/compressed': '/front/image/compressed'}
    # namespaced: the params file's node keys are qualified, or no node would match
    assert q.params['/robot1/perception_container']['ros__parameters']['nodes'] == \
        ['detector', 'detector_cam2']
    assert q.params['/robot1/perception_container']['ros__parameters']['autostart'] is True
    assert q.params['/robot1/detector_cam2']['ros__parameters']['objective'] == 'energy'
    assert q.params['/robot1/detector']['ros__parameters']['executor_policy'] == 'cost-model'
    assert not any(k.startswith('/') for k in p.params)      # root namespace: bare keys
    assert q.namespace == 'robot1'
    with pytest.raises(graph.GraphError, match="nodes \\['lidar'\\] have no section"):
        graph.plan(nodes=['lidar'])
    with pytest.raises(graph.GraphError, match="objective 'fastest'"):
        graph.plan(objective='fastest')


def test_launch_file_builds_its_processes_from_the_plan():
    src = (pathlib.Path(__file__).parents[2] / 'launch' / 'perception.launch.py').read_text()
    assert 'graph.plan(' in src and 'OpaqueFunction' in src
    for arg in ('camera_topic', 'objective', 'nodes', 'namespace', 'autostart'):
        assert f"'{arg}'" in src
    try:
        import launch  # noqa: F401
    except ImportError:
        pytest.skip('launch is not installable here: the launch file is checked on a robot '
                    '(colcon test runs test_launch_perception.py there)')


def _image(stamp: int, rgb):
    m = Image(height=rgb.shape[0], width=rgb.shape[1], encoding='rgb8',
              step=rgb.shape[1] * 3, data=rgb.tobytes())
    m.header.stamp.sec = stamp
    m.header.frame_id = 'cam'
    return m


@pytest.mark.slow
def test_two_cameras_into_two_detectors(ros, tmp_path, footage):
    import cv2
    rgb = cv2.cvtColor(cv2.imread(str(next(p for p in footage['photos']
                                           if p.name == 'astronaut.png'))), cv2.COLOR_BGR2RGB)
    plans = graph.plan(nodes=['detector', 'detector_cam2'])
    run = Running(plans, ros.env, tmp_path).start()
    got = {'/detector/detections': [], '/detector_cam2/detections': []}
    for topic, box in got.items():
        ros.node.create_subscription(DetectionArray, topic, box.append, 20)
    try:
        run.activate(ros.node, ros.executor)
        pubs = {cam: ros.node.create_publisher(Image, cam, qos_profile_sensor_data)
                for cam in ('/camera/image_raw', '/camera2/image_raw')}
        assert ros.spin_until(lambda: all(p.get_subscription_count() for p in pubs.values()),
                              20)
        for k in range(3):
            pubs['/camera/image_raw'].publish(_image(100 + k, rgb))
            pubs['/camera2/image_raw'].publish(_image(200 + k, rgb))
            ros.spin_until(lambda: False, 0.3)
        assert ros.spin_until(lambda: all(len(v) >= 2 for v in got.values()), 30)
        # each detector answers its own camera only
        assert {m.header.stamp.sec for m in got['/detector/detections']} <= {100, 101, 102}
        assert {m.header.stamp.sec for m in got['/detector_cam2/detections']} <= \
            {200, 201, 202}
        assert all(any(d.label == 'person' for d in m.detections)
                   for v in got.values() for m in v)
    finally:
        codes = run.stop()
    assert codes == {'perception_container': 0}


# The detector-only graphs here subscribe to the raw topic alone: the player is
# told to play only that one, or it would wait out --wait-for-subscribers on
# the bag's /compressed topic (20 s per start) before publishing anything.
RAW_ONLY = ('--topics', '/camera/image_raw')
# A stop waits for the background profile's current candidate (up to 30 s:
# ncnn Vulkan fp16 on lavapipe took 31.9 s on a fresh clone), longer than
# procs.stop's 10 s. These tests are about crashes and players, so they give
# the stop that time and still ask for exit 0 (a requested stop).
STOP_S = 45.0


@pytest.mark.slow
def test_kill_9_during_replay_then_restart_recovers(ros, tmp_path, small_bag):
    plans = graph.plan(nodes=['detector'])
    got = []
    ros.node.create_subscription(DetectionArray, '/detector/detections', got.append, 50)
    run = Running(plans, ros.env, tmp_path / 'first').start()
    run.activate(ros.node, ros.executor)
    player = procs.start_player(small_bag, ros.env, [*RAW_ONLY, '--wait-for-subscribers', '20',
                                                     '--rate', '0.5'])
    try:
        assert ros.spin_until(lambda: len(got) >= 2, 60)
        (_, proc), = run.procs
        dead = shm.segment_locks(proc.pid)
        assert dead, 'the container holds a segment lock file'
        os.killpg(proc.pid, signal.SIGKILL)              # the container dies mid-replay
        proc.wait(10)
        assert proc.returncode == -signal.SIGKILL
        # the group's other members die a moment later and let go of the locks
        # they inherited; a file may be gone already (another start's clean)
        assert ros.spin_until(lambda: all(
            not os.path.exists(f) or shm.lock_is_free(pathlib.Path(f)) for f in dead), 10), \
            'a SIGKILLed participant leaves its segment behind, its lock free'
        n_dead = len(got)
        ros.spin_until(lambda: player.poll() is not None, 60)
    finally:
        procs.stop(player)          # a failure above leaves no player feeding later tests
    assert player.returncode == 0                        # the player is not disturbed
    assert len(got) == n_dead                            # nothing from a dead process
    # restart from the same plan: clean recovery, results again
    again = Running(plans, ros.env, tmp_path / 'second').start()
    try:
        again.activate(ros.node, ros.executor)
        (_, second), = again.procs
        own = shm.segment_locks(second.pid)
        player = procs.start_player(small_bag, ros.env,
                                    [*RAW_ONLY, '--wait-for-subscribers', '20'])
        assert ros.spin_until(lambda: len(got) >= n_dead + 5, 60)
        ros.spin_until(lambda: player.poll() is not None, 60)
    finally:
        codes = again.stop(STOP_S)
    assert codes == {'perception_container': 0}, _tail(tmp_path / 'second')
    # Shared memory: the SIGKILLed participant could not unlink its segment;
    # the restart removed it (fastdds shm clean: only files no live process
    # locks), and the restarted container took its own files with it when it
    # stopped. Only the two containers' own files are asserted: other processes
    # on the machine (other tests' players and containers) may die meanwhile,
    # and theirs are not ours (CI once found four such beside the killed one's).
    assert again.shm_cleaned is not None, 'fastdds shm clean did not run'
    assert again.shm_cleaned['zombie_segments_cleaned'] >= 1
    assert own, 'the restarted container holds a segment lock file'
    left = {f for f in dead | own if os.path.exists(f)}
    assert not left, f'left behind: killed {sorted(dead & left)}, stopped {sorted(own & left)}'
    third = Running(plans, ros.env, tmp_path / 'third').start()
    try:
        third.activate(ros.node, ros.executor)
    finally:
        # stopped right after its activation: once (robot stage, 2026-11-29) exit -6,
        # rclpy's EventsExecutor freed with callbacks registered (nodes/stopping.leave)
        assert third.stop(STOP_S) == {'perception_container': 0}, _tail(tmp_path / 'third')


def _tail(folder: pathlib.Path, lines: int = 40) -> str:
    """Return the last lines of a container's log (its fatal lines, if it aborted)."""
    text = (folder / 'perception_container.log').read_text(errors='replace')
    return '\n'.join(line[:300] for line in text.splitlines()[-lines:])


@pytest.mark.slow
def test_overload_newest_frame_counted_drops_bounded_latency_flat_memory(ros, tmp_path,
                                                                         data_home):
    """2,000 frames at twice the detector's speed or more (bench/product/soak.py runs 10,000)."""
    from edge_infer.backends.libs.ort import OrtBackend
    from edge_infer.core.registry import load_registry
    from edge_infer.testing.reliability import soak
    # The detector is held on ONNX Runtime, 1 thread: the measured choice
    # (OpenVINO bf16) nearly keeps up with 60 Hz, and this test is about the
    # newest-frame policy when the model cannot. How fast that is depends on the
    # CPU (NanoDet took ~45 ms per frame on one EPYC VM, ~20 ms on another), so
    # the camera runs at twice the model's own rate, measured here (60-150 Hz).
    spec = load_registry(paths.config_dir() / 'models.yaml')['nanodet']
    sess = OrtBackend(intra_op_threads=1).open_session(data_home / 'models' / spec.file)
    x = np.zeros((1, 3, spec.input_spec.height, spec.input_spec.width), np.float32)
    times = []
    for _ in range(6):
        t = time.perf_counter()
        sess.run(x)
        times.append(time.perf_counter() - t)
    sess.close()
    rate = min(150.0, max(60.0, 2.0 / float(np.median(times[1:]))))
    # Drift monitor off: a re-evaluation under this load loads every candidate's
    # session once (a step in RSS, measured +37 %), which is not what this measures.
    r = soak(ros.node, ros.executor, ros.env, tmp_path, frames=2000, rate_hz=rate,
             warmup=300, log=lambda s: None,
             detector_params={'drift_threshold': 0.0, 'backend': 'onnxruntime/cpu/t1'})
    assert r['exit_codes'] == {'perception_container': 0}
    assert r['monotonic'] and r['results'] > 100
    assert r['dropped'] > r['sent'] // 4            # it cannot keep up, and says so
    # every frame is accounted for (a few may be lost by best-effort DDS itself)
    assert r['processed'] + r['dropped'] + r['rejected'] <= r['received'] <= r['sent']
    assert r['received'] - (r['processed'] + r['dropped'] + r['rejected']) <= 1
    assert r['received'] >= 0.95 * r['sent']
    assert r['rejected'] == 0
    assert r['latency_p95_ms'] < 1000               # no queue builds up behind the model
    assert r['rss_growth'] < 0.05, r


@pytest.mark.slow
def test_bag_player_dying_mid_bag_leaves_the_graph_serving(ros, tmp_path, small_bag):
    plans = graph.plan(nodes=['detector'])
    got = []
    ros.node.create_subscription(DetectionArray, '/detector/detections', got.append, 50)
    run = Running(plans, ros.env, tmp_path).start()
    try:
        run.activate(ros.node, ros.executor)
        player = procs.start_player(small_bag, ros.env, [*RAW_ONLY, '--wait-for-subscribers', '20',
                                                         '--rate', '0.3'])
        assert ros.spin_until(lambda: len(got) >= 1, 60)
        os.killpg(player.pid, signal.SIGKILL)            # the player dies mid-bag
        player.wait(10)
        n = len(got)
        ros.spin_until(lambda: False, 2.0)
        assert run.procs[0][1].poll() is None            # the container does not care
        player = procs.start_player(small_bag, ros.env,
                                    [*RAW_ONLY, '--wait-for-subscribers', '20'])
        assert ros.spin_until(lambda: len(got) >= n + 5, 60)    # a new player: results again
        ros.spin_until(lambda: player.poll() is not None, 60)
        assert player.returncode == 0
    finally:
        codes = run.stop(STOP_S)
    assert codes == {'perception_container': 0}
