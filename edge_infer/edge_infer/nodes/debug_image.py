# Copyright 2026 edge_infer contributors. Apache-2.0.
"""~/debug_image: the frame with its results drawn, when someone looks (a node's part).

Nothing is drawn or copied while the topic has no subscriber, and at most
``rate_hz`` images go out; the result is published first, so drawing never
delays it.
"""

import time

from sensor_msgs.msg import Image

from ..core.stream import StreamStats


class DebugImage:
    """A perception node's ~/debug_image publisher, capped at ``rate_hz``."""

    def __init__(self, node, rate_hz: float, stats: StreamStats):
        self.pub = node.create_lifecycle_publisher(Image, '~/debug_image', 1)
        self._node = node
        self._period = 1.0 / rate_hz
        self._next = 0.0            # time.monotonic() of the next allowed image
        self._stats = stats

    def subscribers(self) -> int:
        """Return how many subscribers ~/debug_image has."""
        return self.pub.get_subscription_count()

    def publish(self, frame, result, out, task) -> None:
        """Draw ``result`` on ``frame`` and publish it with ``out``'s header, if due."""
        if self.pub.get_subscription_count() == 0:
            return
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self._period
        from ..core.draw import to_bgr
        img = to_bgr(frame.pixels, frame.color)
        if frame.source_size is not None:   # a scaled JPEG decode: draw at the source's size
            import cv2
            img = cv2.resize(img, frame.source_size, interpolation=cv2.INTER_LINEAR)
        task.draw(img, result, f'{out.model} | {out.backend} | {out.inference_ms:.1f} ms')
        msg = Image(header=out.header, height=img.shape[0], width=img.shape[1],
                    encoding='bgr8', step=img.shape[1] * 3, data=img.tobytes())
        self.pub.publish(msg)
        self._stats.count('debug_images')

    def destroy(self) -> None:
        """Destroy the publisher."""
        self._node.destroy_lifecycle_publisher(self.pub)
