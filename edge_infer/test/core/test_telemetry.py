# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Power telemetry: sysfs readers on fake trees laid out like real boards, meter, estimator.

No root and no sensors needed: every sysfs tree is built in tmp_path. Tolerances
are stated next to each assertion. The meter samples on its own thread in real
time: the tests wait for its progress (samples taken, a source switched), not
for fixed sleeps.
"""

import builtins
import math
import os
import sys
import threading
import time
import types

from edge_infer.telemetry import attribution
from edge_infer.telemetry import power_model as pm
from edge_infer.telemetry import sources as src_mod
from edge_infer.telemetry.meter import PowerMeter
from edge_infer.telemetry.sources import (BatterySource, discover, EstimatorSource,
                                          JetsonHwmonSource, JetsonIioSource, NvmlSource,
                                          OdroidIna231Source, PowerSource, Rail, RaplSource,
                                          Sample, SourceError)
import numpy as np
from power_trees import _jetson_jp5_tree, _link, _w
import psutil
import pytest

W_TOL = 1e-9  # watts: sysfs integers -> exact float arithmetic up to rounding


def wait_until(pred, timeout: float = 5.0, poll: float = 0.005) -> bool:
    """Poll ``pred`` until it is true or ``timeout`` s have passed; return whether it is."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() >= deadline:
            return bool(pred())
        time.sleep(poll)
    return True


def wait_samples(m, n: int, timeout: float = 5.0) -> None:
    """Wait until meter ``m`` has taken ``n`` samples from now on (fail after ``timeout`` s)."""
    since = time.monotonic()
    assert wait_until(lambda: len(m.samples_since(since)) >= n, timeout), \
        f'the meter took fewer than {n} samples in {timeout} s'


# ---------------------------------------------------------------------------- fake sysfs
def test_jetson_ina3221_jp5(tmp_path):
    hw = _jetson_jp5_tree(tmp_path)
    s = JetsonHwmonSource(str(tmp_path))
    ok, what = s.probe()
    assert ok, what
    sample = s.read()
    assert [r.name for r in sample.rails] == ['VDD_IN', 'VDD_CPU_GPU_CV', 'VDD_SOC']
    expect = {'VDD_IN': 5072 * 1280 / 1e6, 'VDD_CPU_GPU_CV': 5064 * 424 / 1e6,
              'VDD_SOC': 5064 * 560 / 1e6}
    for r in sample.rails:
        assert abs(r.watts - expect[r.name]) < W_TOL
    assert abs(sample.rails[0].volts - 5.072) < W_TOL and abs(sample.rails[0].amps - 1.28) < W_TOL
    assert abs(sample.total_w - expect['VDD_IN']) < W_TOL  # input rail, not the sum
    assert s.max_rate_hz == pytest.approx(200.0)  # 1000 / update_interval(5 ms)
    assert 'VDD_IN' in what and s.measured
    _w(hw / 'curr2_input', 1000)  # values change between reads
    assert abs(s.read().rails[1].watts - 5.064) < W_TOL
    (hw / 'curr2_input').unlink()  # the sensor vanishes
    with pytest.raises(SourceError, match='VDD_CPU_GPU_CV'):
        s.read()


def test_jetson_iio_jp4(tmp_path):
    dev = tmp_path / 'sys/bus/i2c/drivers/ina3221x/6-0040/iio:device0'
    for k, (name, mw, mv, ma) in enumerate([('POM_5V_IN', 3264, 5016, 648),
                                            ('POM_5V_GPU', 39, 5008, 8),
                                            ('POM_5V_CPU', 816, 5000, 163)]):
        _w(dev / f'rail_name_{k}', name)
        _w(dev / f'in_power{k}_input', mw)
        _w(dev / f'in_voltage{k}_input', mv)
        _w(dev / f'in_current{k}_input', ma)
    s = JetsonIioSource(str(tmp_path))
    ok, what = s.probe()
    assert ok, what
    sample = s.read()
    assert [r.name for r in sample.rails] == ['POM_5V_IN', 'POM_5V_GPU', 'POM_5V_CPU']
    assert abs(sample.rails[0].watts - 3.264) < W_TOL  # in_power is mW
    assert abs(sample.rails[2].volts - 5.0) < W_TOL and abs(sample.rails[2].amps - 0.163) < W_TOL
    assert abs(sample.total_w - 3.264) < W_TOL  # POM_5V_IN is the module input
    assert JetsonHwmonSource(str(tmp_path)).probe()[0] is False


