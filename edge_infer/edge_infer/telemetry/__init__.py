# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Power and energy telemetry without ROS: sensor readers, an estimator, a meter.

- :mod:`.sources`: :func:`discover` probes the board's power sensors (Jetson
  INA3221 hwmon / iio, Odroid INA231, RAPL, NVML, battery) and returns the
  available ones, the CPU-load estimator last.
- :mod:`.meter`: :class:`PowerMeter` samples the first source on a thread,
  fails over to the next, integrates energy, and attributes energy to model
  runs (``begin``/``end``) as :class:`RunEnergy` with rate and error (the
  nodes publish it as the edge_infer_msgs ``EnergyRecord`` message).
- :mod:`.power_model`: the estimator's per-board models
  (``config/power_models.yaml``) and :func:`board_power_model`, the one
  that fits this board.

Typical use::

    meter = PowerMeter(discover(), rate_hz=100.0)
    meter.start()
    tok = meter.begin('nanodet')
    ...  # run the model
    rec = meter.end(tok)  # rec.joules +- rec.error_j at rec.sample_rate_hz
"""

from edge_infer.telemetry.meter import PowerMeter, RunEnergy, Switch
from edge_infer.telemetry.power_model import (board_power_model, load_power_models,
                                              PowerModel)
from edge_infer.telemetry.sources import (BatterySource, discover, EstimatorSource,
                                          JetsonHwmonSource, JetsonIioSource, NvmlSource,
                                          OdroidIna231Source, PowerSource, Rail, RaplSource,
                                          Sample, SourceError)

__all__ = [
    'BatterySource', 'board_power_model', 'discover', 'EstimatorSource',
    'JetsonHwmonSource', 'JetsonIioSource', 'load_power_models', 'NvmlSource',
    'OdroidIna231Source', 'PowerMeter', 'PowerModel', 'PowerSource', 'Rail', 'RaplSource',
    'RunEnergy', 'Sample', 'SourceError', 'Switch',
]
