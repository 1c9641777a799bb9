# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Newest-frame slot: a slow consumer sees the latest frame; the rest are counted."""

import threading
import time

from edge_infer.core.stream import LatestSlot, Slots, StreamStats


def test_newer_frame_replaces_pending_one_and_reports_a_drop():
    slot = LatestSlot()
    assert slot.put(1) is False
    assert slot.put(2) is True          # 1 was never taken: dropped
    assert slot.take(0) == 2
    assert slot.take(0) is None


def test_slow_consumer_gets_newest_frames_and_counts_add_up():
    slot, stats = LatestSlot(), StreamStats()
    got = []

    def consume():
        while True:
            item = slot.take(1.0)
            if item is None or item == 'end':
                return
            got.append(item)
            stats.count('processed')
            time.sleep(0.01)                # slower than the producer

    t = threading.Thread(target=consume)
    t.start()
    for i in range(200):
        stats.count('received')
        if slot.put(i):
            stats.count('dropped')
        time.sleep(0.001)
    deadline = time.monotonic() + 5
    while stats.processed + stats.dropped < 200 and time.monotonic() < deadline:
        time.sleep(0.01)
    slot.put('end')
    t.join(5)
    snap = stats.snapshot()
    assert got == sorted(got) and got[-1] == 199       # order kept, newest seen
    assert snap['dropped'] > 0
    assert snap['processed'] + snap['dropped'] == snap['received'] == 200


def test_close_wakes_a_waiting_consumer():
    slot = LatestSlot()
    out = []
    t = threading.Thread(target=lambda: out.append(slot.take(10)))
    t.start()
    time.sleep(0.05)
    slot.close()
    t.join(2)
    assert not t.is_alive() and out == [None]


def test_latency_percentiles_over_a_bounded_window():
    stats = StreamStats(window=100)
    for v in range(1000):
        stats.add_latency(float(v))
    p50, p95 = stats.percentiles(50, 95)
    assert 940 < p50 < 960 and 990 < p95 < 1000      # only the last 100 kept


def test_slots_take_the_oldest_arrival_and_count_each_cameras_drops():
    slots = Slots(3)
    assert slots.take(timeout=0) is None
    assert not slots.put(0, 'a0') and not slots.put(1, 'b0')
    assert slots.put(0, 'a1')           # replaced a frame nobody took: a drop
    assert not slots.put(2, 'c0')
    # camera 0 keeps its place (it waited first), with its newest frame
    assert [slots.take(timeout=0) for _ in range(3)] == [(0, 'a1'), (1, 'b0'), (2, 'c0')]
    assert slots.take(timeout=0) is None
    slots.put(2, 'c1')
    slots.put(1, 'b1')
    assert slots.clear() == [1, 2] and slots.take(timeout=0) is None
    slots.close()
    assert slots.take(timeout=5) is None    # closed: no wait
    slots.reopen()
    slots.put(1, 'b2')
    assert slots.take(timeout=5) == (1, 'b2')


def test_a_batch_takes_every_waiting_camera_and_waits_only_up_to_its_timeout():
    slots = Slots(3)
    slots.put(1, 'b0')
    slots.put(0, 'a0')
    # no timeout: what is waiting, the oldest first
    assert slots.take_many(timeout=0) == [(1, 'b0'), (0, 'a0')]
    assert slots.take_many(timeout=0) == []
    # a silent camera: the incomplete batch goes out once its timeout is over
    slots.put(0, 'a1')
    slots.put(2, 'c1')
    t0 = time.monotonic()
    assert slots.take_many(timeout=0, wait_s=0.3) == [(0, 'a1'), (2, 'c1')]
    assert time.monotonic() - t0 >= 0.3
    # the last camera's frame completes the batch before the timeout
    slots.put(0, 'a2')
    late = threading.Thread(target=lambda: (slots.put(2, 'c2'), slots.put(1, 'b2')))
    t0 = time.monotonic()
    late.start()
    got = slots.take_many(timeout=0, wait_s=60)
    late.join()
    assert sorted(got) == [(0, 'a2'), (1, 'b2'), (2, 'c2')] and got[0] == (0, 'a2')
    assert time.monotonic() - t0 < 30
    # too few for a batch that pays: only the oldest, the rest left to the other takers
    slots.put(2, 'c3')
    slots.put(1, 'b3')
    assert slots.take_many(timeout=0, at_least=3) == [(2, 'c3')]
    assert slots.take_many(timeout=0, at_least=1) == [(1, 'b3')]
    # closing ends the wait at once
    slots.put(0, 'a3')
    slots.close()
    assert slots.take_many(timeout=0, wait_s=60) == [(0, 'a3')]


def test_a_held_camera_is_not_taken_again_until_its_frame_is_done():
    slots = Slots(2)
    slots.put(0, 'a0')
    assert slots.take(timeout=0, hold=True) == (0, 'a0')     # one thread works on a0
    slots.put(0, 'a1')
    slots.put(1, 'b1')
    assert slots.take(timeout=0, hold=True) == (1, 'b1')     # the other: not a1
    assert slots.take(timeout=0) is None and slots.take_many(timeout=0) == []
    slots.done([0])
    assert slots.take_many(timeout=0) == [(0, 'a1')]         # a0 done: a1 may go
    # a taker waiting for a held camera's frame wakes when the holder is done
    slots.put(1, 'b2')
    got = []
    waiter = threading.Thread(target=lambda: got.append(slots.take(timeout=60)))
    waiter.start()
    slots.done([1])
    waiter.join(30)
    assert got == [(1, 'b2')]
