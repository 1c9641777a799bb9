# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A perception node's cameras: each one's subscription and slot, and the frame threads.

Parts of :class:`~.perception_node.PerceptionNode`. Each camera's
subscription (:class:`CameraInput`) takes serialized messages (``raw=True``)
and only puts the newest one in its slot of the node's
:class:`~edge_infer.core.stream.Slots`; the node's :class:`FrameThread`
(one thread for one camera, :data:`WORKERS` for several) takes the frame
that waited longest among the cameras' and hands it to ``process(camera,
received, raw)``: one session serves every camera, round robin by arrival,
a camera's frames one after another, and a flooding camera only replaces
its own frame. Frames replaced before a thread took them are dropped and
counted, so a slow model never builds a queue. A frame that cannot be used (wrong encoding,
corrupt JPEG, an output the decoder does not know) is counted as rejected
on its camera with one log line per reason at most every 5 s, and the
thread goes on. :meth:`CameraInput.parse` reads the header fields from the
CDR bytes and views the pixels in place.
"""

import threading
import time
from typing import Callable, Dict, List, Optional, Tuple

from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.qos import qos_profile_sensor_data
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import CompressedImage, Image

from ..core.cdr import CdrError, parse_compressed_image, parse_image
from ..core.image import from_compressed, from_raw, ImageError, JPEG_DETECTS_CORRUPTION
from ..core.postprocess import OutputError
from ..core.stream import Slots, StreamStats

Stamp = Tuple[int, int, str]    # header: sec, nanosec, frame_id
# Frame threads of a node with several cameras: while one runs the model (the
# session takes one frame or batch at a time), another reads, publishes and
# tracks the frame of another camera (a camera's frames are never worked on
# at once). MobileNetV2, 4 cameras, here: 60 Hz a camera sustained with two
# threads, 40 Hz with one (bench/product/multi_camera.py --sustain).
WORKERS = 2
Taken = Tuple['CameraInput', float, bytes]     # a frame taken: its camera, arrival, bytes


class CameraInput:
    """One camera topic into its slot of the node's frame thread, every frame counted."""

    def __init__(self, node, stats: StreamStats, slots: Slots, index: int = 0, name: str = ''):
        """``node``: the ROS node it subscribes from; ``slots``: the frame thread's.

        ``index``: its slot; ``name``: the camera's ('' : the node's one camera).
        """
        self.node = node
        self.stats = stats
        self.slots, self.index, self.name = slots, index, name
        self.sub = None
        self.running = False        # the frame thread takes this camera's frames
        self.msg_type = Image
        self.topic = ''
        self.input_spec = None      # the model's: a JPEG is decoded at the scale it needs
        self._warned: Dict[str, Tuple[float, int]] = {}     # reason -> (last logged, count since)

    def configure(self, transport: str, topic: str, input_spec) -> None:
        """Take ``raw`` Images on ``topic`` or ``compressed`` ones on ``<topic>/compressed``."""
        self.msg_type = Image if transport == 'raw' else CompressedImage
        self.input_spec = input_spec
        if transport == 'compressed' and not JPEG_DETECTS_CORRUPTION:
            self.node.get_logger().warning('simplejpeg is not installed: JPEG frames are '
                                           'decoded with OpenCV, which cannot tell corrupt '
                                           'data (pip install simplejpeg)')
        self.topic = topic if transport == 'raw' else topic.rstrip('/') + '/compressed'

    @property
    def topic_name(self) -> str:
        """Return the topic subscribed to (remapped and namespaced once subscribed)."""
        return self.sub.topic_name if self.sub is not None else self.topic

    def subscribe(self) -> None:
        """Subscribe to the camera (after the rest of the node is ready for frames)."""
        self.sub = self.node.create_subscription(
            self.msg_type, self.topic, self._on_frame, qos_profile_sensor_data, raw=True,
            event_callbacks=SubscriptionEventCallbacks(message_lost=self._on_lost))

    def unsubscribe(self) -> None:
        """Stop receiving frames (the :class:`FrameThread` stops taking them)."""
        if self.sub is not None:
            self.node.destroy_subscription(self.sub)
            self.sub = None

    # ---------------------------------------------------------------- frames
    def _on_lost(self, event) -> None:
        """Count frames the middleware reports lost before delivery (message-lost event)."""
        n = int(getattr(event, 'total_count_change', 1))
        # Fast DDS 2.14 sends, beside one event per lost frame (change 1), one
        # whose total wrapped to -2**31 and change is 2**31 - 1 (measured: 2 lost
        # 8K frames gave changes 1, 2147483647, 1): that one is no frame
        if 0 < n < 1_000_000:
            self.lost(n)

    def lost(self, n: int) -> None:
        """Count ``n`` frames lost in transport; the first loss gets one line with the limit."""
        first = self.stats.lost == 0
        self.stats.count('lost', n)
        if first:
            self.node.get_logger().warning(
                f'{n} frame(s) on {self.topic_name} lost in transport (message-lost event), '
                f"never received: a frame larger than the transport carries (edge_infer's "
                f'Fast DDS profile: 63.8 MiB, docs/transport.md) or a subscriber too slow to '
                f'take its fragments; counted as lost on /diagnostics')

    def _on_frame(self, raw: bytes) -> None:
        self.stats.count('received')
        if self.slots.put(self.index, (time.perf_counter(), raw)):
            self.stats.count('dropped')

    def reject(self, reason: str) -> None:
        """Count a bad frame; log it once, then at most every 5 s per reason."""
        self.stats.reject(reason)
        now = time.monotonic()
        last, hidden = self._warned.get(reason, (-1e9, 0))
        if now - last >= 5.0:
            more = f' ({hidden} more like it since the last report)' if hidden else ''
            where = f' on camera {self.name}' if self.name else ''
            self.node.get_logger().warning(f'frame rejected{where}: {reason}{more}')
            self._warned[reason] = (now, 0)
        else:
            self._warned[reason] = (last, hidden + 1)
        if len(self._warned) > 100:     # bounded: forget the oldest reasons
            self._warned.pop(next(iter(self._warned)))

    def parse(self, raw: bytes):
        """Return (header fields, Frame) from serialized bytes, pixels viewed in place."""
        try:
            if self.msg_type is Image:
                f = parse_image(raw)
                frame = from_raw(f.encoding, f.height, f.width, f.step, f.data, f.is_bigendian)
            else:
                f = parse_compressed_image(raw)     # a JPEG: decoded at the scale it needs
                frame = from_compressed(f.format, f.data, self.input_spec)
            return (f.sec, f.nanosec, f.frame_id), frame
        except CdrError:        # an unusual encapsulation: let rclpy deserialize it
            msg = deserialize_message(raw, self.msg_type)
            stamp = (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id)
            if self.msg_type is Image:
                return stamp, from_raw(msg.encoding, msg.height, msg.width, msg.step,
                                       msg.data, msg.is_bigendian)
            return stamp, from_compressed(msg.format, msg.data, self.input_spec)


