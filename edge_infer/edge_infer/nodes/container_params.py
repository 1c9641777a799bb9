# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The perception container's own parameters: name -> (default, description).

Free of rclpy: the container declares them from here, and
:mod:`edge_infer.validate` checks a params file against the same table
before anything starts. Documented in config/perception.yaml.
"""

EXECUTORS = ('events', 'single')

PARAMETERS = {
    'nodes': (['detector', 'classifier', 'pose', 'segmenter'],
              'the perception nodes this process hosts (each has a section of its own)'),
    'autostart': (False, 'configure and activate the hosted nodes at start'),
    'telemetry': ('telemetry', "the power telemetry node's name; '' = none"),
    'thread_budget': (0, "inference threads per model, leased from the host's cores; "
                         '0 = auto, -1 = no cap (edge_infer/host_budget.py)'),
    'executor': ('events', "rclpy executor: 'events' (EventsExecutor) or 'single'"),
    'keep_partial': (True, 'autostart: run on when some node cannot be made active; '
                           'false = stop with exit code 3'),
}


def check_executor_kind(kind: str) -> None:
    """Raise ValueError naming the ``executor`` parameter unless ``kind`` is one of EXECUTORS."""
    if kind not in EXECUTORS:
        raise ValueError(f"parameter 'executor' must be one of {', '.join(EXECUTORS)}: "
                         f"'{kind}'")
