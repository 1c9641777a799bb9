# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The perception container's own parameters: name -> (default, description).

Free of rclpy: the container declares them from here, and
:mod:`edge_infer.validate` checks a params file against the same table
before anything starts. Documented in config/perception.yaml.
"""

from typing import Callable, Dict

ROS_EXECUTORS = ('events', 'single')
# backends/measure/gate.py: which waiting frame takes a core
FRAME_ORDERS = ('adaptive', 'arrival', 'longest_first', 'shortest_first')

PARAMETERS = {
    'nodes': (['detector', 'classifier', 'pose', 'segmenter'],
              'the perception nodes this process hosts (each has a section of its own)'),
    'autostart': (False, 'configure and activate the hosted nodes at start'),
    'telemetry': ('telemetry', "the power telemetry node's name; '' = none"),
    'thread_budget': (0, "inference threads per model, leased from the host's cores; "
                         '0 = auto, -1 = no cap (edge_infer/host_budget.py)'),
    'ros_executor': ('events', "rclpy executor: 'events' (EventsExecutor) or 'single'"),
    'frame_order': ('adaptive', 'with more models than cores: which waiting frame runs '
                                'next (adaptive | arrival | longest_first | shortest_first)'),
    'keep_partial': (True, 'autostart: run on when some node cannot be made active; '
                           'false = stop with exit code 3'),
}

# old name -> new name: the old one still works for one release, with one
# warning line (CHANGELOG.rst); the container declares it apart from PARAMETERS
RENAMED = {'executor': 'ros_executor'}


def check_ros_executor(kind: str) -> None:
    """Raise ValueError naming ``ros_executor`` unless ``kind`` is one of ROS_EXECUTORS."""
    if kind not in ROS_EXECUTORS:
        raise ValueError(f"parameter 'ros_executor' must be one of "
                         f"{', '.join(ROS_EXECUTORS)}: '{kind}'")


def renamed(given: Dict[str, object], warn: Callable[[str], None]) -> Dict[str, object]:
    """Return ``given`` with each deprecated name moved to its new one, saying so in one line.

    ``given``: the parameters a params file sets (name -> value). One ``warn``
    line per old name used, naming the new one. Both names given with
    different values raise ValueError.
    """
    out = dict(given)
    for old, new in RENAMED.items():
        if old not in out:
            continue
        value = out.pop(old)
        if new in out and out[new] != value:
            raise ValueError(f"parameter '{old}' ({value!r}) is the old name of '{new}' "
                             f"({out[new]!r}): set '{new}' only")
        out[new] = value
        warn(f"parameter '{old}' is deprecated: use '{new}' (the same values)")
    return out
