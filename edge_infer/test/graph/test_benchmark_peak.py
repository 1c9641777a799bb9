# Copyright 2026 edge_infer contributors. Apache-2.0.
"""edge_infer benchmark, its ROS-free parts: the probe verdict, the peak search, CDR stamps."""

import random

from edge_infer.core.cdr import parse_header, parse_result_times, set_stamp
from edge_infer.tools.benchmark.peak import find_peak, judge, NodeCount, Verdict
import pytest


def _capacity_probe(capacity_hz, calls=None, noise=None):
    """Return a probe of a node that processes at most ``capacity_hz`` frames a second.

    Played faster, it keeps ``capacity_hz`` of them and drops the rest: it passes
    up to ``capacity_hz / 0.95`` (95 % kept), its sustainable peak.
    """
    def probe(rate):
        if calls is not None:
            calls.append(rate)
        seconds = 8.0
        sent = int(rate * seconds)
        kept = sent if rate <= capacity_hz else int(capacity_hz * seconds)
        if noise is not None:
            kept = min(sent, max(0, kept - noise()))
        return judge(rate, {'/n': NodeCount(sent, kept, seconds)})
    return probe


@pytest.mark.parametrize('capacity', [5.0, 7.3, 18.0, 23.9, 41.2, 55.0])
def test_peak_found_within_one_scan_step(capacity):
    calls = []
    search = find_peak(_capacity_probe(capacity, calls), lo=5.0, hi=60.0, step=2.0)
    peak = capacity / 0.95      # the highest rate at which it keeps 95 %
    slack = 0.2                 # whole frames in an 8 s probe
    assert search.peak_hz is not None
    assert peak - 2.0 - slack < search.peak_hz <= peak + slack
    assert len(calls) <= 12     # a bisection and a short scan, not a sweep


def test_peak_search_scans_past_a_probe_that_failed_by_chance():
    # the bisection's first midpoint fails once by chance; the scan upward still
    # finds the rates above it that pass
    failed_once = []

    def probe(rate):
        if rate == 32.5 and not failed_once:
            failed_once.append(rate)
            return Verdict(rate, False, 'a hiccup')
        return _capacity_probe(40.0)(rate)
    search = find_peak(probe, lo=5.0, hi=60.0, step=2.0)
    assert failed_once
    assert 40.0 / 0.95 - 2.0 < search.peak_hz <= 40.0 / 0.95


def test_peak_below_the_lowest_rate_and_at_the_highest():
    assert find_peak(_capacity_probe(4.0), lo=5.0, hi=60.0).peak_hz is None
    assert find_peak(_capacity_probe(80.0), lo=5.0, hi=60.0).peak_hz == 60.0
    with pytest.raises(ValueError):
        find_peak(_capacity_probe(10.0), lo=10.0, hi=5.0)


def test_peak_search_with_a_few_frames_lost_at_random_stays_near_the_capacity():
    rng = random.Random(7)
    search = find_peak(_capacity_probe(30.0, noise=lambda: rng.randint(0, 3)),
                       lo=5.0, hi=60.0, step=2.0)
    assert 30.0 / 0.95 - 4.0 <= search.peak_hz <= 30.0 / 0.95 + 0.2


def test_judge_every_node_must_keep_95_percent():
    ok = NodeCount(100, 96, 10.0)
    short = NodeCount(100, 94, 10.0)
    assert judge(10.0, {'/a': ok, '/b': ok}).passed
    v = judge(10.0, {'/a': ok, '/b': short})
    assert not v.passed and '/b 94 %' in v.why and '/a' not in v.why
    assert not judge(10.0, {}).passed


def test_judge_fails_a_feeder_that_could_not_keep_the_rate():
    v = judge(60.0, {'/a': NodeCount(400, 400, 10.0)}, sent_hz=40.0)
    assert not v.passed and 'feeder' in v.why


def test_judge_fails_an_output_rate_under_the_playback_rate():
    # every frame sent came back, but the window was longer than the frames
    # sent say: the node answered at 8 Hz, not 10
    v = judge(10.0, {'/a': NodeCount(80, 80, 10.0)})
    assert not v.passed and 'output slower' in v.why


def _image_cdr(sec, nsec, frame_id=b'cam'):
    import struct
    fid = frame_id + b'\x00'
    body = struct.pack('<iI', sec, nsec) + struct.pack('<I', len(fid)) + fid
    return b'\x00\x01\x00\x00' + body


def test_set_stamp_rewrites_the_header_in_place():
    from rclpy.serialization import deserialize_message, serialize_message
    from sensor_msgs.msg import Image
    msg = Image(height=2, width=3, encoding='rgb8', step=9, data=bytes(18))
    msg.header.stamp.sec, msg.header.frame_id = 5, 'camera'
    buf = bytearray(serialize_message(msg))
    set_stamp(buf, 1_767_225_600_123_456_789)
    back = deserialize_message(bytes(buf), Image)
    assert (back.header.stamp.sec, back.header.stamp.nanosec) == (1_767_225_600, 123_456_789)
    assert back.header.frame_id == 'camera' and back.width == 3 and len(back.data) == 18
    assert parse_header(bytes(buf)) == (1_767_225_600, 123_456_789, 'camera')


def test_result_times_read_from_a_serialized_edge_infer_result():
    from edge_infer_msgs.msg import Classification, DetectionArray
    from rclpy.serialization import serialize_message
    for kind in (DetectionArray, Classification):
        msg = kind(model='nanodet', backend='openvino/cpu/t1', image_width=640,
                   image_height=480, preprocess_ms=1.5, inference_ms=12.25, postprocess_ms=0.5)
        msg.header.stamp.sec, msg.header.stamp.nanosec = 7, 99
        assert parse_result_times(serialize_message(msg)) == (7, 99, 1.5, 12.25, 0.5)


def test_a_configuration_names_a_backend_and_settings():
    from edge_infer.tools.benchmark.graph_run import parse_config
    assert parse_config('auto') == ({}, {})
    assert parse_config('openvino/cpu/t1') == ({'backend': 'openvino/cpu/t1'}, {})
    assert parse_config('auto+frame_order=arrival+tracker=none') == (
        {'tracker': 'none'}, {'frame_order': 'arrival'})
    assert parse_config('auto+thread_budget=2') == ({}, {'thread_budget': 2})
    with pytest.raises(ValueError, match='key=value'):
        parse_config('auto+frame_order')


def test_the_verb_refuses_a_missing_bag_and_a_bad_rate_in_one_line(tmp_path, capsys):
    from edge_infer.cli import main
    assert main(['benchmark', '--bag', str(tmp_path / 'none')]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'no rosbag2 folder' in err[0]
    (tmp_path / 'metadata.yaml').write_text('rosbag2_bagfile_information: {}\n')
    assert main(['benchmark', '--bag', str(tmp_path), '--fixed', 'ten']) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and '--fixed ten' in err[0]
