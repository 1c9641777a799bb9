# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Who is who, and where: a perception node's tracker and its 3D from depth.

For the tasks that give boxes (detection, pose, instance segmentation):

- ``tracker`` (default on): each result's boxes get track ids
  (:mod:`edge_infer.core.tracking`), from the frames' stamps, so the frames
  the node drops under load are gaps the tracker sees, not a fixed rate. The
  ids go into every message that carries the boxes (edge_infer's
  ``track_id``, vision_msgs' ``Detection2D.id``) and onto the debug image.
  ``reid_window_s``: a person back within it who looks the same gets their
  old id (:mod:`edge_infer.core.reid`, from the frame's pixels).
  ``publish_untracked`` false (the default): only boxes with an id go out,
  the others are counted (``untracked_withheld``).
- ``depth_topic`` (default off): 3D per detection from an aligned depth
  camera, on ``~/vision/detections_3d`` (:mod:`.depth_out`).

A classifier or a semantic mask has no boxes: the parameters are ignored
there, with one line.
"""

from typing import Any, Dict, Mapping, Optional

from .depth_out import DepthOutputs
from .tasks import instance_decoder
from ..core.tracking import DEFAULT, make_tracker, score_settings, TrackerError


class TracksAndDepth:
    """One node's tracker and depth outputs (either may be off)."""

    def __init__(self, node, spec, values: Mapping[str, Any]):
        """Make the tracker and the depth publisher ``values`` (the node's parameters) ask for.

        Raises ValueError naming a parameter that cannot be served.
        """
        self.tracker = None
        self.depth: Optional[DepthOutputs] = None
        self.untracked = bool(values['publish_untracked'])
        self.withheld = 0       # boxes no track held, not published (publish_untracked false)
        log = node.get_logger()
        name, topic = values['tracker'], values['depth_topic']
        boxes = spec.task in ('detection', 'pose') or (
            spec.task == 'segmentation' and instance_decoder(spec.decoder))
        if not boxes:
            if name not in ('none', DEFAULT) or topic:     # asked for, not the default
                log.info(f'tracker and depth_topic ignored: a {spec.task} model has no boxes')
            return
        try:
            self.tracker = make_tracker(name, reid_window_s=values['reid_window_s'],
                                        **score_settings(name, values['model_threshold']))
        except TrackerError as exc:     # its library is not installed: 2D without ids
            log.warning(f"tracker '{name}' unavailable ({exc}): results go out without "
                        f'track ids')
        if topic:
            self.depth = DepthOutputs(node, spec, topic, values['camera_info_topic'],
                                      values['depth_tolerance_s'])

    def track(self, result, stamp_s: float, frame=None) -> None:
        """Give ``result``'s boxes their track ids; keep only those with one unless asked.

        ``stamp_s``: the colour frame's stamp; ``frame``: its pixels (for
        re-association by appearance).
        """
        if self.tracker is not None:
            out = result.output
            out.track_ids = self.tracker.update(out.boxes, out.scores, out.class_ids, stamp_s,
                                                frame)
            tracked = out.track_ids >= 0
            if not self.untracked and not tracked.all():
                self.withheld += int((~tracked).sum())
                result.output = out.rows(tracked)

    def publish(self, header, result, width: int, height: int) -> None:
        """Publish the 3D of ``result`` (after its 2D results)."""
        if self.depth is not None:
            self.depth.publish(header, result, width, height)

    def activate(self) -> None:
        """Take depth frames; a track does not outlive a deactivation."""
        if self.tracker is not None:
            self.tracker.reset()
        if self.depth is not None:
            self.depth.subscribe()

    def deactivate(self) -> None:
        """Stop taking depth frames."""
        if self.depth is not None:
            self.depth.unsubscribe()

    def destroy(self) -> None:
        """Destroy the depth subscriptions and publisher."""
        if self.depth is not None:
            self.depth.destroy()
            self.depth = None

    def status(self) -> Dict[str, Any]:
        """Return what /diagnostics shows of them."""
        values: Dict[str, Any] = {'tracker': getattr(self.tracker, 'name', 'none')}
        if self.tracker is not None:
            reid = self.tracker.reid
            values.update({'untracked_withheld': self.withheld,
                           'ids_given_back': 'off' if reid is None else reid.given_back})
        if self.depth is not None:
            values.update(self.depth.status())
        return values
