# Copyright 2026 edge_infer contributors. Apache-2.0.
"""One frame in, one result out: what a perception node asks of its model per frame (no ROS).

The node asks :class:`MeteredChoice` for a result and publishes it; nothing
calls back into the node. Inside, the run-time choice (:class:`.choice.LiveChoice`)
runs the frame (switching or falling back between frames), and each model
run is marked on the power meter, again when a fallback runs the frame a
second time: the record of the run that gave the result rides with it.
After the result is out, :meth:`MeteredChoice.after_frame` lets the choice
time a runner-up in the time left before the next frame.
"""

from typing import Any, Callable, List, Optional, Tuple

from .choice import LiveChoice
from ...core.model import Result


class MeteredChoice:
    """A model's run-time choice with each run marked on the power meter."""

    def __init__(self, live: LiveChoice, meter=None,
                 record: Optional[Callable[[], Any]] = None):
        """Serve ``live``'s model; ``meter`` (begin/end) marks each run when given.

        ``record``: returns a fresh energy record per run, whose ``deliver``
        is the meter's end() callback.
        """
        self.live = live
        self._meter = meter if record is not None else None
        self._record = record

    def infer(self, frame) -> Tuple[Result, Optional[Any]]:
        """Return the frame's result and its run's energy record (None: no meter)."""
        meter, record = self._meter, self._record
        if meter is None or record is None:
            return self.live.infer(frame), None
        name = self.live.spec.name
        latest: List[Any] = [None]

        def around():       # one model run (again if the frame is retried after a fallback)
            latest[0] = p = record()
            token = meter.begin(name)
            return lambda: meter.end(token, callback=p.deliver)
        result = self.live.infer(frame, around_run=around)
        return result, latest[0]

    def after_frame(self) -> bool:
        """Time a runner-up on the last frame, when the duty allows (after publishing)."""
        return self.live.after_frame()
