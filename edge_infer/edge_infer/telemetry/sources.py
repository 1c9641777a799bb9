# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Power sources: readers of board power sensors, and their discovery.

The base class is in :mod:`edge_infer.telemetry.power_source`, the CPU-load
estimator for boards without sensors in :mod:`edge_infer.telemetry.estimator`.

Every reader takes ``root`` (default ``'/'``) and reads sysfs below it, so
tests point it at a fake tree. ``probe()`` never raises: it returns
``(available, what was found / why not)``. ``read()`` returns a
:class:`Sample` or raises :class:`SourceError` when the sensor vanished or
failed. ``probe()`` may be called again (the meter does, before it starts
using a source): it re-discovers and, where deltas are needed, re-baselines.

Sources, in the priority order :func:`discover` returns them:

============== ============================================= ========= ==========
name           sysfs / API                                   max rate  accuracy
============== ============================================= ========= ==========
jetson_ina3221 JetPack 5+: i2c ``hwmon`` INA3221 (mV, mA)    1/update  +-5 %
                                                             _interval
jetson_iio     JetPack 4: ``ina3221x`` iio (mW, mV, mA)      100 Hz    +-5 %
odroid_ina231  Odroid-XU3 ``INA231`` (W, V, A)               1/update  +-5 %
                                                             _period
rapl           ``/sys/class/powercap/intel-rapl:*`` (uJ)     1000 Hz   +-10 %
nvml           ``pynvml`` nvmlDeviceGetPowerUsage (mW)       20 Hz     +-5 W/GPU
battery        ``/sys/class/power_supply`` Battery (uW)      1 Hz      +-10 %
estimated      CPU utilisation x per-board model             CLK_TCK   model's
                                                             (100 Hz)  (+-30 %...)
============== ============================================= ========= ==========

Why these figures:

- INA3221 (Jetson): the hwmon driver exposes ``update_interval`` (ms), the
  time of one conversion round over the enabled channels; reading faster only
  repeats values, so ``max_rate_hz = 1000 / update_interval`` (100 Hz when
  the file is missing). The chip's gain error is well under 1 %, but shunt
  tolerance and the offset at low currents dominate, and NVIDIA publishes no
  board-level figure: +-5 % is a rough allowance.
- ina3221x (JetPack 4 iio): the legacy driver's ``polling_delay_<K>`` when
  readable, else 100 Hz (each read is an I2C transaction; energymon found
  10 ms polling cheap on AGX Xavier). Same +-5 %.
- INA231 (Odroid-XU3): the chip converts in about 1 ms, but Hardkernel's
  driver refreshes the sysfs values only every ``update_period`` us (default
  263808 us, i.e. ~3.8 Hz), so that is the useful rate. (A study on the XU4
  needed >= 350 Hz to match a reference meter; 1 Hz gave up to 80 % error:
  with the stock driver, per-inference energy on this board is coarse, and the
  error estimate says so.)
- RAPL: the energy counters update about every 1 ms. Accuracy: measured (not
  modelled) on Haswell and later Intel parts, less studied on AMD: +-10 %.
- NVML: ``nvmlDeviceGetPowerUsage`` is refreshed every ~20-100 ms depending on
  the GPU generation (and on recent datacenter GPUs is a 1 s average); 20 Hz.
  ``nvidia-smi`` documents the reading as accurate to +-5 W.
- Battery: fuel gauges refresh ``power_now``/``current_now`` about once a
  second or slower (often averaged), so 1 Hz; +-10 % allowance. Only valid
  while the battery discharges: while charging, ``power_now`` is the charge
  rate, not the robot's draw, so the source reports unavailable / fails then.
- Estimator: ``/proc/stat`` CPU times tick at ``CLK_TCK`` (100 Hz on Linux):
  faster than that most per-CPU deltas are empty. Its accuracy is the model's
  stated ``uncertainty`` from ``power_models.yaml``.