def _odroid_tree(root):
    vals = {'0040': (1.234567, 1.1, 1.122334), '0041': (0.2, 1.2, 0.166666),
            '0044': (0.31, 1.0, 0.31), '0045': (0.12, 1.25, 0.096)}
    for addr, (w, v, a) in vals.items():
        d = root / f'sys/bus/i2c/drivers/INA231/3-{addr}'
        _w(d / 'enable', 0)
        _w(d / 'sensor_W', f'{w:.6f}')
        _w(d / 'sensor_V', f'{v:.6f}')
        _w(d / 'sensor_A', f'{a:.6f}')
        _w(d / 'update_period', 263808)
    return vals


def test_odroid_ina231_enables_and_reads(tmp_path):
    vals = _odroid_tree(tmp_path)
    s = OdroidIna231Source(str(tmp_path))
    ok, what = s.probe()
    assert ok, what
    for addr in vals:  # the reader turned the sensors on
        enable = tmp_path / f'sys/bus/i2c/drivers/INA231/3-{addr}/enable'
        assert enable.read_text().strip() == '1'
    sample = s.read()
    by = {r.name: r for r in sample.rails}
    assert set(by) == {'arm', 'mem', 'g3d', 'kfc'}
    assert abs(by['arm'].watts - 1.234567) < W_TOL and abs(by['kfc'].volts - 1.25) < W_TOL
    assert abs(sample.total_w - sum(v[0] for v in vals.values())) < 1e-6
    assert s.max_rate_hz == pytest.approx(1e6 / 263808)  # the driver's refresh, ~3.8 Hz
    assert 'enabled' in what


def test_odroid_enable_not_writable(tmp_path, monkeypatch):
    _odroid_tree(tmp_path)
    real_open = builtins.open

    def fake_open(file, mode='r', *a, **k):
        if str(file).endswith('/enable') and ('w' in mode or 'a' in mode):
            raise PermissionError(13, 'Permission denied', str(file))
        return real_open(file, mode, *a, **k)
    monkeypatch.setattr(builtins, 'open', fake_open)
    ok, why = OdroidIna231Source(str(tmp_path)).probe()
    assert not ok
    assert 'cannot be enabled' in why and 'root' in why and 'Permission denied' in why


def _rapl_tree(root, zones):
    """zones: {'intel-rapl:0': (name, energy_uj, max_uj), 'intel-rapl:0:0': ...} like the kernel.

    Real layout: /sys/devices/virtual/powercap/intel-rapl/intel-rapl:0[/intel-rapl:0:0], with
    /sys/class/powercap/<zone> symlinks to each (and to the intel-rapl control type).
    """
    base = root / 'sys/devices/virtual/powercap/intel-rapl'
    _link(root / 'sys/class/powercap/intel-rapl', base)
    paths = {}
    for zone, (name, e, mx) in zones.items():
        parts = zone.split(':')
        d = base / zone if len(parts) == 2 else base / ':'.join(parts[:2]) / zone
        _w(d / 'name', name)
        _w(d / 'energy_uj', e)
        _w(d / 'max_energy_range_uj', mx)
        _w(d / 'enabled', 1)
        _link(root / 'sys/class/powercap' / zone, d)
        paths[zone] = d / 'energy_uj'
    return paths


MAX_UJ = 262143328850


def test_rapl_wraparound_and_total(tmp_path):
    paths = _rapl_tree(tmp_path, {'intel-rapl:0': ('package-0', MAX_UJ - 1_000_000, MAX_UJ),
                                  'intel-rapl:0:0': ('core', 1_000_000, MAX_UJ),
                                  'intel-rapl:0:1': ('dram', 500_000, MAX_UJ)})
    clock = iter([100.0, 100.5, 101.0])
    s = RaplSource(str(tmp_path), clock=lambda: next(clock))
    ok, what = s.probe()
    assert ok, what
    paths['intel-rapl:0'].write_text('4000000\n')  # wrapped: 1 J before the top + 4 J after
    paths['intel-rapl:0:0'].write_text('3000000\n')
    paths['intel-rapl:0:1'].write_text('1000000\n')
    sample = s.read()
    by = {r.name: r.watts for r in sample.rails}
    assert set(by) == {'package-0', 'package-0/core', 'package-0/dram'}
    assert abs(by['package-0'] - (5_000_000 + 1) / 0.5 / 1e6) < 1e-9  # += max_range + 1
    assert abs(by['package-0/core'] - 4.0) < 1e-9
    assert abs(by['package-0/dram'] - 1.0) < 1e-9
    assert abs(sample.total_w - (by['package-0'] + 1.0)) < 1e-9  # package + dram, not core
    assert math.isnan(sample.rails[0].volts)


