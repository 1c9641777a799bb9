# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The telemetry node's parameters: name -> (default, description).

Free of rclpy: the node declares them from here, and :mod:`edge_infer.validate`
checks a params file against the same table.
"""

PARAMETERS = {
    'sample_rate_hz': (100.0, 'internal sampling rate, hertz (capped at the sensor limit)'),
    'publish_rate_hz': (10.0, 'rate of ~/power messages, hertz'),
    'history_s': (30.0, 'seconds of samples kept for energy attribution'),
    'sysfs_root': ('/', 'root under which sysfs/procfs sensor paths are looked up'),
    'disable_sources': ([''], 'power source names to skip, e.g. [battery]'),
    'power_models_file': ('', "estimator power models; '' = config/power_models.yaml"),
    'power_model': ('', "estimator model key; '' = matched from the board name"),
    'diagnostics_period': (1.0, 'seconds between /diagnostics messages; 0 = off'),
}
