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

from edge_infer.telemetry.estimator import EstimatorSource, make_estimator
from edge_infer.telemetry.power_source import (_exists, _read_float, _try_str, NAN, PowerSource,
                                               Rail, Sample, SourceError)

__all__ = ['BatterySource', 'discover', 'EstimatorSource', 'JetsonHwmonSource',
           'JetsonIioSource', 'make_estimator', 'NvmlSource', 'OdroidIna231Source',
           'PowerSource', 'Rail', 'RaplSource', 'Sample', 'source_names', 'SourceError']

# Rails that carry the whole module/board input on Jetsons (energymon's JetsonPowerRails notes):
# VDD_IN on most, POM_5V_IN on the Nano, 5V_IN / VIN on some docs' naming.
_JETSON_INPUT_RAILS = ('VDD_IN', 'POM_5V_IN', '5V_IN', 'VIN')
# AGX Orin has no single input rail: these three are in parallel and cover the module.
_AGX_ORIN_RAILS = ('VDD_GPU_SOC', 'VDD_CPU_CV', 'VIN_SYS_5V0')


def _jetson_total(rails: List[Rail]) -> Tuple[float, str]:
    """Return (total watts, rule): the input rail, else AGX Orin's parallel rails, else the sum."""
    by_name = {r.name.upper(): r for r in rails}
    for n in _JETSON_INPUT_RAILS:
        if n in by_name:
            return by_name[n].watts, f'total = {by_name[n].name} (module input rail)'
    if all(n in by_name for n in _AGX_ORIN_RAILS):
        return (sum(by_name[n].watts for n in _AGX_ORIN_RAILS),
                'total = ' + ' + '.join(_AGX_ORIN_RAILS) + ' (AGX Orin parallel inputs)')
    return (sum(r.watts for r in rails),
            'total = sum of all rails (no known input rail; rails assumed in parallel)')


class _JetsonRailsSource(PowerSource):
    """Shared tail of the two INA3221 layouts: adopt channels, rate, first read."""

    _total_rule = ''

    def _adopt_channels(self, channels, devices, chip, intervals_ms, needs):
        if not channels:
            return False, f'{devices} {chip} device(s) but no rail with {needs}'
        self._channels = channels
        longest = max([i for i in intervals_ms if i > 0], default=0.0)
        self.max_rate_hz = min(1000.0, 1000.0 / longest) if longest else 100.0
        try:
            s = self.read()
        except SourceError as exc:
            return False, str(exc)
        return True, (f'{len(channels)} rails on {devices} {chip}: '
                      + ', '.join(f'{r.name}={r.watts:.2f}W' for r in s.rails)
                      + f'; {self._total_rule}; max {self.max_rate_hz:.0f} Hz'
                      + (' (driver interval)' if longest else ' (assumed)'))


class JetsonHwmonSource(_JetsonRailsSource):
    """NVIDIA Jetson, JetPack 5+: INA3221 under the hwmon class (mV and mA per channel)."""

    name = 'jetson_ina3221'
    accuracy_frac = 0.05
    max_rate_hz = 100.0

    def __init__(self, root: str = '/'):
        super().__init__(root)
        self._channels: List[Tuple[str, str, str]] = []  # (label, in<N>_input, curr<N>_input)
        self._total_rule = ''

    def _probe(self):
        pattern = self._path('sys/bus/i2c/devices/*/hwmon/hwmon*')
        channels, seen, intervals_ms, devices = [], set(), [], 0
        for hw in sorted(glob.glob(pattern)):
            real = os.path.realpath(hw)
            if real in seen or _try_str(os.path.join(hw, 'name')) != 'ina3221':
                continue
            seen.add(real)
            devices += 1
            for n in (1, 2, 3):
                label_p = os.path.join(hw, f'in{n}_label')
                mv_p = os.path.join(hw, f'in{n}_input')
                ma_p = os.path.join(hw, f'curr{n}_input')
                if not _exists(label_p, mv_p, ma_p):
                    continue  # channel without shunt / unlabelled: skip
                label = _try_str(label_p) or f'in{n}'
                if label.upper() == 'NC':
                    continue  # not connected
                channels.append((label, mv_p, ma_p))
            ui = _try_str(os.path.join(hw, 'update_interval'))
            if ui:
                try:
                    intervals_ms.append(float(ui))
                except ValueError:
                    pass
        if not devices:
            return False, f'no hwmon device named ina3221 under {pattern}'
        return self._adopt_channels(channels, devices, 'INA3221', intervals_ms,
                                    'label/in/curr files')

    def read(self) -> Sample:
        """Read every channel: watts = mV * mA / 1e6."""
        if not self._channels:
            raise SourceError(f'{self.name}: not probed or no channels')
        t = time.monotonic()
        rails = []
        for label, mv_p, ma_p in self._channels:
            try:
                mv, ma = _read_float(mv_p), _read_float(ma_p)
            except (OSError, ValueError) as exc:
                raise SourceError(
                    f'{self.name}: cannot read rail {label} ({mv_p}): {exc}') from exc
            rails.append(Rail(label, mv / 1e3, ma / 1e3, mv * ma / 1e6))
        total, self._total_rule = _jetson_total(rails)
        return Sample(t, rails, total)