def test_rapl_psys_is_the_total(tmp_path):
    paths = _rapl_tree(tmp_path, {'intel-rapl:0': ('package-0', 0, MAX_UJ),
                                  'intel-rapl:1': ('psys', 0, MAX_UJ)})
    clock = iter([10.0, 11.0])
    s = RaplSource(str(tmp_path), clock=lambda: next(clock))
    assert s.probe()[0]
    paths['intel-rapl:0'].write_text('6000000\n')
    paths['intel-rapl:1'].write_text('9000000\n')
    assert abs(s.read().total_w - 9.0) < 1e-9


def test_rapl_permission_denied(tmp_path, monkeypatch):
    paths = _rapl_tree(tmp_path, {'intel-rapl:0': ('package-0', 1, MAX_UJ)})
    denied = str(paths['intel-rapl:0'])
    paths['intel-rapl:0'].chmod(0)  # as on the kernel since 5.10 (0400 root), or stricter
    real_open = builtins.open

    def fake_open(file, *a, **k):
        if os.path.realpath(str(file)) == os.path.realpath(denied):
            raise PermissionError(13, 'Permission denied', str(file))
        return real_open(file, *a, **k)
    # mode 000 does not deny root, so deny the read the way the kernel would for a user
    monkeypatch.setattr(builtins, 'open', fake_open)
    ok, why = RaplSource(str(tmp_path)).probe()
    assert not ok
    assert why.startswith('permission denied: ') and 'energy_uj' in why
    assert 'readable by root only' in why


def test_rapl_permission_denied_by_mode(tmp_path):
    if os.geteuid() == 0:
        pytest.skip('running as root: mode 000 does not deny root (the monkeypatched test '
                    'covers the PermissionError path)')
    paths = _rapl_tree(tmp_path, {'intel-rapl:0': ('package-0', 1, MAX_UJ)})
    paths['intel-rapl:0'].chmod(0)
    ok, why = RaplSource(str(tmp_path)).probe()
    assert not ok and why.startswith('permission denied: ')


def _battery(root, name, **files):
    d = root / 'sys/class/power_supply' / name
    for k, v in files.items():
        _w(d / k, v)
    return d


def test_battery_power_now(tmp_path):
    _battery(tmp_path, 'AC', type='Mains', online=0)
    _battery(tmp_path, 'hidpp_battery_0', type='Battery', scope='Device', status='Discharging',
             power_now=100000)  # a mouse: ignored
    d = _battery(tmp_path, 'BAT0', type='Battery', status='Discharging', power_now=12500000,
                 voltage_now=12000000, capacity=80)
    s = BatterySource(str(tmp_path))
    ok, what = s.probe()
    assert ok, what
    sample = s.read()
    assert [r.name for r in sample.rails] == ['BAT0']
    assert abs(sample.total_w - 12.5) < W_TOL and abs(sample.rails[0].volts - 12.0) < W_TOL
    _w(d / 'status', 'Charging')  # on the dock: power_now is the charge rate now
    with pytest.raises(SourceError, match='Charging'):
        s.read()


def test_battery_voltage_times_current(tmp_path):
    _battery(tmp_path, 'BAT1', type='Battery', status='Discharging', voltage_now=11100000,
             current_now=1500000)
    s = BatterySource(str(tmp_path))
    assert s.probe()[0]
    assert abs(s.read().total_w - 11.1 * 1.5) < 1e-9


def test_battery_charging_unavailable(tmp_path):
    _battery(tmp_path, 'BAT0', type='Battery', status='Charging', power_now=20000000)
    ok, why = BatterySource(str(tmp_path)).probe()
    assert not ok and 'Charging' in why


def test_nvml(monkeypatch):
    try:
        import pynvml  # noqa: F401
        has_pynvml = True
    except ImportError:
        has_pynvml = False
    if not has_pynvml:  # this machine: module absent -> unavailable with the reason
        ok, why = NvmlSource().probe()
        assert not ok and 'pynvml' in why
    fake = types.ModuleType('pynvml')
    state = {'mw': 71500, 'init': 0}

    class NVMLError(Exception):
        pass

    def power(h):
        if state['mw'] is None:
            raise NVMLError('GPU is lost')
        return state['mw'] + 1000 * h
    fake.NVMLError = NVMLError
    fake.nvmlInit = lambda: state.__setitem__('init', state['init'] + 1)
    fake.nvmlShutdown = lambda: state.__setitem__('init', state['init'] - 1)
    fake.nvmlDeviceGetCount = lambda: 2
    fake.nvmlDeviceGetHandleByIndex = lambda i: i
    fake.nvmlDeviceGetPowerUsage = power
    monkeypatch.setitem(sys.modules, 'pynvml', fake)
    s = NvmlSource()
    ok, what = s.probe()
    assert ok, what
    sample = s.read()
    assert [r.name for r in sample.rails] == ['gpu0', 'gpu1']
    assert abs(sample.total_w - (71.5 + 72.5)) < W_TOL
    state['mw'] = None
    with pytest.raises(SourceError, match='GPU is lost'):
        s.read()
    s.close()
    assert state['init'] == 0

    def broken_init():
        raise NVMLError('NVML Shared Library Not Found')
    fake.nvmlInit = broken_init
    ok, why = NvmlSource().probe()
    assert not ok and 'Shared Library Not Found' in why