"""

import glob
import math
import os
import time
from typing import Callable, Dict, List, Optional, Tuple

from edge_infer.telemetry.board_sensors import (JetsonHwmonSource, JetsonIioSource,
                                                OdroidIna231Source)
from edge_infer.telemetry.estimator import EstimatorSource, make_estimator
from edge_infer.telemetry.power_source import (_exists, _read_float, _try_str, NAN, PowerSource,
                                               Rail, Sample, SourceError)

__all__ = ['BatterySource', 'discover', 'EstimatorSource', 'JetsonHwmonSource',
           'JetsonIioSource', 'make_estimator', 'NvmlSource', 'OdroidIna231Source',
           'PowerSource', 'Rail', 'RaplSource', 'Sample', 'source_names', 'SourceError']


class RaplSource(PowerSource):
    """Intel/AMD RAPL powercap zones: watts from deltas of cumulative ``energy_uj``.

    Total: ``psys`` alone when present (platform energy, which already
    contains the packages and DRAM); otherwise the sum of the top-level
    ``package-*`` zones plus any ``dram`` zones (DRAM is outside the package
    domain). ``core``/``uncore`` are inside their package and only reported as
    rails. Rail names: top-level zone name, sub-zones as ``<parent>/<name>``.
    The first sample after ``probe()`` is the mean power since the probe.
    """

    name = 'rapl'
    accuracy_frac = 0.10
    max_rate_hz = 1000.0

    def __init__(self, root: str = '/', clock: Callable[[], float] = time.monotonic):
        super().__init__(root)
        self._clock = clock
        # (rail name, energy_uj path, max_energy_range_uj, kind: 'psys'|'pkg'|'dram'|'sub')
        self._zones: List[Tuple[str, str, float, str]] = []
        self._prev: Optional[Tuple[float, List[float]]] = None

    def _probe(self):
        base = self._path('sys/class/powercap')
        dirs = {}
        for d in glob.glob(os.path.join(base, 'intel-rapl:*')):
            zone = os.path.basename(d)
            dirs.setdefault(zone, d)
        if not dirs:
            return False, f'no intel-rapl powercap zone under {base}'
        names = {z: (_try_str(os.path.join(d, 'name')) or z) for z, d in dirs.items()}
        zones = []
        for z in sorted(dirs, key=lambda s: [int(x) for x in s.split(':')[1:]]):
            d, parts = dirs[z], z.split(':')
            nm = names[z]
            if len(parts) == 2:
                kind = 'psys' if nm == 'psys' else 'dram' if nm == 'dram' else (
                    'pkg' if nm.startswith('package') else 'other')
                rail = nm
            else:
                parent = names.get(':'.join(parts[:2]), ':'.join(parts[:2]))
                kind = 'dram' if nm == 'dram' else 'sub'
                rail = f'{parent}/{nm}'
            ep = os.path.join(d, 'energy_uj')
            try:
                max_range = _read_float(os.path.join(d, 'max_energy_range_uj'))
                _read_float(ep)
            except PermissionError:
                return False, (f'permission denied: {ep} (readable by root only; since Linux '
                               f'5.10 (CVE-2020-8694) energy_uj is mode 0400: run as root or '
                               f'grant read access, e.g. a udev rule / chmod a+r)')
            except (OSError, ValueError) as exc:
                return False, f'cannot read {d}: {exc}'
            zones.append((rail, ep, max_range, kind))
        self._zones = zones
        self._prev = None
        self._prev = (self._clock(), self._energies())
        kinds = [k for *_, k in zones]
        rule = ('total = psys (platform)' if 'psys' in kinds
                else 'total = sum of package zones + dram')
        return True, (f'{len(zones)} zones: ' + ', '.join(z[0] for z in zones)
                      + f'; {rule}; max {self.max_rate_hz:.0f} Hz')

    def _energies(self) -> List[float]:
        out = []
        for rail, ep, _, _ in self._zones:
            try:
                out.append(_read_float(ep))
            except (OSError, ValueError) as exc:
                raise SourceError(f'{self.name}: cannot read {ep} ({rail}): {exc}') from exc
        return out

    def read(self) -> Sample:
        """Return the mean power per zone since the previous sample; counter wraps handled."""
        if not self._zones:
            raise SourceError(f'{self.name}: not probed or no zones')
        e = self._energies()
        t = self._clock()
        if self._prev is None:
            self._prev = (t, e)
            raise SourceError(f'{self.name}: no baseline reading (probe() first)')
        t_prev, e_prev = self._prev
        dt = t - t_prev
        if dt <= 0:
            raise SourceError(f'{self.name}: clock did not advance between reads')
        rails, total_psys, total_sum = [], None, 0.0
        for (rail, _, max_range, kind), now, before in zip(self._zones, e, e_prev):
            delta = now - before
            if delta < 0:  # counter wrapped
                delta += max_range + 1
            w = delta / dt / 1e6
            rails.append(Rail(rail, NAN, NAN, w))
            if kind == 'psys':
                total_psys = w
            elif kind in ('pkg', 'dram'):
                total_sum += w
        self._prev = (t, e)
        return Sample(t, rails, total_psys if total_psys is not None else total_sum)


class NvmlSource(PowerSource):
    """NVIDIA discrete GPUs through NVML (``pynvml`` from the nvidia-ml-py package)."""

    name = 'nvml'
    accuracy_w = 5.0
    max_rate_hz = 20.0

    def __init__(self, root: str = '/'):
        super().__init__(root)
        self._nvml = None
        self._handles: list = []

    def _probe(self):
        try:
            import pynvml
        except ImportError as exc:
            return False, f'pynvml not importable ({exc}; pip install nvidia-ml-py)'
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # pynvml.NVMLError and friends: library or driver absent
            return False, f'NVML library not usable: {exc}'
        try:
            n = pynvml.nvmlDeviceGetCount()
            handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(n)]
        except Exception as exc:
            pynvml.nvmlShutdown()
            return False, f'NVML device query failed: {exc}'
        if not handles:
            pynvml.nvmlShutdown()
            return False, 'NVML works but reports no GPU'
        self.close()
        self._nvml, self._handles = pynvml, handles
        self.accuracy_w = 5.0 * len(handles)
        try:
            s = self.read()
        except SourceError as exc:
            self.close()
            return False, str(exc)
        return True, (f'{len(handles)} GPU(s): '
                      + ', '.join(f'{r.name}={r.watts:.1f}W' for r in s.rails)
                      + f'; max {self.max_rate_hz:.0f} Hz')

    def read(self) -> Sample:
        """Read every GPU's board power (mW)."""
        if self._nvml is None:
            raise SourceError(f'{self.name}: not probed')
        t = time.monotonic()
        rails = []
        for i, h in enumerate(self._handles):
            try:
                mw = float(self._nvml.nvmlDeviceGetPowerUsage(h))
            except Exception as exc:
                raise SourceError(f'{self.name}: nvmlDeviceGetPowerUsage(gpu{i}): {exc}') from exc
            rails.append(Rail(f'gpu{i}', NAN, NAN, mw / 1e3))
        return Sample(t, rails, sum(r.watts for r in rails))

    def close(self) -> None:
        """Shut NVML down (it is reference-counted)."""
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:  # already shut down / driver gone: nothing to release
                pass
        self._nvml, self._handles = None, []


