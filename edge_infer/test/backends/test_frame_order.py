# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The compute gate's frame order: with more frames than slots, which waiting frame goes in."""

import threading
import time

from edge_infer.backends.measure.gate import ComputeGate
from edge_infer.validate import ArgumentError, check_params
import pytest


def _learn(gate, key, ms):
    """Let ``key`` hold the gate once for about ``ms``: its measured cost."""
    with gate.shared(key):
        time.sleep(ms / 1e3)


def _entry_order(gate, keys):
    """Queue ``keys`` (in this order) behind a holder of the only slot; return who went in."""
    entered, lock = [], threading.Lock()
    holding, release = threading.Event(), threading.Event()

    def hold():
        with gate.shared('holder'):
            holding.set()
            release.wait(5)

    def wait_in(key):
        with gate.shared(key):
            with lock:
                entered.append(key)
    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(5)
    threads = []
    for key in keys:
        th = threading.Thread(target=wait_in, args=(key,))
        th.start()
        threads.append(th)
        deadline = time.monotonic() + 5     # queued before the next one comes
        while len(gate._queue) < len(threads) and time.monotonic() < deadline:
            time.sleep(0.001)
    release.set()
    for th in [holder, *threads]:
        th.join(5)
    return entered


@pytest.mark.parametrize('order, expected', [
    ('longest_first', ['detector', 'pose', 'segmenter']),
    ('shortest_first', ['segmenter', 'pose', 'detector']),
    ('arrival', ['segmenter', 'detector', 'pose'])])
def test_waiting_frames_go_in_by_the_order_and_the_measured_cost(order, expected):
    gate = ComputeGate()
    for key, ms in (('detector', 12), ('pose', 5), ('segmenter', 1)):
        _learn(gate, key, ms)
    assert gate.cost_ms('detector') > gate.cost_ms('pose') > gate.cost_ms('segmenter')
    gate.set_limit(1)
    gate.set_order(order)
    assert _entry_order(gate, ['segmenter', 'detector', 'pose']) == expected


def test_with_free_slots_nobody_waits_for_the_order():
    gate = ComputeGate()
    _learn(gate, 'detector', 5)
    gate.set_limit(2)
    gate.set_order('longest_first')
    inside = threading.Barrier(2, timeout=5)

    def both(key):
        with gate.shared(key):
            inside.wait()       # both inside at once: two slots, two frames
    threads = [threading.Thread(target=both, args=(k,)) for k in ('detector', 'pose')]
    for th in threads:
        th.start()
    for th in threads:
        th.join(5)
    assert not inside.broken


def test_an_unknown_order_is_refused_by_the_gate_and_the_params_check():
    with pytest.raises(ValueError, match='longest_first'):
        ComputeGate().set_order('random')
    params = {'perception_container': {'ros__parameters': {
        'nodes': [], 'telemetry': '', 'frame_order': 'random'}}}
    with pytest.raises(ArgumentError, match="'frame_order'"):
        check_params(params, 'perception_container', 'x.yaml')


@pytest.mark.parametrize('gap_s, expected', [
    (1.0, ['segmenter', 'pose', 'detector']),       # slots 2 % busy: shortest first
    (0.005, ['segmenter', 'detector', 'pose'])])    # busy over the limit: first come
def test_adaptive_is_shortest_first_with_slack_and_first_come_near_the_limit(gap_s, expected):
    gate = ComputeGate()
    for key, ms in (('detector', 12), ('pose', 5), ('segmenter', 1)):
        _learn(gate, key, ms)
    # each model's frames came every gap_s seconds (what the gate measures as they come)
    gate._period = {k: (time.monotonic(), gap_s) for k in ('detector', 'pose', 'segmenter')}
    gate.set_limit(1)
    gate.set_order('adaptive')
    assert (gate.busy() < 0.5) == (gap_s == 1.0)
    assert _entry_order(gate, ['segmenter', 'detector', 'pose']) == expected
