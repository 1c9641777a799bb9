# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Several cameras' frames in one model run: a perception node's batch path.

Part of :class:`~.perception_node.PerceptionNode`. At configure, a node with
several cameras asks its run-time choice whether their frames run in
batches here (``batching``: :mod:`edge_infer.backends.live.batching`
measures it). Where they do, a frame thread takes every free camera's
waiting frame at once (waiting up to ``batch_timeout_ms`` for the others)
and :func:`process_batch` runs them together. Each frame then goes on as a
lone frame would: its own camera's tracker, header, topics and counters,
and 1/k of the run's energy on its camera's ~/energy; once its result is
out, its camera is free for the other frame thread. A frame that cannot be
read is rejected on its camera alone; when the batch cannot run (too few
frames for it to pay, a frame the model's preprocessing refuses, the
backend switched since), the frames are run one at a time: none is lost.
"""

import time
from typing import Callable, List

from .camera_input import Taken
from ..core.image import ImageError
from ..core.postprocess import OutputError
from ..telemetry.ledger import BatchMarks


def plan(node, values) -> None:
    """Measure (or read) how ``node``'s cameras' frames run; say it in one line."""
    cams, live = node.parts.cameras, node.parts.live
    if len(cams) < 2 or live is None:
        return
    t0 = time.perf_counter()
    with node.acting():
        batch = live.plan_batch(len(cams), values['batching'])
    node.frames.batch_wait_s = values['batch_timeout_ms'] / 1e3 if batch.size > 1 else None
    node.frames.batch_min = batch.min_frames
    node.get_logger().info(f'{len(cams)} cameras, frames: {batch.why} '
                           f'(decided in {time.perf_counter() - t0:.1f} s)')


def _guarded(node, feed, work: Callable[[], None]) -> bool:
    """Run one frame's ``work``; its fault is counted on its camera. False: ROS is gone."""
    try:
        work()
    except (ImageError, OutputError) as exc:
        feed.reject(str(exc))
    except Exception as exc:  # keep serving: one line, not a traceback
        if not node.context.ok():
            return False
        feed.reject(f'{type(exc).__name__}: {exc}')
    return True


def process_batch(node, taken: List[Taken]) -> None:
    """Run the cameras' frames ``taken`` together where the plan allows; publish each."""
    parts = node.parts
    live, read = parts.live, []
    assert live is not None         # frames are processed once configured
    for feed, received, raw in taken:
        t0 = time.perf_counter()

        def parse(feed=feed, received=received, t0=t0):
            read.append((parts.cameras[feed.index], *feed.parse(raw), received, t0))
        if not _guarded(node, feed, parse):
            return
    frames = [frame for _, _, frame, _, _ in read]
    marks = BatchMarks(parts.meter.ledger, live.spec.name,
                       [cam.energy.pending for cam, *_ in read]) \
        if parts.meter is not None else None
    t1 = time.perf_counter()
    try:
        results = live.infer_batch(frames, around_run=marks) if len(read) > 1 else None
    except (ImageError, OutputError):
        results = None      # one at a time: only the frame at fault is rejected
    pending = marks.take() if marks is not None and results is not None else []
    for k, (cam, stamp, frame, received, t0) in enumerate(read):
        if results is None:     # each frame run alone, as the frame thread would
            ok = _guarded(node, cam.feed, lambda: node._serve(cam, stamp, frame,
                                                              (received, t0, t1)))
        else:
            cam.stats.count('batched')
            ok = _guarded(node, cam.feed, lambda: node._serve(
                cam, stamp, frame, (received, t0, t1), results[k],
                pending[k] if pending else None))
        if not ok:
            return
        # its result is out: the other frame thread may take this camera's next frame
        node.frames.slots.done([cam.feed.index])
