# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Lifecycle node: board power and energy as typed topics.

- configure: discover the power sources (one log line each: found, or why
  not), start the process's shared power meter (``telemetry.process_meter``: the
  same sampler the perception nodes of this process use for energy per
  inference), create publishers.
- activate: publish ``~/power`` (edge_infer_msgs/PowerSample) at
  ``publish_rate_hz`` and /diagnostics every ``diagnostics_period`` seconds.
- deactivate: stop publishing (the meter keeps sampling for the other
  nodes); cleanup / shutdown: let go of the meter (the last user stops it).

Each PowerSample carries the mean, min and max of the internal samples taken
since the previous message, the newest sample's rails, the achieved internal
rate, and cumulative energy. When the sensor vanishes mid-run the meter
switches to the next source with one warning and the stream goes on, its
``source`` field showing the change.
"""

import math
import time
from typing import Optional

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from edge_infer_msgs.msg import PowerSample, RailPower
from rclpy.lifecycle import LifecyclePublisher, LifecycleState, TransitionCallbackReturn
from rclpy.timer import Timer

from .base import ManagedNode, SharedLog
from .telemetry_params import PARAMETERS
from ..backends.runtime import Runtime
from ..telemetry import process_meter
from ..telemetry.meter import PowerMeter
from ..telemetry.sources import source_names


class TelemetryNode(ManagedNode):
    """Publishes power samples, cumulative energy and diagnostics."""

    PARAMETERS = PARAMETERS

    def __init__(self, node_name: str = 'telemetry', runtime: Optional[Runtime] = None,
                 **kwargs):
        """``runtime``: what the process's nodes share (its power meter); default: its own."""
        super().__init__(node_name, **kwargs)
        self.runtime = runtime or Runtime(SharedLog())
        self.meters = self.runtime.meter
        self.meter: Optional[PowerMeter] = None
        self._pub: Optional[LifecyclePublisher] = None
        self._timer: Optional[Timer] = None
        self._last_t = -math.inf
        self.published = 0

    # ----------------------------------------------------------------- lifecycle
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Check parameters, start (or join) the process's power meter."""
        try:
            config = self._settings()
        except ValueError as exc:
            self.get_logger().error(f'configure failed: {exc}')
            return TransitionCallbackReturn.FAILURE
        self.meter = self.meters.acquire(config, log=self.runtime.log)  # the process's, its lines
        self._pub = self.create_lifecycle_publisher(PowerSample, '~/power', 10)
        self._start_diagnostics(self._param('diagnostics_period'))
        self.get_logger().info(
            f'configured: {self.meter.source_name} at {self.meter.rate_hz:.0f} Hz, '
            f'publishing {self._pub.topic_name} at {self._param("publish_rate_hz"):g} Hz')
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Start the publishing timers."""
        self._last_t = time.monotonic()
        self._timer = self.create_timer(1.0 / self._param('publish_rate_hz'),
                                        self.quiet_at_shutdown(self._publish))
        assert self._pub is not None            # made by on_configure
        self.get_logger().info(f'active: publishing {self._pub.topic_name} at '
                               f"{self._param('publish_rate_hz'):g} Hz")
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop publishing power; the meter keeps running for the other nodes."""
        self._stop_timer()
        self.get_logger().info(f'deactivated: {self.published} power messages published; the '
                               f'meter keeps sampling for the other nodes')
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Let go of the meter and the publishers."""
        self._release()
        self.get_logger().info('cleaned up: power meter and publishers released')
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Release everything, whatever the state."""
        self.release_everything()
        self.get_logger().info(f"shut down from '{state.label}': everything released")
        return TransitionCallbackReturn.SUCCESS

    def release_everything(self) -> None:
        """Stop publishing, release the meter and the publishers (no transition)."""
        self._stop_timer()
        self._release()

    # ------------------------------------------------------------------- helpers
    def _settings(self) -> dict:
        rate, pub = self._param('sample_rate_hz'), self._param('publish_rate_hz')
        if not rate > 0:
            raise ValueError(f"parameter 'sample_rate_hz' is {rate}: use a positive rate")
        if not 0 < pub <= rate:
            raise ValueError(f"parameter 'publish_rate_hz' is {pub}: use a rate in "
                             f'(0, sample_rate_hz={rate:g}]')
        if self._param('diagnostics_period') < 0:
            raise ValueError("parameter 'diagnostics_period' is negative: use 0 (off) or more")
        disable = [d for d in self._param('disable_sources') if d]
        unknown = sorted(set(disable) - set(source_names()))
        if unknown:
            raise ValueError(f"parameter 'disable_sources' names unknown sources {unknown} "
                             f'(known: {", ".join(source_names())})')
        return process_meter.settings(rate_hz=rate, root=self._param('sysfs_root'),
                                      disable=disable,
                                      power_models_file=self._param('power_models_file'),
                                      power_model=self._param('power_model'),
                                      history_s=self._param('history_s'))

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self.destroy_timer(self._timer)
            self._timer = None

    def _release(self) -> None:
        if self._pub is not None:
            self.destroy_lifecycle_publisher(self._pub)
            self._pub = None
        self._stop_diagnostics()
        if self.meter is not None:
            self.meter = None
            self.meters.release()

    # ---------------------------------------------------------------- publishing
    def build_sample(self) -> Optional[PowerSample]:
        """Return a PowerSample over the samples since the previous call (None: no data yet)."""
        meter = self.meter
        if meter is None:       # not configured
            return None
        samples = meter.samples_since(self._last_t)
        newest = samples[-1] if samples else meter.latest()
        if newest is None:
            return None
        if samples:
            self._last_t = samples[-1].t
        watts = [s.total_w for s in samples if not math.isnan(s.total_w)] or [newest.total_w]
        energy = meter.energy_j()
        msg = PowerSample()
        msg.header.stamp = self.ros_time(newest.t)
        src = meter.source
        msg.source = src.name
        msg.measured = bool(src.measured)
        msg.sample_rate_hz = float(meter.achieved_rate_hz())
        msg.n_samples = len(samples)
        msg.total_watts = float(sum(watts) / len(watts))
        msg.min_watts, msg.max_watts = float(min(watts)), float(max(watts))
        msg.rails = [RailPower(name=r.name, volts=float(r.volts), amps=float(r.amps),
                               watts=float(r.watts),
                               energy_j=float(energy['rails'].get(r.name, 0.0)))
                     for r in newest.rails]
        msg.energy_j = float(energy['total'])
        msg.elapsed_s = float(meter.elapsed_s())
        return msg

    def _publish(self) -> None:
        msg = self.build_sample()
        if msg is not None and self._pub is not None:
            self._pub.publish(msg)
            self.published += 1

    def diagnostic_status(self) -> DiagnosticStatus:
        """Return the power meter's status for /diagnostics."""
        meter = self.meter
        st = DiagnosticStatus()
        st.name = f'{self.get_fully_qualified_name()}: power'
        st.hardware_id = meter.source_name if meter else ''
        latest = meter.latest() if meter else None
        if meter is None:
            st.level, st.message = DiagnosticStatus.OK, 'unconfigured'
        elif meter.switches:
            sw = meter.switches[-1]
            st.level = DiagnosticStatus.WARN
            st.message = f'{sw.from_source} failed ({sw.error}); now {sw.to_source}'
        elif not meter.measured:
            st.level = DiagnosticStatus.OK
            st.message = 'estimated from CPU load (no power sensor found)'
        else:
            st.level, st.message = DiagnosticStatus.OK, f'measured by {meter.source_name}'
        if meter is not None and latest is None:
            st.level, st.message = DiagnosticStatus.WARN, 'no sample yet'
        values = {}
        if meter is not None:
            energy = meter.energy_j()
            values = {'source': meter.source_name, 'measured': meter.measured,
                      'sample_rate_requested_hz': f'{meter.rate_hz:.1f}',
                      'sample_rate_achieved_hz': f'{meter.achieved_rate_hz():.1f}',
                      'total_watts': f'{latest.total_w:.3f}' if latest else 'nan',
                      'energy_j': f'{energy["total"]:.3f}',
                      'elapsed_s': f'{meter.elapsed_s():.1f}',
                      'source_switches': len(meter.switches)}
            for i, line in enumerate(self.meters.discovery_report()):
                values[f'probe_{i}'] = line
        st.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        return st
