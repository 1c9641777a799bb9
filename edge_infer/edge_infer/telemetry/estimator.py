# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Board power estimated from CPU load and a per-board model, for boards without sensors.

Labelled ESTIMATED everywhere it goes (``measured`` False); its accuracy is
the model's ``uncertainty`` from config/power_models.yaml.
"""

import os
import time
from typing import Any, Callable, List, Optional, Sequence, Tuple

from edge_infer.telemetry import power_model as pm
from edge_infer.telemetry.power_source import NAN, PowerSource, Rail, Sample, SourceError


def _clk_tck() -> float:
    try:
        return float(os.sysconf('SC_CLK_TCK'))
    except (AttributeError, ValueError, OSError):
        return 100.0


class EstimatorSource(PowerSource):
    """Estimate board power from per-CPU utilisation and a per-board model (NOT a measurement).

    Utilisation comes from per-CPU time deltas between reads (busy = total -
    idle - iowait; guest time is inside user time), which works at any rate up
    to the kernel's ``CLK_TCK``; a CPU with no tick in an interval keeps its
    previous value. On Linux the per-CPU lines of ``/proc/stat`` are read
    through a kept-open descriptor (the numbers ``psutil.cpu_times(percpu=True)``
    parses, at about half its CPU cost: this runs at 100 Hz); elsewhere psutil.
    ``util_fn`` replaces both (tests inject utilisations with it). CPU times
    always come from the running kernel; ``root`` only matters for picking
    the board model (:func:`make_estimator`).
    The single rail is ``board``; the source's accuracy is the model's
    ``uncertainty``.
    """

    name = 'estimated'
    measured = False

    def __init__(self, model: Optional[pm.PowerModel] = None, root: str = '/',
                 util_fn: Optional[Callable[[], Sequence[float]]] = None,
                 board: str = ''):
        super().__init__(root)
        self.model = model or pm.builtin_default_model()
        self.accuracy_frac = float(self.model.uncertainty)
        self.max_rate_hz = _clk_tck()
        self.board = board
        self._util_fn = util_fn
        self._psutil: Any = None        # the psutil module where /proc/stat is unreadable
        self._stat_fd: Optional[int] = None
        self._prev: Optional[List[Tuple[float, float]]] = None
        self._utils: List[float] = []

    @staticmethod
    def _busy_total(ct) -> Tuple[float, float]:
        total = sum(ct)
        # Linux: guest time is already counted in user/nice (psutil does the same)
        total -= getattr(ct, 'guest', 0.0) + getattr(ct, 'guest_nice', 0.0)
        idle = ct.idle + getattr(ct, 'iowait', 0.0)
        return total - idle, total

    def _cpu_ticks(self) -> List[Tuple[float, float]]:
        """Return (busy, total) time per CPU, in ticks (/proc/stat) or seconds (psutil)."""
        if self._stat_fd is not None:
            out: List[Tuple[float, float]] = []
            for line in os.pread(self._stat_fd, 1 << 20, 0).split(b'\n')[1:]:
                if not line.startswith(b'cpu'):
                    break
                f = line.split()
                # user nice system idle iowait irq softirq steal [guest guest_nice]
                total = sum(int(x) for x in f[1:9])
                out.append((total - int(f[4]) - int(f[5]), total))
            return out
        return [self._busy_total(c) for c in self._psutil.cpu_times(percpu=True)]

    def _probe(self):
        if self._util_fn is None:
            self.close()
            try:
                self._stat_fd = os.open('/proc/stat', os.O_RDONLY)
                if not self._cpu_ticks():
                    self.close()
            except (OSError, ValueError, IndexError):
                self.close()
            if self._stat_fd is None:
                try:
                    import psutil
                except ImportError as exc:
                    return False, f'no /proc/stat and psutil not importable: {exc}'
                self._psutil = psutil
            self._prev = self._cpu_ticks()
            self._utils = [0.0] * len(self._prev)
        n = len(self.utilisation())
        m = self.model
        return True, (f'model {m.name!r}' + (f' for board {self.board!r}' if self.board else '')
                      + f': {m.idle_w:g} W idle + util x {m.per_core_active_w} W per CPU'
                      + (f', max {m.max_w:g} W' if m.max_w is not None else '')
                      + f', {n} CPUs, uncertainty +-{100 * m.uncertainty:.0f} %'
                      + f'; max {self.max_rate_hz:.0f} Hz (CLK_TCK)')

    def utilisation(self) -> List[float]:
        """Return per-CPU busy fractions since the previous call."""
        if self._util_fn is not None:
            return [float(u) for u in self._util_fn()]
        if self._psutil is None and self._stat_fd is None:
            raise SourceError(f'{self.name}: not probed')
        cur = self._cpu_ticks()
        prev = self._prev or cur
        if len(prev) != len(cur):  # CPU hot-plug: restart the deltas
            prev, self._utils = cur, [0.0] * len(cur)
        utils = []
        for i, ((b1, t1), (b0, t0)) in enumerate(zip(cur, prev)):
            dt = t1 - t0
            if dt > 0:
                utils.append(min(1.0, max(0.0, (b1 - b0) / dt)))
            else:
                utils.append(self._utils[i] if i < len(self._utils) else 0.0)
        self._prev, self._utils = cur, utils
        return utils

    def power_for(self, utils: Sequence[float]) -> float:
        """Return the model's watts for the given per-CPU utilisations."""
        return self.model.watts(utils)

    def read(self) -> Sample:
        """Estimate the board power now."""
        t = time.monotonic()
        try:
            w = self.power_for(self.utilisation())
        except SourceError:
            raise
        except Exception as exc:
            raise SourceError(f'{self.name}: CPU utilisation unavailable: {exc}') from exc
        return Sample(t, [Rail('board', NAN, NAN, w)], w)

    def close(self) -> None:
        """Close /proc/stat."""
        if self._stat_fd is not None:
            try:
                os.close(self._stat_fd)
            except OSError:
                pass
            self._stat_fd = None


def make_estimator(root: str = '/', config: Optional[dict] = None) -> EstimatorSource:
    """Build the estimator from config: ``power_model`` (a key) or the board fingerprint.

    Config keys used: ``power_models_file`` (path), ``power_model`` (force a
    model key), ``estimator`` (dict overriding idle_w, per_core_active_w,
    max_w, uncertainty).
    """
    config = config or {}
    try:
        models = pm.load_power_models(config.get('power_models_file'))
    except Exception:  # unreadable file: still estimate, with the built-in default
        models = {pm.DEFAULT_MODEL: pm.builtin_default_model()}
    key, board = pm.board_power_model(root, models)
    forced = config.get('power_model')
    if forced:
        key = forced if forced in models else pm.DEFAULT_MODEL
    model = models[key]
    over = config.get('estimator') or {}
    if over:
        names = ('idle_w', 'per_core_active_w', 'max_w', 'uncertainty', 'description',
                 'match', 'source')
        fields = {f: getattr(model, f) for f in names}
        fields.update({k: v for k, v in over.items() if k in fields})
        model = pm.model_from_dict(model.name + '+overrides', fields)
    return EstimatorSource(model, root=root, board=board)
