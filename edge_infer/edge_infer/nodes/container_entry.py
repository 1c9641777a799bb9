# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The ``perception_container`` executable: its stop signals handled before any import.

:class:`.stopping.StopSignals` is installed first; rclpy, the inference
libraries and the nodes (:mod:`.container`) are imported only then, which
takes seconds: a stop requested meanwhile ends the process cleanly. So is
the parent's death signal (:func:`..procs.stop_with_parent`): a `ros2 launch`
stopped with SIGTERM during those seconds left the container running on.
"""

import sys

from .stopping import leave, StopSignals
from .. import procs


def container_main(args=None) -> int:
    """Run the ``perception_container`` executable, its signals handled before any import."""
    stop = StopSignals().install()
    procs.stop_with_parent()    # a `ros2 launch` stopped meanwhile leaves no orphan behind
    from .container import main
    return leave(main(args, stop=stop), stop)


if __name__ == '__main__':
    sys.exit(container_main())
