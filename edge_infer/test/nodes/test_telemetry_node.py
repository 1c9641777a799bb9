# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The telemetry node with real rclpy, on a Jetson-like sysfs tree that vanishes mid-run.

The node runs in this process (its own rclpy context from the ``ros``
fixture); its power samples travel over DDS to a subscriber of the same
context. The tree is the JetPack 5 hwmon layout of test_telemetry.
"""

import math
import os
import shutil
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from edge_infer.nodes.telemetry_node import TelemetryNode
from edge_infer_msgs.msg import PowerSample
from power_trees import _jetson_jp5_tree
import pytest
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter

VDD_IN_W = 5072 * 1280 / 1e6    # the fixture's input rail: the board's total


def _stamp(msg) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec / 1e9


@pytest.fixture
def telemetry(ros):
    made = []

    def make(name, **params):
        node = TelemetryNode(name, context=ros.ctx, parameter_overrides=[
            Parameter(k, value=v) for k, v in params.items()])
        ros.executor.add_node(node)
        made.append(node)
        return node
    yield make
    for node in made:
        node.trigger_shutdown()
        ros.executor.remove_node(node)
        node.destroy_node()
    assert all(n.meters.users() == 0 for n in made)     # the last user stopped the meter


@pytest.mark.slow
def test_power_at_rate_then_sensor_vanishes_and_stream_goes_on(
        ros, telemetry, tmp_path, capfd):
    hw = _jetson_jp5_tree(tmp_path)
    power, diags = [], []
    ros.node.create_subscription(PowerSample, '/tel_a/power', power.append, 100)
    ros.node.create_subscription(
        DiagnosticArray, '/diagnostics',
        lambda m: diags.extend(s for s in m.status if s.name.startswith('/tel_a')), 10)
    node = telemetry('tel_a', sysfs_root=str(tmp_path), sample_rate_hz=100.0,
                     publish_rate_hz=10.0, diagnostics_period=0.5)
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    assert node.meter.source_name == 'jetson_ina3221'
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    t_act = time.monotonic()
    ros.spin_until(lambda: time.monotonic() - t_act > 3.0, 3.5)
    measured = list(power)
    assert measured, 'no PowerSample in 3 s'

    # Rate: stamps of the messages of the last 2 s, 10 Hz configured.
    last = _stamp(measured[-1])
    recent = [m for m in measured if last - _stamp(m) < 2.0]
    assert 15 <= len(recent) <= 25, f'{len(recent)} messages in 2 s at 10 Hz'
    for m in measured[1:]:
        assert m.source == 'jetson_ina3221' and m.measured
        assert m.total_watts == pytest.approx(VDD_IN_W, abs=1e-9)   # constant fixture
        assert m.min_watts == pytest.approx(VDD_IN_W) and m.max_watts == pytest.approx(VDD_IN_W)
        assert [r.name for r in m.rails] == ['VDD_IN', 'VDD_CPU_GPU_CV', 'VDD_SOC']
        assert m.rails[0].volts == pytest.approx(5.072) and m.rails[0].amps == pytest.approx(1.28)
        assert 50 <= m.sample_rate_hz <= 110    # 100 Hz asked; a busy CI core delays some
        # Cumulative energy: constant power x time covered, to 1 %.
        assert m.energy_j == pytest.approx(VDD_IN_W * m.elapsed_s, rel=0.01)
        assert m.rails[0].energy_j == pytest.approx(m.energy_j, rel=1e-9)
    assert measured[-1].energy_j > measured[1].energy_j
    # Each message holds the samples since the previous one, none twice, none
    # left out: over the last 2 s their counts add up to the rate the meter
    # reports (one message's count varies with scheduling: 4-15 seen here).
    span = _stamp(recent[-1]) - _stamp(recent[0])
    counted = sum(m.n_samples for m in recent[1:]) / span
    assert counted == pytest.approx(recent[-1].sample_rate_hz, rel=0.15)
    ok = [d for d in diags if d.level == DiagnosticStatus.OK]
    assert ok and 'measured by jetson_ina3221' in ok[-1].message
    values = {kv.key: kv.value for kv in ok[-1].values}
    assert values['source'] == 'jetson_ina3221'
    assert any('power source rapl: unavailable' in v for k, v in values.items()
               if k.startswith('probe_'))

    # The sensor vanishes: one warning, the estimator takes over, messages go on.
    n_before = len(power)
    shutil.rmtree(hw)
    t_gone = time.monotonic()
    ros.spin_until(lambda: time.monotonic() - t_gone > 2.0, 2.5)
    after = power[n_before:]
    assert len(after) >= 14, f'only {len(after)} messages in the 2 s after the failure'
    stamps = [_stamp(m) for m in power]
    assert max(b - a for a, b in zip(stamps, stamps[1:])) < 0.5   # no gap in the stream
    assert after[-1].source == 'estimated' and not after[-1].measured
    assert [r.name for r in after[-1].rails] == ['board']
    assert 0 < after[-1].total_watts < 1000 and math.isfinite(after[-1].energy_j)
    assert after[-1].energy_j > measured[-1].energy_j        # cumulative across the switch
    warn = [d for d in diags if d.level == DiagnosticStatus.WARN]
    assert warn and 'jetson_ina3221 failed' in warn[-1].message
    err = capfd.readouterr().err
    assert err.count('switched to estimated') == 1, err[-2000:]
    assert len(node.meter.switches) == 1


@pytest.mark.parametrize('params, message', [
    ({'publish_rate_hz': 200.0}, "'publish_rate_hz' is 200.0"),
    ({'sample_rate_hz': 0.0}, "'sample_rate_hz' is 0.0"),
    ({'disable_sources': ['rapl', 'thermocouple']}, "unknown sources ['thermocouple']"),
])
def test_bad_parameters_fail_configure_with_one_line(ros, telemetry, capfd, params, message):
    node = telemetry('tel_bad', **params)
    assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
    assert node.meter is None and node.meters.users() == 0
    err = capfd.readouterr().err
    assert err.count('configure failed') == 1 and message in err


def test_a_shutdown_while_a_timer_publishes_is_not_reported_as_an_error(tmp_path):
    """Ctrl-C ends the context while a timer's callback publishes: nothing is raised.

    The fresh-clone CI logged "publisher's context is invalid" with a traceback
    from the diagnostics timer of a node stopped with SIGINT. Both timers of
    the node are wrapped; the same call unwrapped still raises (the wrapper is
    what keeps the shutdown quiet), and an error while the context is up is
    raised as before.
    """
    import rclpy
    from edge_infer import procs
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=procs.free_domain_id(os.getpid() + 1))
    node = TelemetryNode('tel_quiet', context=ctx, parameter_overrides=[
        Parameter('sysfs_root', value=str(tmp_path)), Parameter('diagnostics_period', value=0.5)])
    try:
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
        deadline = time.monotonic() + 10
        while node.build_sample() is None and time.monotonic() < deadline:
            time.sleep(0.02)                    # the meter's first sample
        assert node.build_sample() is not None
        node._publish_diagnostics()             # context up: both publish
        node._publish()
        assert node.published == 1
        with pytest.raises(ValueError, match='a real error'):
            node.quiet_at_shutdown(lambda: int('a real error'))()

        def shut_down_then_publish():
            rclpy.try_shutdown(context=ctx)     # the signal handler, mid-callback
            node._publish_diagnostics()
        node.quiet_at_shutdown(shut_down_then_publish)()    # not raised
        for publish in (node._publish_diagnostics, node._publish):
            with pytest.raises(Exception, match='context is invalid'):
                publish()                       # unwrapped: the error of the CI log
            node.quiet_at_shutdown(publish)()   # context already down: skipped
    finally:
        node._release()
        node.destroy_node()
        rclpy.try_shutdown(context=ctx)
    assert node.meters.users() == 0
