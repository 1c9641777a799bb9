# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What load the board carried while something was measured.

A robot is never quiet: the camera driver, SLAM and planners share the cores.
A profile taken while another process used a core ranks candidates for that
load, not for the board, so every measurement carries its conditions:

- ``foreign_cores``: CPU time used by every other process during the window,
  in cores (``/proc/stat`` busy time minus this process's own time from
  ``/proc/self/stat``, its finished children's included), so 1.0 = one core
  kept busy by someone else;
- ``foreign_share``: the same as a share of all cores (0..1);
- ``own_cores``: this process's own CPU time (its finished children's
  included) in cores;
- ``loadavg1``: the 1-minute load average at the end (context only: it lags);
- ``psi_cpu_some_avg10``: Linux pressure-stall information, the share of the
  last 10 s in which some runnable task waited for a CPU (absent on kernels
  without PSI).

:func:`is_quiet` says whether a window's foreign load is low enough for its
figures to stand for the board (``quiet_foreign_cores``, config/backends.yaml).
"""

import os
import time
from typing import Dict, Optional, Sequence, Tuple


def _busy_total() -> Tuple[float, float]:
    """Return (busy jiffies of all CPUs, total jiffies) from /proc/stat."""
    with open('/proc/stat') as f:
        parts = f.readline().split()[1:]
    vals = [float(v) for v in parts[:8]]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0.0)    # idle + iowait
    total = sum(vals)
    return total - idle, total


def _own(also: Sequence[int] = ()) -> float:
    """Return this process's CPU time in jiffies (user + system, all threads).

    Its reaped children's time counts too (cutime + cstime): the int8
    quantizer and ncnn's first run are our own work in a child process, and
    a profile that made an int8 file was otherwise never "quiet". So does
    the time of the processes ``also`` names (a measuring child's serving
    process, :mod:`.apart`); one that is gone counts nothing.
    """
    total = 0.0
    for pid in ('self', *also):
        try:
            with open(f'/proc/{pid}/stat') as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:
            if pid == 'self':
                raise
            continue
        total += sum(float(v) for v in fields[11:15])
    return total


def _psi() -> Optional[float]:
    try:
        with open('/proc/pressure/cpu') as f:
            for line in f:
                if line.startswith('some'):
                    kv = dict(p.split('=') for p in line.split()[1:])
                    return float(kv['avg10']) / 100.0
    except (OSError, KeyError, ValueError):
        return None
    return None


class LoadProbe:
    """Measures the foreign CPU load between :meth:`start` and :meth:`stop`."""

    def __init__(self, also: Sequence[int] = ()):
        """``also``: processes whose CPU time counts as this one's own (see ``_own``)."""
        self.cores = os.cpu_count() or 1
        self.also = tuple(also)
        self._start: Optional[Tuple[float, float, float, float]] = None

    def start(self) -> 'LoadProbe':
        """Mark the start of the window."""
        try:
            busy, total = _busy_total()
            self._start = (busy, total, _own(self.also), time.monotonic())
        except (OSError, ValueError, IndexError):
            self._start = None
        return self

    def stop(self) -> Dict[str, float]:
        """Return the window's conditions (empty when /proc cannot be read)."""
        if self._start is None:
            return {}
        try:
            busy, total, own = *_busy_total(), _own(self.also)
        except (OSError, ValueError, IndexError):
            return {}
        b0, t0, o0, w0 = self._start
        d_total = max(total - t0, 1e-9)
        # jiffies per core over the window: total / cores
        window = d_total / self.cores
        foreign = max(0.0, (busy - b0) - (own - o0)) / window
        out = {'foreign_cores': round(foreign, 3),
               'foreign_share': round(foreign / self.cores, 3),
               'own_cores': round((own - o0) / window, 3),
               'window_s': round(time.monotonic() - w0, 2),
               'loadavg1': round(os.getloadavg()[0], 2)}
        psi = _psi()
        if psi is not None:
            out['psi_cpu_some_avg10'] = round(psi, 3)
        return out


def is_quiet(conditions: Dict[str, float], quiet_foreign_cores: float) -> bool:
    """Return True when the window's foreign load stayed under the threshold (unknown = quiet)."""
    return float(conditions.get('foreign_cores', 0.0)) <= quiet_foreign_cores


def describe(conditions: Dict[str, float]) -> str:
    """Return the conditions in a few words for logs and reports."""
    if not conditions:
        return 'load unknown'
    text = f"foreign load {conditions.get('foreign_cores', 0):.2f} cores"
    if 'psi_cpu_some_avg10' in conditions:
        text += f", cpu pressure {100 * conditions['psi_cpu_some_avg10']:.0f} %"
    return text + f", loadavg {conditions.get('loadavg1', 0):.2f}"
