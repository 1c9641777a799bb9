# Copyright 2026 edge_infer contributors. Apache-2.0.
"""One power meter per process, shared by every node that needs one.

The perception nodes (energy per inference) and the telemetry node (power
topics) of one container must read the same sampler: two samplers would
double the overhead and attribute energy from different sample streams.
:meth:`ProcessMeter.acquire` starts the meter on first use and counts
users; :meth:`ProcessMeter.release` stops it when the last one lets go. The first caller's
settings win; a later caller asking for different settings gets the running
meter and a log line saying which settings are in force
(:class:`edge_infer.shared_resource.SharedResource`).
"""

from typing import Callable, List

from edge_infer.shared_resource import SharedResource
from edge_infer.telemetry.meter import PowerMeter
from edge_infer.telemetry.sources import discover


def settings(rate_hz: float = 100.0, root: str = '/', disable=(), power_models_file: str = '',
             power_model: str = '', history_s: float = 30.0) -> dict:
    """Return a normalised settings dict (what decides whether two callers agree)."""
    if rate_hz <= 0:
        raise ValueError(f'sample rate must be positive, got {rate_hz}')
    if history_s <= 0:
        raise ValueError(f'history must be positive, got {history_s}')
    return {'rate_hz': float(rate_hz), 'root': root or '/',
            'disable': tuple(sorted(d for d in disable if d)),
            'power_models_file': power_models_file or None,
            'power_model': power_model or None, 'history_s': float(history_s)}


class ProcessMeter(SharedResource[PowerMeter]):
    """One process's power meter, counted: started on first use, stopped by the last user.

    A process's :class:`~edge_infer.backends.runtime.Runtime` holds one; a
    one-off tool makes its own. ``acquire(config=None, log)``: whatever meter
    runs, else one with the default settings; the source discovery is logged
    and kept (:meth:`discovery_report`).
    """

    def __init__(self) -> None:
        self._discovery: List[str] = []     # the running meter's source discovery lines
        super().__init__('power meter', self._start_meter, lambda meter: meter.stop(),
                         defaults=settings)

    def _start_meter(self, config: dict, log: Callable[[str], None]) -> PowerMeter:
        """Discover the sources (lines kept for :meth:`discovery_report`) and start sampling."""
        self._discovery.clear()

        def log_discovery(line: str) -> None:
            self._discovery.append(line)
            log(line)
        sources = discover(config['root'], {
            'disable': list(config['disable']),
            'power_models_file': config['power_models_file'],
            'power_model': config['power_model']}, log=log_discovery)
        meter = PowerMeter(sources, rate_hz=config['rate_hz'], history_s=config['history_s'],
                           log=log)
        meter.start()
        log(f'power meter: sampling {meter.source_name} at {meter.rate_hz:.0f} Hz'
            + ('' if meter.measured else ' (ESTIMATED from CPU load, not a measurement)'))
        return meter

    def discovery_report(self) -> List[str]:
        """Return the lines the running meter's source discovery logged (found / unavailable)."""
        return list(self._discovery)