def test_discover_on_a_machine_without_sensors(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, 'pynvml', None)  # as here, also on a machine with a GPU
    lines = []
    found = discover(str(tmp_path), log=lines.append)
    assert [s.name for s in found] == ['estimated']
    assert not found[0].measured
    kinds = ['jetson_ina3221', 'jetson_iio', 'odroid_ina231', 'rapl', 'nvml', 'battery',
             'estimated']
    assert len(lines) == len(kinds)  # one line per kind
    for kind, line in zip(kinds, lines):
        assert line.startswith(f'power source {kind}: ')
    assert 'ESTIMATED' in lines[-1] and 'uncertainty' in lines[-1]


def test_discover_priority(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, 'pynvml', None)
    _jetson_jp5_tree(tmp_path)
    _battery(tmp_path, 'BAT0', type='Battery', status='Discharging', power_now=9000000)
    found = discover(str(tmp_path), log=lambda m: None)
    names = [s.name for s in found]
    assert names[0] == 'jetson_ina3221' and names[-1] == 'estimated'
    assert names.index('battery') < names.index('estimated')
    assert [s.name for s in discover(str(tmp_path), {'disable': ['jetson_ina3221']},
                                     log=lambda m: None)][0] == 'battery'


def test_board_power_model_picks_the_model_that_matches_the_board(tmp_path):
    models = pm.load_power_models()
    assert {'default', 'jetson_orin_nano', 'raspberry_pi_4', 'odroid_xu4'} <= set(models)
    for m in models.values():
        assert m.idle_w > 0 and 0 < m.uncertainty < 1 and m.source
        assert m.max_w is None or m.max_w >= m.idle_w
    assert pm.board_power_model(str(tmp_path), models) == ('default', '')
    _w(tmp_path / 'proc/device-tree/model', 'Raspberry Pi 4 Model B Rev 1.4\x00')
    assert pm.board_power_model(str(tmp_path), models) == (
        'raspberry_pi_4', 'Raspberry Pi 4 Model B Rev 1.4')
    _w(tmp_path / 'proc/device-tree/model', 'NVIDIA Jetson Orin Nano Developer Kit\x00')
    assert pm.board_power_model(str(tmp_path), models)[0] == 'jetson_orin_nano'
    _w(tmp_path / 'proc/device-tree/model', 'Hardkernel Odroid XU4\x00')
    assert pm.board_power_model(str(tmp_path), models)[0] == 'odroid_xu4'
    x86 = tmp_path / 'x86'
    _w(x86 / 'sys/devices/virtual/dmi/id/product_name', 'NUC11TNHi5')
    assert pm.board_power_model(str(x86), models) == ('default', 'NUC11TNHi5')
    est = src_mod.make_estimator(str(tmp_path), {'estimator': {'uncertainty': 0.25}})
    assert est.model.idle_w == models['odroid_xu4'].idle_w and est.accuracy_frac == 0.25


# ---------------------------------------------------------------------------- estimator
def test_estimator_monotone_and_bounded():
    models = pm.load_power_models()
    for model in models.values():
        for n_cpu in (1, 4, 8):
            util = [0.0] * n_cpu
            est = EstimatorSource(model, util_fn=lambda: util)
            assert est.probe()[0] and not est.measured and est.name == 'estimated'
            hi = model.max_w if model.max_w is not None else math.inf
            prev = -math.inf
            for load in np.linspace(0.0, 1.0, 21):  # all CPUs together
                util[:] = [load] * n_cpu
                w = est.read().total_w
                assert model.idle_w - 1e-12 <= w <= hi + 1e-12
                assert w >= prev - 1e-12
                prev = w
            rng = np.random.default_rng(n_cpu)
            for _ in range(50):  # one CPU more loaded, the others fixed: never less power
                base = list(rng.uniform(0, 1, n_cpu))
                i = int(rng.integers(n_cpu))
                util[:] = base
                w0 = est.read().total_w
                util[i] = min(1.0, base[i] + float(rng.uniform(0, 0.5)))
                assert est.read().total_w >= w0 - 1e-12
            util[:] = [5.0] * n_cpu  # out-of-range input is clamped
            assert est.read().total_w <= hi + 1e-12
            util[:] = [-1.0] * n_cpu
            assert est.read().total_w == pytest.approx(model.idle_w)
    m = models['raspberry_pi_4']  # the formula itself
    assert m.watts([0.5, 0.0, 1.0, 0.0]) == pytest.approx(m.idle_w + 1.5 * m.per_core_active_w)


