# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A perception node's cameras: one session serves them all, each keeps its own outputs.

With ``image_topics`` (two or more) one node subscribes to every camera and
its one model session serves them, the frame that waited longest first
(:class:`.camera_input.FrameThread`: two threads, so that one reads and
publishes a camera's frame while the other runs the model; in batches
where that pays, :mod:`.batch_frames`). Each camera keeps
what is its own: its newest-frame slot and counters, its tracker, its
result topics and its ~/energy records, its debug image. Its topics are the
node's under the camera's name: ``~/<camera>/detections``,
``~/<camera>/vision/detections``, ``~/<camera>/energy``, ... The names come
from ``camera_names`` (default ``camera0``, ``camera1``, ...), not from the
frames' ``frame_id``: topics are made at configure, before any frame, and a
name the user chose stays put when a driver changes its frame ids. Every
result keeps its own frame's header (stamp and frame_id).

One camera (``image_topic``, or one entry) is the node as before: topics
``~/detections``, ..., no camera name.
"""

from dataclasses import dataclass
from typing import Any, Optional

from .batch_frames import plan
from .camera_input import CameraInput
from .debug_image import DebugImage
from .energy_follow import EnergyFollow
from .perception_params import cameras, depth_topics
from .tasks import make_task, Task
from .tracks_and_depth import TracksAndDepth
from ..core.stream import StreamStats


class CameraScope:
    """``node`` as one camera's outputs see it: its ``~/x`` topics are ``~/<camera>/x``."""

    def __init__(self, node, name: str):
        self._node, self._prefix = node, f'~/{name}/'

    def _topic(self, topic: str) -> str:
        return self._prefix + topic[2:] if topic.startswith('~/') else topic

    def create_lifecycle_publisher(self, kind, topic: str, *args, **kwargs):
        """Create the node's lifecycle publisher on the camera's topic."""
        return self._node.create_lifecycle_publisher(kind, self._topic(topic), *args, **kwargs)

    def create_publisher(self, kind, topic: str, *args, **kwargs):
        """Create the node's publisher on the camera's topic."""
        return self._node.create_publisher(kind, self._topic(topic), *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        """Everything else is the node's."""
        return getattr(self._node, name)


@dataclass
class Camera:
    """One camera of a perception node: its input, counters and outputs (None: not made)."""

    name: str                   # '' : the node's only camera (its topics as before)
    feed: CameraInput       # its subscription into the frame thread's slot
    stats: StreamStats
    energy: EnergyFollow        # its ~/energy records
    task: Optional[Task] = None                     # its result publishers
    tracks_and_depth: Optional[TracksAndDepth] = None   # its tracker (and depth)
    debug: Optional[DebugImage] = None              # its ~/debug_image

    def release(self, destroy_publisher) -> None:
        """Destroy the outputs (``destroy_publisher``: the node's, for ~/energy)."""
        for part in (self.task, self.tracks_and_depth, self.debug):
            if part is not None:
                part.destroy()
        self.task = self.tracks_and_depth = self.debug = None
        self.energy.release(destroy_publisher)
        self.energy.mark_runs(None, '')


def make_cameras(node, values, overrides: dict, parts) -> None:
    """Make each camera of the parameters ``values`` (:func:`.perception_params.cameras`).

    Appended to ``parts.cameras`` as they are made (the node's cleanup
    releases what a failure left). The first camera's input, counters and
    ~/energy follower are the node's own (``node.camera``, ``node.stats``,
    ``node.energy``); with several cameras each counts on its own and into
    the node's totals, and their frames run in batches where that pays
    (:func:`.batch_frames.plan`). ValueError names a parameter that cannot
    be served. ``overrides``: the model's decoder settings from the parameters.
    """
    from edge_infer_msgs.msg import EnergyRecord
    assert parts.live is not None       # started
    spec, meter, cams = parts.live.spec, parts.meter, parts.cameras
    threshold = overrides.get('score_threshold', spec.decoder_args.get('score_threshold', 0.0))
    depths = depth_topics(values)
    for i, (name, topic) in enumerate(cameras(values)):
        stats = StreamStats(parent=node.stats) if name else node.stats
        if i == 0:
            cam_in, energy = node.camera, node.energy
            cam_in.stats, cam_in.name, energy.stats = stats, name, stats
        else:
            cam_in = CameraInput(node, stats, node.frames.slots, i, name)
            energy = EnergyFollow(stats, node.ros_time, node.context.ok)
        cam = Camera(name, cam_in, stats, energy)
        cams.append(cam)
        cam_in.configure(values['transport'], topic, spec.input_spec)
        scope = CameraScope(node, name) if name else node
        cam.task = make_task(scope, spec, values['result_messages'], values['output_topic'],
                             threshold)
        cam.tracks_and_depth = TracksAndDepth(scope, spec, {**values, 'depth_topic': depths[i],
                                                            'model_threshold': threshold})
        if values['debug_image_rate_hz'] > 0:
            cam.debug = DebugImage(scope, values['debug_image_rate_hz'], stats)
        energy.mark_runs(meter, spec.name)
        if meter is not None:
            energy.pub = scope.create_lifecycle_publisher(EnergyRecord, '~/energy', 10)
    node.frames.set_cameras([c.feed for c in cams])
    plan(node, values)