class JetsonIioSource(_JetsonRailsSource):
    """NVIDIA Jetson, JetPack 4: the L4T ``ina3221x`` iio driver (mW, mV, mA per rail)."""

    name = 'jetson_iio'
    accuracy_frac = 0.05
    max_rate_hz = 100.0

    def __init__(self, root: str = '/'):
        super().__init__(root)
        # (rail, power path or None, voltage path or None, current path or None)
        self._channels: List[Tuple[str, Optional[str], Optional[str], Optional[str]]] = []
        self._total_rule = ''

    def _probe(self):
        pattern = self._path('sys/bus/i2c/drivers/ina3221x/*/iio:device*')
        channels, devices, delays_ms = [], 0, []
        for dev in sorted(glob.glob(pattern)):
            devices += 1
            for k in (0, 1, 2):
                name = _try_str(os.path.join(dev, f'rail_name_{k}'))
                if not name or name.upper() == 'NC':
                    continue

                def opt(f, dev=dev):
                    p = os.path.join(dev, f)
                    return p if os.path.isfile(p) else None
                pw = opt(f'in_power{k}_input')
                mv = opt(f'in_voltage{k}_input')
                ma = opt(f'in_current{k}_input')
                if pw is None and (mv is None or ma is None):
                    continue
                channels.append((name, pw, mv, ma))
                delay = _try_str(os.path.join(dev, f'polling_delay_{k}'))
                try:
                    if delay:
                        delays_ms.append(float(delay.split()[0]))
                except ValueError:
                    pass
        if not devices:
            return False, f'no ina3221x iio device under {pattern}'
        return self._adopt_channels(channels, devices, 'ina3221x', delays_ms,
                                    'power or V/I files')

    def read(self) -> Sample:
        """Read every rail: watts from in_power (mW), else mV * mA."""
        if not self._channels:
            raise SourceError(f'{self.name}: not probed or no channels')
        t = time.monotonic()
        rails = []
        for name, pw, mv, ma in self._channels:
            try:
                v = _read_float(mv) / 1e3 if mv else NAN
                a = _read_float(ma) / 1e3 if ma else NAN
                w = _read_float(pw) / 1e3 if pw else v * a
            except (OSError, ValueError) as exc:
                raise SourceError(f'{self.name}: cannot read rail {name}: {exc}') from exc
            rails.append(Rail(name, v, a, w))
        total, self._total_rule = _jetson_total(rails)
        return Sample(t, rails, total)


# INA231 I2C address -> rail on the Odroid-XU3 (Hardkernel's naming).
ODROID_RAILS = {'0040': 'arm', '0045': 'kfc', '0041': 'mem', '0044': 'g3d'}
_INA231_DEFAULT_PERIOD_US = 263808.0  # Hardkernel driver default refresh


class OdroidIna231Source(PowerSource):
    """Odroid-XU3 INA231 sensors: A15 'arm', A7 'kfc', memory 'mem', GPU 'g3d' (W, V, A)."""

    name = 'odroid_ina231'
    accuracy_frac = 0.05
    max_rate_hz = 1e6 / _INA231_DEFAULT_PERIOD_US

    def __init__(self, root: str = '/', enable: bool = True):
        super().__init__(root)
        self.enable = enable
        self._dirs: List[Tuple[str, str]] = []  # (rail, sensor dir)

    def _probe(self):
        base = self._path('sys/bus/i2c/drivers/INA231')
        found = []
        for d in sorted(glob.glob(os.path.join(base, '*-00*'))):
            addr = os.path.basename(d).split('-', 1)[-1]
            if addr in ODROID_RAILS and os.path.isfile(os.path.join(d, 'sensor_W')):
                found.append((ODROID_RAILS[addr], d))
        if not found:
            return False, f'no INA231 sensor (addresses 0x40/41/44/45) under {base}'
        enabled_now = []
        for rail, d in found:
            en = os.path.join(d, 'enable')
            state = _try_str(en)
            if state is None or state == '1':
                continue
            if not self.enable:
                return False, f'INA231 {rail} disabled ({en} reads {state}) and enabling is off'
            try:
                with open(en, 'w') as f:
                    f.write('1')
            except OSError as exc:
                return False, (f'INA231 {rail} disabled ({en} reads {state}) and cannot be '
                               f'enabled: {exc} (writing 1 needs root: '
                               f'echo 1 | sudo tee {en})')
            if _try_str(en) != '1':
                return False, f'INA231 {rail}: wrote 1 to {en} but it still reads {_try_str(en)}'
            enabled_now.append(rail)
        self._dirs = found
        periods = []
        for _, d in found:
            p = _try_str(os.path.join(d, 'update_period'))
            try:
                if p:
                    periods.append(float(p.split()[0]))
            except ValueError:
                pass
        period = max([p for p in periods if p > 0], default=_INA231_DEFAULT_PERIOD_US)
        self.max_rate_hz = 1e6 / period
        try:
            s = self.read()
        except SourceError as exc:
            return False, str(exc)
        return True, (f'{len(found)} INA231 rails: '
                      + ', '.join(f'{r.name}={r.watts:.2f}W' for r in s.rails)
                      + (f'; enabled {",".join(enabled_now)}' if enabled_now else '')
                      + '; total = sum (SoC rails only, not the whole board)'
                      + f'; max {self.max_rate_hz:.1f} Hz (update_period {period:.0f} us)')

    def read(self) -> Sample:
        """Read sensor_W/V/A of every rail (plain decimal watts, volts, amps)."""
        if not self._dirs:
            raise SourceError(f'{self.name}: not probed or no sensors')
        t = time.monotonic()
        rails = []
        for rail, d in self._dirs:
            try:
                w = _read_float(os.path.join(d, 'sensor_W'))
                v = _read_float(os.path.join(d, 'sensor_V'))
                a = _read_float(os.path.join(d, 'sensor_A'))
            except (OSError, ValueError) as exc:
                raise SourceError(f'{self.name}: cannot read {rail} in {d}: {exc}') from exc
            rails.append(Rail(rail, v, a, w))
        return Sample(t, rails, sum(r.watts for r in rails))


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