def test_estimator_on_real_cpu_times():
    est = EstimatorSource(pm.load_power_models()['default'])
    ok, what = est.probe()
    assert ok, what

    def cpu_seconds():
        return sum(sum(c) for c in psutil.cpu_times(percpu=True))
    before = cpu_seconds()
    # the CPUs' time counters (10 ms ticks) moved on: the read is a real utilisation
    assert wait_until(lambda: cpu_seconds() > before, timeout=2.0)
    s = est.read()
    assert s.rails[0].name == 'board' and s.total_w >= est.model.idle_w
    assert s.total_w <= est.model.max_w and est.accuracy_frac == est.model.uncertainty
    assert len(est.utilisation()) == psutil.cpu_count()


# ---------------------------------------------------------------------------- meter
class FnSource(PowerSource):
    """A sensor whose total power is a known function of time; rails a = 25 %, b = 75 %."""

    def __init__(self, fn, name='fake', max_rate_hz=1000.0, fail_after=None, accuracy=0.0):
        super().__init__('/')
        self.fn, self.name, self.max_rate_hz = fn, name, max_rate_hz
        self.fail_after, self.reads, self.accuracy_frac = fail_after, 0, accuracy

    def _probe(self):
        return True, 'fake'

    def read(self):
        """Return f(now), or fail for good after ``fail_after`` reads."""
        self.reads += 1
        if self.fail_after is not None and self.reads > self.fail_after:
            raise SourceError(f'{self.name}: [Errno 121] Remote I/O error')
        t = time.monotonic()
        w = self.fn(t)
        return Sample(t, [Rail('a', 5.0, 0.25 * w / 5.0, 0.25 * w), Rail('b', watts=0.75 * w)], w)


def square(t, period=0.3, low=2.0, high=8.0):
    """Power stepping between 2 W and 8 W every 150 ms."""
    return high if (t % period) >= period / 2 else low


def ref_integral(fn, t0, t1, windows=(), n=200001):
    """Integrate fn / (runs active) over [t0, t1] on a fine grid (independent of the meter)."""
    t = np.linspace(t0, t1, n)
    p = np.array([fn(x) for x in t])
    if windows:
        active = np.zeros_like(t)
        for a, b in windows:
            active += (t >= a) & (t < b)
        p = p / np.maximum(active, 1)
    return float(np.trapezoid(p, t) if hasattr(np, 'trapezoid') else np.trapz(p, t))


def step_bound(t0, t1, dt, period=0.3, dp=6.0, share=1.0):
    """Trapezoid error bound for steps inside [t0, t1]: dP * dt / 2 per step (plus 1 mJ)."""
    steps = math.floor(t1 / (period / 2)) - math.floor(t0 / (period / 2)) + 1
    return steps * dp * dt / 2 * share + 1e-3


@pytest.fixture
def meters():
    made = []
    yield made
    for m in made:
        m.stop()


def test_meter_cumulative_energy_and_rate(meters):
    m = PowerMeter([FnSource(square)], rate_hz=200.0, log=lambda s: None)
    meters.append(m)
    m.start()
    assert wait_until(lambda: m.elapsed_s() >= 0.8)     # 0.8 s of samples: 5 power steps
    m.stop()
    ss = m.samples_since(-math.inf)
    ts = np.array([s.t for s in ss])
    dt_max = float(np.diff(ts).max())
    e = m.energy_j()
    ref = ref_integral(square, ts[0], ts[-1])
    # tolerance: trapezoid error at each 2 -> 8 W step <= dP * dt / 2
    assert abs(e['total'] - ref) <= step_bound(ts[0], ts[-1], dt_max)
    assert e['rails']['a'] == pytest.approx(0.25 * e['total'], rel=1e-9)
    assert e['rails']['b'] == pytest.approx(0.75 * e['total'], rel=1e-9)
    rate = (len(ss) - 1) / (ts[-1] - ts[0])
    assert rate == pytest.approx(200.0, rel=0.1)  # achieved within 10 % of requested
    assert m.achieved_rate_hz() == pytest.approx(200.0, rel=0.15)  # last 2 s only
    assert m.measured and m.source_name == 'fake'