class BatterySource(PowerSource):
    """System batteries in /sys/class/power_supply (uW, or uV x uA); valid while discharging."""

    name = 'battery'
    accuracy_frac = 0.10
    max_rate_hz = 1.0

    def __init__(self, root: str = '/'):
        super().__init__(root)
        self._bats: List[str] = []

    def _probe(self):
        base = self._path('sys/class/power_supply')
        bats = []
        for d in sorted(glob.glob(os.path.join(base, '*'))):
            if _try_str(os.path.join(d, 'type')) != 'Battery':
                continue
            if (_try_str(os.path.join(d, 'scope')) or 'System') == 'Device':
                continue  # a mouse's or a gamepad's battery
            if os.path.isfile(os.path.join(d, 'power_now')) or _exists(
                    os.path.join(d, 'voltage_now'), os.path.join(d, 'current_now')):
                bats.append(d)
        if not bats:
            return False, f'no system battery with power_now or voltage_now+current_now in {base}'
        self._bats = bats
        try:
            s = self.read()
        except SourceError as exc:
            return False, str(exc)
        return True, (', '.join(f'{r.name}={r.watts:.2f}W' for r in s.rails)
                      + f' (Discharging); max {self.max_rate_hz:.0f} Hz')

    def read(self) -> Sample:
        """Read each battery's discharge power; raise when one is not discharging."""
        if not self._bats:
            raise SourceError(f'{self.name}: not probed or no battery')
        t = time.monotonic()
        rails = []
        for d in self._bats:
            nm = os.path.basename(d)
            status = _try_str(os.path.join(d, 'status')) or 'Unknown'
            if status != 'Discharging':
                raise SourceError(f'{self.name}: {nm} is {status}: power_now is then the charge '
                                  f'rate, not the robot draw')
            try:
                v = _read_float(os.path.join(d, 'voltage_now')) / 1e6 if os.path.isfile(
                    os.path.join(d, 'voltage_now')) else NAN
                a = abs(_read_float(os.path.join(d, 'current_now'))) / 1e6 if os.path.isfile(
                    os.path.join(d, 'current_now')) else NAN
                pp = os.path.join(d, 'power_now')
                w = abs(_read_float(pp)) / 1e6 if os.path.isfile(pp) else v * a
            except (OSError, ValueError) as exc:
                raise SourceError(f'{self.name}: cannot read {d}: {exc}') from exc
            if math.isnan(w):
                raise SourceError(f'{self.name}: {nm} gives neither power_now nor V and I')
            rails.append(Rail(nm, v, a, w))
        return Sample(t, rails, sum(r.watts for r in rails))


