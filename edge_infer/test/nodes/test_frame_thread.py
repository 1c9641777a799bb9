# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The node's frame threads: one left inside a hung frame does not serve beside the new ones."""

import contextlib
import threading
from types import SimpleNamespace

from edge_infer.core.stream import StreamStats
from edge_infer.nodes.camera_input import FrameThread


def _node():
    return SimpleNamespace(get_name=lambda: 'cam_test', acting=contextlib.nullcontext,
                           context=SimpleNamespace(ok=lambda: True))


def test_a_thread_left_inside_a_frame_ends_after_it_when_the_node_starts_again():
    entered, release = threading.Event(), threading.Event()
    served = []         # (thread, raw) per frame

    def process(cam, received, raw):
        served.append((threading.current_thread(), raw))
        if raw == b'hangs':
            entered.set()
            release.wait(30)

    ft = FrameThread(_node(), process)
    cam = SimpleNamespace(stats=StreamStats(), running=False, reject=lambda why: None)
    ft.set_cameras([cam])
    ft.start()
    ft.slots.put(0, (0.0, b'hangs'))
    assert entered.wait(10)
    old = served[0][0]
    ft.cancel()
    assert ft.join(timeout=0.2) == [old.name]       # still inside the frame: said, not waited
    ft.start()
    ft.slots.put(0, (0.0, b'next'))
    release.set()
    old.join(10)
    assert not old.is_alive()       # it finished its frame and left
    for k in range(5):              # the new thread serves the frames that follow
        done = threading.Event()
        ft._process = lambda cam, received, raw, done=done: (served.append(
            (threading.current_thread(), raw)), done.set())
        ft.slots.put(0, (0.0, b'more'))
        assert done.wait(10)
    assert {t for t, raw in served[1:]} == {ft.workers[0]} and old not in ft.workers
    ft.cancel()
    assert ft.join() == []