def test_meter_ring_buffer_is_bounded(meters):
    m = PowerMeter([FnSource(lambda t: 5.0)], rate_hz=200.0, history_s=0.1, log=lambda s: None)
    meters.append(m)
    m.start()
    assert wait_until(lambda: m.elapsed_s() >= 0.4)     # 4x the history kept
    ss = m.samples_since(-math.inf)
    assert len(ss) <= 20  # history_s * rate
    assert len(ss) >= 15
    assert time.monotonic() - ss[0].t < 0.15
    m.stop()
    covered = m.elapsed_s()
    assert covered >= 0.4
    # 5 W over the whole time sampled, not only over the ring's 0.1 s
    assert m.energy_j()['total'] == pytest.approx(5.0 * covered, rel=1e-9)


def test_energy_per_inference_alone_and_overlapping(meters):
    m = PowerMeter([FnSource(square)], rate_hz=200.0, log=lambda s: None)
    meters.append(m)
    m.start()
    wait_samples(m, 2)                  # samples before the first run begins
    # run lengths in samples at 200 Hz (5 ms): 40 = 0.2 s, longer than a 0.15 s power step
    ta = m.begin('alone')
    wait_samples(m, 40)
    ra = m.end(ta)
    tb = m.begin('b')
    wait_samples(m, 24)
    tc = m.begin('c')
    wait_samples(m, 30)                 # b and c overlap here
    rb = m.end(tb)
    wait_samples(m, 24)
    rc = m.end(tc)
    td, te = m.begin('d'), m.begin('e')  # full overlap
    wait_samples(m, 40)
    got = []
    m.end(td, callback=got.append)  # no wait: e ends microseconds after d
    re = m.end(te)
    assert wait_until(lambda: got, timeout=1.0)    # d's record, from the sampler thread
    rd = got[0]
    ts = np.array([x.t for x in m.samples_since(-math.inf)])
    dt = float(np.diff(ts).max())  # the longest sample interval actually seen
    # alone: all of the power of its window
    ref = ref_integral(square, ra.t0, ra.t1)
    assert abs(ra.joules - ref) <= step_bound(ra.t0, ra.t1, dt)
    assert abs(ra.joules - ref) <= ra.error_j
    # b and c overlap on [c.t0, b.t1]: the power there is split in halves
    wins = [(rb.t0, rb.t1), (rc.t0, rc.t1)]
    for r in (rb, rc):
        ref = ref_integral(square, r.t0, r.t1, wins)
        assert abs(r.joules - ref) <= step_bound(r.t0, r.t1, dt), (r, ref)
        assert abs(r.joules - ref) <= r.error_j
        assert 'overlapping' in r.method
    # energy is conserved: b + c = the whole span
    both = ref_integral(square, rb.t0, rc.t1)
    assert abs(rb.joules + rc.joules - both) <= step_bound(rb.t0, rc.t1, dt)
    # full overlap: half each
    whole = ref_integral(square, rd.t0, re.t1)
    assert rd.joules == pytest.approx(re.joules, rel=0.01)
    assert abs(rd.joules + re.joules - whole) <= step_bound(rd.t0, re.t1, dt)
    half = ref_integral(square, rd.t0, rd.t1) / 2
    assert abs(rd.joules - half) <= step_bound(rd.t0, rd.t1, dt, share=0.5)
    for r in (ra, rb, rc, rd, re):
        assert r.sample_rate_hz == pytest.approx(200.0, rel=0.15)
        assert r.n_samples >= 0.8 * r.duration_s * 200 and r.measured and r.source == 'fake'
        assert r.error_j > 0
        assert sum(r.rail_joules.values()) == pytest.approx(r.joules, rel=1e-9)
    assert m.end(ta) is None  # a token ends once


