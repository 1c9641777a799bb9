# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Lifecycle node: camera topic in, typed model results out.

- configure: check parameters, open the model on its backend, create
  publishers; FAILURE with one line on a bad parameter or model file.
- activate: start the frame thread, subscribe (sensor-data QoS); deactivate:
  unsubscribe and stop it: no CPU is spent on inference.
- cleanup: free the model session; shutdown: the same from any state.

It translates; its parts work: its cameras (:mod:`.cameras`), the one
frame thread serving them (:mod:`.camera_input`; :mod:`.batch_frames`),
the run-time choice (:mod:`edge_infer.backends.live.choice`), the messages
(:mod:`.tasks`), tracks and depth (:mod:`.tracks_and_depth`), ~/energy
(:mod:`.energy_follow`), ~/debug_image and the status (:mod:`.perception_status`).
"""

import time
from typing import List, Optional

from edge_infer_msgs.msg import BackendReport
from rclpy.lifecycle import LifecycleState, TransitionCallbackReturn
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from .base import ManagedNode, SharedLog
from .batch_frames import process_batch
from .camera_input import CameraInput, FrameThread
from .cameras import make_cameras
from .energy_follow import EnergyFollow
from .perception_params import check, ConfigError, model_of, PARAMETERS
from .perception_parts import Parts
from .perception_status import PerceptionStatus
from ..backends.live.choice import LiveChoice
from ..backends.manager import shared_manager
from ..backends.remote_config import apply_remote
from ..backends.runtime import Runtime
from ..core.backend import BackendError
from ..core.registry import RegistryError
from ..core.stream import StreamStats
from ..executor.choice import executor_choice

BACKGROUND_WAIT_S = 1.0     # a transition waits this long for cancelled background work


class PerceptionNode(ManagedNode):
    """Runs one registry model on one camera stream, or on several with one session."""

    PARAMETERS = PARAMETERS

    def __init__(self, node_name: str = 'perception', runtime: Optional[Runtime] = None,
                 **kwargs):
        super().__init__(node_name, **kwargs)
        self.runtime = runtime or Runtime(SharedLog())   # what the process's models share
        self.stats = StreamStats()          # its cameras' totals (one camera: its own)
        self.parts = Parts()                # what configure made (cleanup releases it)
        # the frame thread calls self._process (looked up per frame: tests replace it)
        self.frames = FrameThread(self, lambda cam, t, raw: self._process(t, raw, cam.index),
                                  lambda taken: process_batch(self, taken))
        self.camera = CameraInput(self, self.stats, self.frames.slots)    # the first camera
        self.frames.set_cameras([self.camera])
        self.energy = EnergyFollow(self.stats, self.ros_time, self.context.ok)   # its ~/energy
        self.status = PerceptionStatus(self, self.stats, self.frames, self.parts)

    # ----------------------------------------------------------------- lifecycle
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Check parameters, open the model, create publishers."""
        return self._transition('configure', self._configure, self._release,
                                known=(ConfigError, RegistryError, BackendError))

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Subscribe to the camera and start the inference worker."""
        done = self._transition('activate', self._activate, self._stop)
        return super().on_activate(state) if done == TransitionCallbackReturn.SUCCESS else done

    def _activate(self) -> None:
        parts = self.parts
        assert parts.live is not None and parts.cameras     # made by on_configure
        self.frames.start()
        parts.live.resume()     # a profile a deactivation stopped goes on
        for cam in parts.cameras:   # its tracker ready before its first frame
            if cam.tracks_and_depth is not None:
                cam.tracks_and_depth.activate()
            cam.feed.subscribe()
            assert cam.task is not None     # the names resolved: remappings, the namespace
            self.get_logger().info(f'active: {cam.feed.topic_name} -> '
                                   f"{', '.join(cam.task.topic_names())}")

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop taking frames and stop the worker."""
        topic = ', '.join(c.feed.topic_name for c in self.parts.cameras)
        self._stop()
        self.get_logger().info('deactivated: unsubscribed from {} ({processed} processed, '
                               '{dropped} dropped, {rejected} rejected so far)'.format(
                                   topic, **self.stats.snapshot()))
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Free the model and the publishers."""
        model = self.parts.live.spec.name if self.parts.live else ''
        self._release()
        self.get_logger().info(f"cleaned up: model '{model}' and publishers released")
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Release everything, whatever the state."""
        self.release_everything()
        self.get_logger().info(f"shut down from '{state.label}': everything released")
        return TransitionCallbackReturn.SUCCESS

    def release_everything(self) -> None:
        """Stop the worker; close the sessions; release meter and publishers (no transition)."""
        self._stop()
        self._release()

    def diagnostic_status(self):
        """Return this node's status for /diagnostics (records overdue counted first)."""
        for cam in self.parts.cameras:
            cam.energy.sweep()
        return self.status.diagnostic_status()

    # ------------------------------------------------------------------- helpers
    def _configure(self) -> None:
        values = {key: self._param(key) for key in PARAMETERS}
        try:
            settings = check(values)    # the same check as a params file's (edge_infer.validate)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        chosen = model_of(values)
        spec, path, parts, log = chosen.spec, chosen.path, self.parts, self.get_logger()
        # the process's objects log under this node while it calls them (self.acting())
        shared = self.runtime.log
        if values['energy_metering']:
            parts.meter = self.runtime.meter.acquire(None, log=shared)
        parts.manager = manager = shared_manager(self.runtime, None, parts.meter, shared)
        for change in apply_remote(manager.config, values):
            log.info(f"remote servers: {change} (the process's manager)")
        parts.report_pub = self.create_publisher(BackendReport, '~/backend_report', QoSProfile(
            depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL))
        parts.live = live = LiveChoice(
            manager, spec, path, chosen.models_dir, overrides=chosen.overrides,
            settings=settings, log=log.info, warn=log.warning, report=self.status.report,
            scope=self.acting)
        if values['executor_policy']:
            parts.executor = self.runtime.executor.acquire(values['executor_policy'], shared)
            with self.acting():
                backend, run = executor_choice(manager, spec, path, parts.executor,
                                               self.get_fully_qualified_name(), log=log.info)
            live.fix(backend, run)
        else:
            forced = '' if values['backend'] in ('', 'auto') else values['backend']
            try:
                with self.acting():
                    live.start(force=forced, use_cache=values['use_profile_cache'])
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        try:    # each camera's outputs; several: their frames in batches where it pays
            make_cameras(self, values, chosen.overrides, parts)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        self._start_diagnostics(values['diagnostics_period'])
        inputs = ', '.join(self.resolve_topic_name(c.feed.topic) for c in parts.cameras)
        log.info(f"configured: model '{spec.name}' from {spec.origin} ({spec.task}, "
                 f'{spec.input_spec.width}x{spec.input_spec.height}) on {live.backend_name}, '
                 f"input {inputs} ({values['transport']})")

    def _stop(self) -> None:
        for cam in self.parts.cameras:
            cam.feed.unsubscribe()
            if cam.tracks_and_depth is not None:
                cam.tracks_and_depth.deactivate()
        left = self.join_background()
        if left:
            self.get_logger().info(f"not waiting for {', '.join(left)}: each ends by "
                                   f'itself after the frame or measurement it is inside')
        for cam in self.parts.cameras:
            cam.energy.drain()      # while ~/energy is still active

    def cancel_background(self) -> None:
        """Stop taking frames and cancel background work, without waiting (no ROS calls)."""
        self.frames.cancel()
        if self.parts.live is not None:
            self.parts.live.cancel()

    def join_background(self, timeout: float = BACKGROUND_WAIT_S) -> List[str]:
        """Stop the worker, cancel background work, wait up to ``timeout`` s (no ROS calls).

        Returns the threads still running, each ending after the measurement
        (backends/live/background.py) or frame it is inside. The container calls
        this before shutting rclpy down, even when a signal ended the ROS context.
        """
        self.cancel_background()
        left = self.frames.join()
        live = self.parts.live
        return left + (live.join(timeout=timeout) if live is not None else [])

    def _release(self) -> None:
        self._stop_diagnostics()
        self.parts.release(self, BACKGROUND_WAIT_S)     # a record may be on its way still
        self.camera.stats = self.energy.stats = self.stats      # one camera again
        self.frames.set_cameras([self.camera])
        self.frames.batch_wait_s = None

    # ------------------------------------------------------------- the data path
    def _process(self, received: float, raw: bytes, camera: int = 0) -> None:
        """One frame: message -> frame -> the served model -> result -> parts -> publish."""
        t0 = time.perf_counter()
        cam = self.parts.cameras[camera]
        stamp, frame = cam.feed.parse(raw)
        self._serve(cam, stamp, frame, (received, t0, time.perf_counter()))

    def _serve(self, cam, stamp, frame, t, result=None, pending=None) -> None:
        """Run ``frame`` (unless a batch gave its ``result``), then its outputs go out."""
        live = self.parts.live
        marks, task, tracks = cam.energy.marks, cam.task, cam.tracks_and_depth
        assert live is not None and task is not None  # frames are processed once configured
        if result is None:
            result = live.infer(frame, around_run=marks)    # falls back if the backend raises
            pending = marks.take() if marks is not None else None
        if tracks is not None:      # track ids from the frame's stamp
            tracks.track(result, stamp[0] + stamp[1] * 1e-9, frame)
        t2 = time.perf_counter()
        out = task.result_msg(frame, result, (t[2] - t[1]) * 1e3,
                              result.backend or live.backend_name)
        out.header.stamp.sec, out.header.stamp.nanosec, out.header.frame_id = stamp
        t3 = time.perf_counter()
        out.energy = cam.energy.on_result(pending)    # never waits (energy_follow.py)
        t4 = time.perf_counter()
        task.publish(out, result)
        if tracks is not None:      # 3D after 2D: it never delays the 2D result
            tracks.publish(out.header, result, out.image_width, out.image_height)
        self._after_result(cam, frame, result, out, pending, (*t, t2, t3, t4,
                                                              time.perf_counter()))

    def _after_result(self, cam, frame, result, out, pending, t) -> None:
        """After the result is out: its energy record, figures, debug image; the choice decides."""
        parts = self.parts
        if pending is not None and parts.meter is not None:     # ~/energy follows the result
            cam.energy.follows(out, pending, max(0.25, 3.0 / parts.meter.rate_hz))
        received, t0, t1, t2, t3, t4, t5 = t
        pre, inf, post = result.preprocess_ms, result.inference_ms, result.postprocess_ms
        cam.stats.count('processed')
        cam.stats.add_latency((t5 - t0) * 1e3, {
            'queued': (t0 - received) * 1e3, 'parse': (t1 - t0) * 1e3, 'preprocess': pre,
            'inference': inf, 'postprocess': post, 'run_other': (t2 - t1) * 1e3 - pre - inf - post,
            'build_msg': (t3 - t2) * 1e3, 'energy': (t4 - t3) * 1e3, 'publish': (t5 - t4) * 1e3})
        if cam.debug is not None:     # never delays the result
            cam.debug.publish(frame, result, out, cam.task)
        if parts.live is not None:      # load, drift, a switch; a runner-up timed (bounded duty)
            parts.live.after_frame()