def all_sources(root: str = '/', config: Optional[dict] = None) -> List[PowerSource]:
    """Return one (unprobed) source of every kind, in priority order, the estimator last."""
    config = config or {}
    return [JetsonHwmonSource(root), JetsonIioSource(root),
            OdroidIna231Source(root, enable=bool(config.get('enable_odroid_sensors', True))),
            RaplSource(root), NvmlSource(root), BatterySource(root),
            make_estimator(root, config)]


def discover(root: str = '/', config: Optional[dict] = None,
             log: Callable[[str], None] = print) -> List[PowerSource]:
    """Probe every kind of source, log one line per kind, return the available ones.

    Order: measured board sensors first (jetson hwmon, jetson iio, odroid,
    rapl, nvml, battery), the estimator always last. ``config`` keys:
    ``disable`` (list of source names to skip), ``enable_odroid_sensors``
    (default True: write 1 to a disabled INA231's ``enable``), and the
    estimator's keys (see :func:`make_estimator`).
    """
    config = config or {}
    disabled = set(config.get('disable') or ())
    found: List[PowerSource] = []
    for src in all_sources(root, config):
        if src.name in disabled:
            log(f'power source {src.name}: disabled by config')
            continue
        ok, what = src.probe()
        kind = 'measured' if src.measured else 'ESTIMATED, not a measurement'
        if ok:
            log(f'power source {src.name}: found ({kind}): {what}')
            found.append(src)
        else:
            log(f'power source {src.name}: unavailable: {what}')
    return found


def source_names() -> Dict[str, type]:
    """Return the source classes by name."""
    return {c.name: c for c in (JetsonHwmonSource, JetsonIioSource, OdroidIna231Source,
                                RaplSource, NvmlSource, BatterySource, EstimatorSource)}