def test_end_callback_and_rail_hook(meters):
    m = PowerMeter([FnSource(lambda t: 4.0, accuracy=0.05)], rate_hz=200.0,
                   log=lambda s: None, model_rails={'gpu_net': ['b']})
    meters.append(m)
    m.start()
    wait_samples(m, 2)
    got, done = [], threading.Event()
    t = m.begin('cpu_net')
    wait_samples(m, 20)
    assert m.end(t, callback=lambda rec: (got.append(rec), done.set())) is None
    assert done.wait(0.5)
    rec = got[0]
    assert rec.joules == pytest.approx(4.0 * rec.duration_s, rel=1e-6)
    # error: 2 edge intervals of ~5 ms (1/200 Hz) at 4 W, plus 5 % of E; a sampler
    # thread on a busy machine spaces its samples unevenly (the robot stage saw the
    # two edges at 8.6 ms together), so each edge counts from half a period
    src_part = 0.05 * rec.joules
    assert src_part + 2 * 0.5 / 200 * 4.0 <= rec.error_j <= src_part + 2 * 3 / 200 * 4.0
    g1 = m.begin('gpu_net')  # claims rail b (75 %) only
    g2 = m.begin('other', rails=['b'])
    wait_samples(m, 20)
    r1, r2 = m.end(g1), m.end(g2)  # end(g1) waits for a sample: g2 is alone a few ms
    assert set(r1.rail_joules) == {'b'} and 'rails b' in r1.method
    pb = 0.75 * 4.0  # rail b's power
    assert r1.joules == pytest.approx(pb * (r2.t0 - r1.t0) + pb / 2 * (r1.t1 - r2.t0), rel=1e-6)
    assert r2.joules == pytest.approx(pb / 2 * (r1.t1 - r2.t0) + pb * (r2.t1 - r1.t1), rel=1e-6)


def test_source_failure_switches_once(meters):
    logs = []
    flaky = FnSource(lambda t: 7.0, name='flaky', fail_after=20)
    backup = FnSource(lambda t: 3.0, name='backup', max_rate_hz=50.0)
    m = PowerMeter([flaky, backup], rate_hz=200.0, log=logs.append)
    meters.append(m)
    m.start()
    assert wait_until(lambda: m.source_name == 'backup')   # flaky fails at its 21st read
    t_a = m.latest().t
    wait_samples(m, 16)                 # 0.32 s of the backup at its 50 Hz
    warnings = [x for x in logs if 'WARNING' in x]
    assert len(warnings) == 1, logs
    assert 'flaky' in warnings[0] and 'Remote I/O error' in warnings[0]
    assert 'backup' in warnings[0]
    assert m.source_name == 'backup' and flaky.reads == 21
    assert len(m.switches) == 1 and m.switches[0].to_source == 'backup'
    after = m.samples_since(t_a)
    assert len(after) >= 10 and all(s.total_w == 3.0 for s in after)  # the stream goes on
    assert m.rate_hz == 50.0  # capped at the backup's max_rate_hz
    assert m.achieved_rate_hz(window_s=0.3) == pytest.approx(50.0, rel=0.15)
    e = m.energy_j()['total']
    assert e > 0 and not math.isnan(e)


def test_sensor_vanishes_meter_falls_back_to_estimator(tmp_path, meters, monkeypatch):
    monkeypatch.setitem(sys.modules, 'pynvml', None)
    hw = _jetson_jp5_tree(tmp_path)
    logs = []
    found = discover(str(tmp_path), log=lambda m: None)
    m = PowerMeter(found, rate_hz=400.0, log=logs.append)
    meters.append(m)
    m.start()
    wait_samples(m, 2)
    assert m.source_name == 'jetson_ina3221' and m.measured
    assert m.rate_hz == pytest.approx(200.0)  # capped by update_interval = 5 ms
    assert abs(m.latest().total_w - 5072 * 1280 / 1e6) < W_TOL
    (hw / 'in1_input').unlink()  # the INA3221 vanishes (driver unbound)
    assert wait_until(lambda: m.source_name == 'estimated')
    assert not m.measured
    assert len(logs) == 1 and 'jetson_ina3221' in logs[0] and 'VDD_IN' in logs[0]
    wait_samples(m, 2)                  # the estimator's own samples
    assert m.latest().rails[0].name == 'board'
    t = m.begin('net')
    wait_samples(m, 3)
    rec = m.end(t)
    assert rec.source == 'estimated' and not rec.measured
    assert rec.error_j >= rec.joules * found[-1].model.uncertainty


def test_attribution_math_without_threads():
    """Exact split on synthetic samples: 10 W constant, runs [0, 2] and [1, 3]."""
    ent = [attribution.Entry(Sample(t, [Rail('x', watts=10.0)], 10.0), 0)
           for t in np.arange(-0.5, 3.6, 0.5)]
    a = attribution.Run(1, 'a', 0.0, None, 2.0)
    b = attribution.Run(2, 'b', 1.0, None, 3.0)
    ra = attribution.attribute(ent, a, [a, b], 0.5)
    rb = attribution.attribute(ent, b, [a, b], 0.5)
    assert ra['joules'] == pytest.approx(10 * 1 + 5 * 1)
    assert rb['joules'] == pytest.approx(5 * 1 + 10 * 1)
    assert ra['edge_s'] == pytest.approx(1.0)  # two 0.5 s edge intervals


