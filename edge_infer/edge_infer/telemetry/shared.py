# Copyright 2026 edge_infer contributors. Apache-2.0.
"""One power meter per process, shared by every node that needs one.

The perception nodes (energy per inference) and the telemetry node (power
topics) of one container must read the same sampler: two samplers would
double the overhead and attribute energy from different sample streams.
:func:`acquire` starts the meter on first use and counts users;
:func:`release` stops it when the last one lets go. The first caller's
settings win; a later caller asking for different settings gets the running
meter and a log line saying which settings are in force.
"""

import threading
from typing import Callable, List, Optional

from edge_infer.telemetry.meter import PowerMeter
from edge_infer.telemetry.sources import discover

_lock = threading.Lock()
_meter: Optional[PowerMeter] = None
_settings: Optional[dict] = None
_users = 0
_discovery: List[str] = []


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


def acquire(config: Optional[dict] = None, log: Callable[[str], None] = print) -> PowerMeter:
    """Return the process's running meter, starting it (source discovery logged) if needed.

    ``config=None``: whatever meter runs, else one with the default settings.
    """
    global _meter, _settings, _users
    with _lock:
        if _meter is None:
            config = config or settings()
            _discovery.clear()

            def log_discovery(line: str) -> None:
                _discovery.append(line)
                log(line)
            sources = discover(config['root'], {
                'disable': list(config['disable']),
                'power_models_file': config['power_models_file'],
                'power_model': config['power_model']}, log=log_discovery)
            _meter = PowerMeter(sources, rate_hz=config['rate_hz'],
                                history_s=config['history_s'], log=log)
            _meter.start()
            _settings = dict(config)
            log(f'power meter: sampling {_meter.source_name} at {_meter.rate_hz:.0f} Hz'
                + ('' if _meter.measured else ' (ESTIMATED from CPU load, not a measurement)'))
        elif config is not None and config != _settings:
            diff = ', '.join(f'{k}={_settings[k]!r}' for k in config
                             if config[k] != _settings.get(k))
            log(f'power meter already running in this process; its settings stay in force: '
                f'{diff}')
        _users += 1
        return _meter


def release() -> None:
    """Let go of the meter; the last user stops it."""
    global _meter, _settings, _users
    with _lock:
        if _users == 0:
            return
        _users -= 1
        if _users == 0 and _meter is not None:
            _meter.stop()
            _meter, _settings = None, None


def users() -> int:
    """Return how many holders the process's meter has (0: not running)."""
    with _lock:
        return _users


def discovery_report() -> List[str]:
    """Return the lines the running meter's source discovery logged (found / unavailable)."""
    with _lock:
        return list(_discovery)
