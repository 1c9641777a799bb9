# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What a perception node says about itself: its backend report and its /diagnostics status.

A part of :class:`edge_infer.nodes.perception_node.PerceptionNode`, given
what it reads: the node's counters (``stats``: its cameras' totals), its
frame thread, and the parts its configure made (:class:`Parts`: the
run-time choice, manager, meter, executor, each camera and its
outputs; with several cameras each one's counters show as
``<camera>.received``, ...). It turns them into ``~/backend_report``
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
from typing import Optional

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from edge_infer_msgs.msg import BackendCandidate, BackendReport

from .base import ManagedNode
from .camera_input import FrameThread
from .perception_parts import Parts
from ..backends.precision.variants import make_command, NOT_MADE
from ..core.health import StreamHealth, WARN
from ..core.stream import StreamStats


class PerceptionStatus:
    """The backend report and the diagnostics of a perception node."""

    def __init__(self, node: ManagedNode, stats: StreamStats, frames: FrameThread,
                 parts: Parts):
        self.node, self.stats, self.frames, self.parts = node, stats, frames, parts
        self._health: Optional[StreamHealth] = None
        self._said_not_made = False

    # ------------------------------------------------------------- backend choice
    def report(self, run, trigger: str) -> None:
        """Publish the choice and every candidate's figures (transient-local)."""
        if trigger == 'fallback':
            self.stats.count('fallbacks')
        node, parts = self.node, self.parts
        manager = parts.manager
        if parts.report_pub is None or manager is None:     # reports come once configured
            return
        param = node._param
        msg = BackendReport()
        msg.header.stamp = node.get_clock().now().to_msg()
        model = parts.live.model if parts.live else None
        spec = model.spec if model else None
        msg.model = run.model
        msg.objective = param('objective')
        msg.max_latency_ms = float(param('max_latency_ms'))
        msg.min_accuracy = float(manager.min_accuracy(spec, param('min_accuracy'))
                                 if spec else param('min_accuracy'))
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
        parts.report_pub.publish(msg)
        log = node.get_logger().info
        log(f"backend for '{run.model}' ({trigger}, objective {msg.objective}): {run.why}")
        unavailable = [r for r in run.results if r.status not in ('ok', 'unmeasured')]
        not_made = [r.backend for r in unavailable if NOT_MADE in r.reason]
        if unavailable:
            log('not used: ' + '; '.join(
                f'{r.backend} {r.status} ({NOT_MADE if r.backend in not_made else r.reason})'
                for r in unavailable))
        if not_made and not self._said_not_made:     # once per node
            self._said_not_made = True
            node.get_logger().warning(
                f'{len(not_made)} candidate(s) of {run.model} wait for their variant files '
                f'({", ".join(not_made)}): serving and measuring the others; make them '
                f'once with: {make_command(run.model)} (a start never quantizes)')

    # ---------------------------------------------------------------- diagnostics
    def diagnostic_status(self) -> DiagnosticStatus:
        """Return the node's status for /diagnostics."""
        node, parts, cams = self.node, self.parts, self.parts.cameras
        param, live = node._param, parts.live
        model = live.model if live is not None else None
        st = DiagnosticStatus()
        st.name = f'{node.get_fully_qualified_name()}: perception'
        st.hardware_id = model.backend_name if model else ''
        if node.failure:
            return node.failure_status(st, model=param('model'))
        snap = self.stats.snapshot()
        p50, p95 = self.stats.percentiles(50, 95)
        window = param('diagnostics_window_s')
        recent = self.stats.rejected_within(window)
        if self._health is None:
            self._health = StreamHealth()
        health, now, running = self._health, time.monotonic(), self.frames.running
        health.update(now, running, snap['received'], snap['dropped'], snap['processed'])
        topic = ', '.join(node.resolve_topic_name(c.feed.topic) for c in cams if c.feed.topic)
        level, reasons = health.judge(now, snap['received'], topic, window,
                                      param('drop_rate_warn'), param('stale_after_s'))
        if running and recent:
            level = max(level, WARN)
            reasons.append(f'{recent} frame(s) rejected in the last {window:g} s; last: '
                           f"{snap['last_error']}")
        st.level = bytes([level])       # diagnostic_msgs' byte field
        st.message = '; '.join(reasons) if reasons else ('ok' if running else 'inactive')
        rate, _, _ = health.drop_rate(now, window)
        values = {'model': model.spec.name if model else '',
                  'backend': st.hardware_id,
                  'input_topic': topic,
                  'received': snap['received'], 'processed': snap['processed'],
                  'dropped': snap['dropped'], 'rejected': snap['rejected'],
                  'lost': snap['lost'], 'rejected_recently': recent,
                  'dropped_share_recently': f'{rate:.3f}',
                  'seconds_since_result': f'{health.idle_s(now):.1f}',
                  'latency_p50_ms': f'{p50:.2f}', 'latency_p95_ms': f'{p95:.2f}',
                  'last_error': snap['last_error']}
        if parts.executor is not None:
            values['executor_policy'] = parts.executor.policy
            values['executor_bytes_copied_total'] = parts.executor.bytes_copied
        if live is not None and live.run is not None:
            values['backend_reason'] = live.run.why
            values['backend_provisional'] = live.provisional   # profile still running
            drift = live.selector.drift
            values['drift_events'] = drift.fired if drift else 0
            values['drift_episodes'] = drift.episodes if drift else 0
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
        for cam in cams[:1]:    # one tracker's kind (every camera has its own, alike)
            if cam.tracks_and_depth is not None:
                values.update(cam.tracks_and_depth.status())
        if len(cams) > 1:
            values['batching'] = live.batch.why if live is not None else ''
            values['batched'] = snap['batched']     # frames run in a batch of several
            for cam in cams:
                c = cam.stats.snapshot()
                values.update({f'{cam.name}.{k}': c[k] for k in
                               ('received', 'processed', 'dropped', 'rejected', 'lost',
                                'batched')})
                values[f'{cam.name}.latency_p50_ms'] = f'{cam.stats.percentiles(50)[0]:.2f}'
        # memory per node state: the process's, shared by the nodes it hosts
        values['state'] = node.lifecycle_state()
        values['process_rss_mb'] = f'{_rss_mb():.0f}'
        values['energy_after_stop'] = snap.get('energy_after_stop', 0)
        values['stage_p50_ms'] = ', '.join(f'{k} {v:.2f}' for k, v in
                                           self.stats.stage_medians().items())
        values['stage_total_ms'] = ', '.join(f'{k} {v:.1f}' for k, v in
                                             self.stats.stage_totals().items())
        if live is not None:    # in run_other: waiting for a core (the compute gate)
            values['core_wait_total_ms'] = f'{live.runtime.gate.waited_ms(live.spec.name):.1f}'
        values['debug_images'] = self.stats.debug_images
        values['debug_image_subscribers'] = sum(c.debug.subscribers() for c in cams if c.debug)
        if parts.meter is not None:
            joules = sorted(j for c in cams for j in c.energy.joules)
            values['energy_source'] = parts.meter.source_name
            values['energy_per_inference_p50_j'] = (f'{joules[len(joules) // 2]:.4f}'
                                                    if joules else 'nan')
            values['energy_missing'] = snap.get('energy_missing', 0)
        st.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        return st


def _rss_mb() -> float:
    """Return this process's resident memory in MB."""
    import psutil
    return psutil.Process().memory_info().rss / 1e6
