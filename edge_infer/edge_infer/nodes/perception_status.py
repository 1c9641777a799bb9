# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What a perception node says about itself: its backend report and its /diagnostics status.

A mixin of :class:`edge_infer.nodes.perception_node.PerceptionNode`: it reads
the node's counters (``stats``), its run-time choice (``_live``), manager,
meter and publishers, and turns them into ``~/backend_report``
(edge_infer_msgs/BackendReport, transient local) and the node's
``DiagnosticStatus``.

The status tells the truth about the node (diagnostic_updater's form: one
status named ``<node>: perception``, once per ``diagnostics_period``): ERROR
with the reason after a configure or activate that failed, until a transition
succeeds; STALE while active with no result for ``stale_after_s``; WARN while
more than ``drop_rate_warn`` of the frames were dropped, or some were
rejected, in the last ``diagnostics_window_s`` (:mod:`edge_infer.core.health`).
"""

import time
from typing import Any, Callable, Deque, Optional, TYPE_CHECKING

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from edge_infer_msgs.msg import BackendCandidate, BackendReport
from rclpy.lifecycle import TransitionCallbackReturn

from .tracks_and_depth import TracksAndDepth
from ..backends.live.choice import LiveChoice
from ..backends.manager import BackendManager
from ..backends.measure.gate import GATE
from ..backends.precision.variants import make_command, NOT_MADE
from ..core.health import StreamHealth, WARN
from ..core.model import Model
from ..core.stream import StreamStats
from ..executor.core import SharedExecutor
from ..telemetry.meter import PowerMeter

if TYPE_CHECKING:       # for the type checker: the node this mixin is part of
    from .base import ManagedNode as _Node
else:
    _Node = object


class PerceptionStatus(_Node):
    """The backend report and the diagnostics of a perception node."""

    # what it reads, set by PerceptionNode (declared here for the type checker)
    stats: StreamStats
    _model: Optional[Model]             # the Model the next frame runs on (None: unconfigured)
    _manager: Optional[BackendManager]
    _live: Optional[LiveChoice]         # the run-time choice
    _executor: Optional[SharedExecutor]     # the shared executor (executor_policy set)
    _meter: Optional[PowerMeter]
    _extras: Optional[TracksAndDepth]   # track ids and 3D from depth
    _report_pub: Any                    # rclpy publishers (rclpy has no type information)
    _debug_pub: Any
    _joules: Deque[float]
    _running: bool
    _topic: str
    _failure = ''               # 'configure failed: ...' until a transition succeeds
    _health_state: Optional[StreamHealth] = None

    # ------------------------------------------------------------- backend choice
    def _publish_report(self, run, trigger: str) -> None:
        """Publish the choice and every candidate's figures (transient-local)."""
        if trigger == 'fallback':
            self.stats.count('fallbacks')
        manager = self._manager
        if self._report_pub is None or manager is None:     # reports come once configured
            return
        msg = BackendReport()
        msg.header.stamp = self.get_clock().now().to_msg()
        spec = self._model.spec if self._model else None
        msg.model = run.model
        msg.objective = self._param('objective')
        msg.max_latency_ms = float(self._param('max_latency_ms'))
        msg.min_accuracy = float(manager.min_accuracy(spec, self._param('min_accuracy'))
                                 if spec else self._param('min_accuracy'))
        msg.chosen, msg.reason, msg.trigger = run.chosen or '', run.why, trigger
        board = manager.board
        msg.board = ', '.join(f'{k}={v}' for k, v in board.items() if v)
        for r in run.results:
            msg.candidates.append(BackendCandidate(
                name=r.backend, library=r.library, device=r.device, precision=r.precision,
                tensor_passing=r.tensor_passing, input_kind=r.input_kind, status=r.status,
                reason=r.reason, latency_p50_ms=float(r.p50_ms),
                latency_p90_ms=float(r.p90_ms), preprocess_ms=float(r.preprocess_ms),
                runs=int(r.runs), energy_j=float(r.energy_j),
                energy_error_j=float(r.energy_error_j), energy_source=r.energy_source,
                accuracy=float(r.accuracy), from_cache=bool(run.from_cache.get(r.backend)),
                chosen=bool(r.chosen)))
        self._report_pub.publish(msg)
        log = self.get_logger().info
        log(f"backend for '{run.model}' ({trigger}, objective {msg.objective}): {run.why}")
        unavailable = [r for r in run.results if r.status not in ('ok', 'unmeasured')]
        not_made = [r.backend for r in unavailable if NOT_MADE in r.reason]
        if unavailable:
            log('not used: ' + '; '.join(
                f'{r.backend} {r.status} ({NOT_MADE if r.backend in not_made else r.reason})'
                for r in unavailable))
        if not_made and not getattr(self, '_said_not_made', False):     # once per node
            self._said_not_made = True
            self.get_logger().warning(
                f'{len(not_made)} candidate(s) of {run.model} wait for their variant files '
                f'({", ".join(not_made)}): serving and measuring the others; make them '
                f'once with: {make_command(run.model)} (a start never quantizes)')

    # ---------------------------------------------------------------- diagnostics
    def _transition(self, transition: str, step: Callable[[], None], undo: Callable[[], None],
                    known: tuple = ()) -> TransitionCallbackReturn:
        """Run a transition's ``step``; on any exception, :meth:`_transition_failed`.

        ``known``: exception types whose message is the reason by itself (a bug
        or a library error gets its type name in front: still one line, no crash).
        """
        try:
            step()
        except Exception as exc:
            reason = str(exc) if isinstance(exc, known) else f'{type(exc).__name__}: {exc}'
            return self._transition_failed(transition, reason, undo)
        self._failure = ''
        return TransitionCallbackReturn.SUCCESS

    def _transition_failed(self, transition: str, reason: str,
                           undo: Callable[[], None]) -> TransitionCallbackReturn:
        """Log one line, ``undo``, and publish ERROR with the reason until a transition succeeds.

        A node left unconfigured (a model name's typo) says why on /diagnostics,
        every ``diagnostics_period``, not only in its log.
        """
        self.get_logger().error(f'{transition} failed: {reason}')
        undo()
        self._failure = f'{transition} failed: {reason}'
        period = self._param('diagnostics_period')
        self._start_diagnostics(period if period >= 0 else 1.0)     # < 0: the default's
        self._publish_diagnostics()
        return TransitionCallbackReturn.FAILURE

    def _failure_status(self, st: DiagnosticStatus) -> DiagnosticStatus:
        st.level, st.message = DiagnosticStatus.ERROR, self._failure
        st.values = [KeyValue(key='model', value=str(self._param('model'))),
                     KeyValue(key='state', value=self.lifecycle_state())]
        return st

    def diagnostic_status(self) -> DiagnosticStatus:
        """Return this node's status for /diagnostics."""
        st = DiagnosticStatus()
        st.name = f'{self.get_fully_qualified_name()}: perception'
        st.hardware_id = self._model.backend_name if self._model else ''
        if self._failure:
            return self._failure_status(st)
        snap = self.stats.snapshot()
        p50, p95 = self.stats.percentiles(50, 95)
        window = self._param('diagnostics_window_s')
        recent = self.stats.rejected_within(window)
        if self._health_state is None:
            self._health_state = StreamHealth()
        health, now = self._health_state, time.monotonic()
        health.update(now, self._running, snap['received'], snap['dropped'], snap['processed'])
        topic = self.resolve_topic_name(self._topic) if self._topic else ''
        level, reasons = health.judge(now, snap['received'], topic, window,
                                      self._param('drop_rate_warn'),
                                      self._param('stale_after_s'))
        if self._running and recent:
            level = max(level, WARN)
            reasons.append(f'{recent} frame(s) rejected in the last {window:g} s; last: '
                           f"{snap['last_error']}")
        st.level = bytes([level])       # diagnostic_msgs' byte field
        st.message = '; '.join(reasons) if reasons else ('ok' if self._running else 'inactive')
        rate, _, _ = health.drop_rate(now, window)
        values = {'model': self._model.spec.name if self._model else '',
                  'backend': st.hardware_id,
                  'input_topic': topic,
                  'received': snap['received'], 'processed': snap['processed'],
                  'dropped': snap['dropped'], 'rejected': snap['rejected'],
                  'lost': snap['lost'], 'rejected_recently': recent,
                  'dropped_share_recently': f'{rate:.3f}',
                  'seconds_since_result': f'{health.idle_s(now):.1f}',
                  'latency_p50_ms': f'{p50:.2f}', 'latency_p95_ms': f'{p95:.2f}',
                  'last_error': snap['last_error']}
        if self._executor is not None:
            values['executor_policy'] = self._executor.policy
            values['executor_bytes_copied_total'] = self._executor.bytes_copied
        live = self._live
        if live is not None and live.run is not None:
            values['backend_reason'] = live.run.why
            values['backend_provisional'] = live.provisional   # profile still running
            values['drift_events'] = live.selector.drift.fired if live.selector.drift else 0
            values['drift_episodes'] = live.selector.drift.episodes if live.selector.drift else 0
            values['backend_switches'] = len(live.switches)
            values['reselect_runs'] = f'{live.shadow_runs} ({live.served_frames} served)'
            values['reselect_share'] = f'{live.overhead():.3f}'
        if live is not None:
            values['runners_up_open'] = len(live.selector.runners)
            values['fallbacks'] = snap['fallbacks']
            fell = [s for s in live.switches if s['trigger'] == 'fallback']
            if fell and live.clock.monotonic() - fell[-1]['t'] < window:
                st.level = bytes([max(st.level[0], WARN)])
                st.message = '; '.join(
                    ([] if st.message in ('ok', 'inactive') else [st.message]) +
                    [f"{fell[-1]['evidence']}: fell back to {fell[-1]['to']}"])
        if self._extras is not None:
            values.update(self._extras.status())
        # memory per node state: the process's, shared by the nodes it hosts
        values['state'] = self.lifecycle_state()
        values['process_rss_mb'] = f'{_rss_mb():.0f}'
        values['energy_after_stop'] = snap.get('energy_after_stop', 0)
        values['stage_p50_ms'] = ', '.join(f'{k} {v:.2f}' for k, v in
                                           self.stats.stage_medians().items())
        values['stage_total_ms'] = ', '.join(f'{k} {v:.1f}' for k, v in
                                             self.stats.stage_totals().items())
        if live is not None:    # in run_other: waiting for a core (the compute gate)
            values['core_wait_total_ms'] = f'{GATE.waited_ms(live.spec.name):.1f}'
        values['debug_images'] = self.stats.debug_images
        values['debug_image_subscribers'] = (self._debug_pub.get_subscription_count()
                                             if self._debug_pub is not None else 0)
        if self._meter is not None:
            joules = sorted(self._joules)
            values['energy_source'] = self._meter.source_name
            values['energy_per_inference_p50_j'] = (f'{joules[len(joules) // 2]:.4f}'
                                                    if joules else 'nan')
            values['energy_missing'] = snap.get('energy_missing', 0)
        st.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        return st


def _rss_mb() -> float:
    """Return this process's resident memory in MB."""
    import psutil
    return psutil.Process().memory_info().rss / 1e6
