# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What every power source is: the base class, its samples and rails, and sysfs helpers.

The readers of real sensors are in :mod:`edge_infer.telemetry.sources`, the
CPU-load estimator in :mod:`edge_infer.telemetry.estimator`.
"""

from dataclasses import dataclass
import os
from typing import List, Optional, Tuple

NAN = float('nan')


class SourceError(RuntimeError):
    """A power source failed or vanished; the message says which file or call and why."""


@dataclass
class Rail:
    """One supply rail (or zone): NaN where the sensor does not give a quantity."""

    name: str
    volts: float = NAN
    amps: float = NAN
    watts: float = NAN


@dataclass
class Sample:
    """One reading of a source: ``t`` from time.monotonic(), the rails and the board total."""

    t: float
    rails: List[Rail]
    total_w: float


def _read_str(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def _try_str(path: str) -> Optional[str]:
    try:
        return _read_str(path)
    except (OSError, UnicodeDecodeError):
        return None


def _read_float(path: str) -> float:
    return float(_read_str(path).split()[0])


def _exists(*paths: str) -> bool:
    return all(os.path.isfile(p) for p in paths)


class PowerSource:
    """Base class of the power sources (see the module docstring for the table)."""

    name: str = 'base'
    measured: bool = True
    max_rate_hz: float = 1.0
    accuracy_frac: float = 0.0  # relative accuracy of readings (0.05 = +-5 %)
    accuracy_w: float = 0.0     # absolute accuracy, watts (added to the relative part)

    def __init__(self, root: str = '/'):
        self.root = root

    def _path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def probe(self) -> Tuple[bool, str]:
        """Look for the sensor; return (available, description or reason). Never raises."""
        try:
            return self._probe()
        except Exception as exc:  # a probe must never take the node down
            return False, f'probe failed: {type(exc).__name__}: {exc}'

    def _probe(self) -> Tuple[bool, str]:
        raise NotImplementedError

    def read(self) -> Sample:
        """Read the sensor now; raise SourceError when it vanished or failed."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the source holds (files, libraries)."""

    def __repr__(self) -> str:
        """Name the source."""
        return f'<{type(self).__name__} {self.name} root={self.root!r}>'
