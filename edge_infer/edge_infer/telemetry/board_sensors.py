# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Power sensors on the board itself: Jetson INA3221 (hwmon and iio) and Odroid-XU3 INA231.

Discovered and documented with the others in :mod:`.sources` (rates,
accuracy and why); each reads sysfs below ``root``, so tests point it at a
fake tree laid out like the board's.
"""

import glob
import os
import time
from typing import List, Optional, Tuple

from edge_infer.telemetry.power_source import (_exists, _read_float, _try_str, NAN, PowerSource,
                                               Rail, Sample, SourceError)

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
