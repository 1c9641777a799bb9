# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The schedule simulator on hand-checkable cases and the example Jetson profile."""

from edge_infer import paths
from edge_infer.testing.schedule import load_profile, SimSegment, simulate
import pytest


def test_hand_checked_single_device_pipeline():
    one = {'m': [SimSegment('conv', {'accelerator': 10.0, 'cpu': 40.0})]}
    r = simulate(one, 'accelerator-only', frames=5, in_flight=1)
    assert r['makespan_ms'] == pytest.approx(50.0) and r['p95_ms'] == pytest.approx(10.0)
    # two frames in flight on one device: same makespan, each waits for the other
    r2 = simulate(one, 'accelerator-only', frames=4, in_flight=2)
    # latencies 10, 20, 20, 20 (frames 3 and 4 enter as slots free up)
    assert r2['makespan_ms'] == pytest.approx(40.0) and r2['mean_ms'] == pytest.approx(17.5)
    # the cost model sends the second in-flight frame to the CPU when waiting costs more
    two = {'m': [SimSegment('conv', {'accelerator': 10.0, 'cpu': 15.0})]}
    r3 = simulate(two, 'cost-model', frames=2, in_flight=2)
    assert r3['share'] == {'accelerator': 0.5, 'cpu': 0.5}
    assert r3['makespan_ms'] == pytest.approx(15.0)


def test_transfer_cost_keeps_segments_together():
    m = {'m': [SimSegment('conv', {'accelerator': 5.0, 'cpu': 20.0}),
               SimSegment('light', {'accelerator': 1.0, 'cpu': 0.5})]}
    free = simulate(m, 'cost-model', frames=1, in_flight=1, transfer_ms=0.0)
    costly = simulate(m, 'cost-model', frames=1, in_flight=1, transfer_ms=2.0)
    assert free['share']['cpu'] == 0.5 and free['makespan_ms'] == pytest.approx(5.5)
    assert costly['share']['cpu'] == 0.0 and costly['makespan_ms'] == pytest.approx(6.0)
    typed = simulate(m, 'by-layer-type', frames=1, in_flight=1, transfer_ms=2.0)
    assert typed['makespan_ms'] == pytest.approx(7.5)     # pays the transfer


def test_example_profile_shows_the_seed_004_shape():
    prof = load_profile(paths.config_dir() / 'executor_profiles' / 'jetson_xavier_example.yaml')
    gains = []
    for load in (0.0, 0.4, 0.6):
        base = simulate(prof['models'], 'accelerator-only', frames=60, load=load)
        cost = simulate(prof['models'], 'cost-model', frames=60, load=load)
        typed = simulate(prof['models'], 'by-layer-type', frames=60, load=load)
        assert base['share']['accelerator'] == 1.0
        assert cost['makespan_ms'] < typed['makespan_ms'] <= base['makespan_ms'] * 1.01
        gains.append(1 - cost['makespan_ms'] / base['makespan_ms'])
    assert gains[0] < gains[1] < gains[2]        # the gain grows with accelerator load
    with pytest.raises(ValueError, match='policy'):
        simulate(prof['models'], 'round-robin')