def test_attribution_of_a_ramp_is_exact_at_irregular_samples():
    """A ramp's energy per run equals its closed form, alone and split with another run.

    p(t) = 4 + 3t sampled at irregular times: linear interpolation is exact.
    """
    rng = np.random.default_rng(7)
    ts = np.sort(rng.uniform(-0.4, 3.5, 23))
    ent = [attribution.Entry(Sample(float(t), [Rail('x', watts=4 + 3 * t)], 4 + 3 * t), 0)
           for t in ts]

    def energy(a: float, b: float) -> float:
        return 4 * (b - a) + 1.5 * (b * b - a * a)
    a = attribution.Run(1, 'a', 0.13, None, 2.07)
    b = attribution.Run(2, 'b', 1.01, None, 3.3)
    ra = attribution.attribute(ent, a, [a, b], 0.1)
    assert ra['joules'] == pytest.approx(energy(0.13, 1.01) + energy(1.01, 2.07) / 2)
    assert ra['rail_joules']['x'] == pytest.approx(ra['joules'])
    assert ra['t_share'] == pytest.approx((1.01 - 0.13) + (2.07 - 1.01) / 2)
    alone = attribution.attribute(ent, a, [a], 0.1)
    assert alone['joules'] == pytest.approx(energy(0.13, 2.07))
    # the edge term: the sample intervals around each end of the window
    k0, k1 = np.searchsorted(ts, 0.13), np.searchsorted(ts, 2.07)
    assert alone['edge_s'] == pytest.approx((ts[k0] - ts[k0 - 1]) + (ts[k1] - ts[k1 - 1]))


def test_shared_meter_one_per_process_first_settings_win(tmp_path):
    from edge_infer.telemetry import process_meter
    meters = process_meter.ProcessMeter()      # a process's (its runtime holds one)
    _jetson_jp5_tree(tmp_path)
    lines = []
    cfg = process_meter.settings(rate_hz=50.0, root=str(tmp_path))
    a = meters.acquire(cfg, log=lines.append)
    try:
        assert a.source_name == 'jetson_ina3221' and a.rate_hz == pytest.approx(50.0)
        assert any('power source rapl: unavailable' in x for x in meters.discovery_report())
        b = meters.acquire(None, log=lines.append)             # "whatever runs": no complaint
        assert b is a and meters.users() == 2 and not any('already' in x for x in lines)
        c = meters.acquire(process_meter.settings(rate_hz=10.0, root=str(tmp_path)),
                           log=lines.append)
        assert c is a and a.rate_hz == pytest.approx(50.0)     # the first settings stay
        assert any('already running' in x and 'rate_hz=50.0' in x for x in lines)
        meters.release()
        meters.release()
        assert meters.users() == 1 and a._thread is not None   # one user left: still sampling
    finally:
        meters.release()
    assert meters.users() == 0 and a._thread is None           # the last user stopped it
    with pytest.raises(ValueError, match='sample rate'):
        process_meter.settings(rate_hz=0)


@pytest.mark.parametrize('measured', [True, False])
def test_a_callback_never_waits_end_alone_holds_the_estimators_tail(meters, measured):
    src = FnSource(lambda t: 4.0)
    src.measured = measured         # False: as the CPU-load estimator reports itself
    m = PowerMeter([src], rate_hz=40.0, log=lambda s: None)     # 25 ms between samples
    meters.append(m)
    m.start()
    wait_samples(m, 2)                  # a sample before the run starts
    got = []
    t = m.begin('net')
    wait_samples(m, 1)                  # one inside the run
    t_end = time.monotonic()
    assert m.end(t, callback=got.append) is None
    assert time.monotonic() - t_end < 0.02
    # either source: delivered later, from the sampler thread, the tail covered
    assert not got
    assert wait_until(lambda: got, timeout=1.0)
    assert 'tail held' not in got[0].method
    rec = got[0]
    assert rec.joules == pytest.approx(4.0 * rec.duration_s, rel=1e-6)
    # without a callback: the estimator returns at once, a sensor waits (up to 37.5 ms)
    t = m.begin('net')
    t_end = time.monotonic()
    rec = m.end(t)
    assert rec is not None and rec.joules == pytest.approx(4.0 * rec.duration_s, rel=1e-6)
    assert ('tail held' in rec.method) is (not measured)
    assert 'head held' not in rec.method    # a sample before the start was there