class FrameThread:
    """The node's frame threads: the oldest waiting frame of its cameras, each camera's in turn."""

    def __init__(self, node, process: Callable[[CameraInput, float, bytes], None],
                 process_batch: Optional[Callable[[List[Taken]], None]] = None):
        """``process(camera, received, raw)``: one frame of ``camera``.

        ``process_batch([(camera, received, raw), ...])``: the frames of
        several cameras at once, each frame's fault counted on its camera
        (used once :attr:`batch_wait_s` is set).
        """
        self.node, self.slots, self._process = node, Slots(1), process
        self.process_batch = process_batch or (lambda taken: None)
        # None: one frame at a time; else every waiting camera's frame at once,
        # waiting this long after the first for the cameras not yet in
        self.batch_wait_s: Optional[float] = None
        self.batch_min = 2      # fewer frames waiting: one at a time (the plan's min_frames)
        self.cameras: List[CameraInput] = []
        self.workers: List[threading.Thread] = []
        self.running = False
        self._generation = 0    # a start's threads; one left inside a frame ends after it

    def set_cameras(self, cameras: List[CameraInput]) -> None:
        """Serve ``cameras`` (not while running): one slot each, in their order."""
        self.slots = Slots(len(cameras))
        for i, cam in enumerate(cameras):
            cam.slots, cam.index = self.slots, i
        self.cameras = list(cameras)

    def start(self) -> None:
        """Start taking frames (before the cameras subscribe)."""
        self.slots.clear()
        self.slots.reopen()
        self.running = True
        for cam in self.cameras:
            cam.running = True
        name = self.node.get_name()
        self._generation += 1
        self.workers = [threading.Thread(target=self._work, args=(self._generation,), daemon=True,
                                         name=f'{name}-infer' + (f'{k}' if k else ''))
                        for k in range(min(WORKERS, len(self.cameras)))]
        for worker in self.workers:
            worker.start()

    def cancel(self) -> None:
        """Stop taking frames, without waiting (no ROS calls)."""
        self.running = False
        for cam in self.cameras:
            cam.running = False
        self.slots.close()

    def join(self, timeout: float = 10.0) -> List[str]:
        """Wait for the threads; a frame still in a slot counts as dropped on its camera.

        Returns the threads still inside a frame after ``timeout`` s (a backend
        that hangs): each ends after that frame, even if the node starts again.
        """
        deadline = time.monotonic() + timeout
        for worker in self.workers:
            worker.join(timeout=max(0.0, deadline - time.monotonic()))
        left = [w.name for w in self.workers if w.is_alive()]
        self.workers = []
        for i in self.slots.clear():
            if i < len(self.cameras):
                self.cameras[i].stats.count('dropped')
        return left

    def _work(self, generation: int) -> None:
        slots = self.slots
        with self.node.acting():     # a fallback's manager lines are this node's
            while self.running and generation == self._generation:
                if self.batch_wait_s is None:
                    got = slots.take(timeout=0.5, hold=True)
                    taken = [got] if got is not None else []
                else:       # every free camera's waiting frame, the oldest first
                    taken = slots.take_many(timeout=0.5, wait_s=self.batch_wait_s, hold=True,
                                            at_least=self.batch_min)
                try:
                    if len(taken) == 1:
                        if not self._one(self.cameras[taken[0][0]], taken[0][1]):
                            return
                    elif taken:
                        self.process_batch([(self.cameras[i], *item) for i, item in taken])
                except Exception as exc:  # a batch's frames' own faults are counted inside
                    if not self.node.context.ok():
                        return
                    for i, _ in taken:
                        self.cameras[i].reject(f'{type(exc).__name__}: {exc}')
                finally:    # (after a restart, start() cleared the holds)
                    if generation == self._generation:
                        slots.done(i for i, _ in taken)

    def _one(self, cam: CameraInput, item) -> bool:
        """Process one frame; False when the ROS context ended under it (stop)."""
        try:
            self._process(cam, *item)
        except (ImageError, OutputError) as exc:
            cam.reject(str(exc))
        except Exception as exc:  # keep serving: one line, not a traceback
            if not self.node.context.ok():
                return False    # Ctrl-C ended the context mid-frame: not a bad frame
            cam.reject(f'{type(exc).__name__}: {exc}')
        return True
