# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Lifecycle node: camera topic in, typed model results out.

- configure: read and check parameters, load the registry entry, open the
  model on its backend, create publishers. FAILURE with one log line on a bad
  parameter or a missing/bad model file.
- activate: subscribe to the camera (sensor-data QoS) and start the worker.
- deactivate: unsubscribe and stop the worker: no CPU is spent on inference.
- cleanup: free the model session; shutdown: the same from any state.

The subscription takes serialized messages and only puts the newest one in a
one-frame slot; a worker thread reads the header fields from the CDR bytes,
views the pixels in place (numpy, no copy), runs the model and publishes.
Frames replaced before the worker took them are dropped and counted, so a
slow model never builds a queue. Each run's EnergyRecord follows its
result on ~/energy (nodes/energy_follow.py): the result never waits for it.
"""

from collections import deque
import pathlib
import threading
import time
from typing import Dict, List, Optional, Tuple

from edge_infer_msgs.msg import BackendReport, EnergyRecord
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.lifecycle import LifecycleState, TransitionCallbackReturn
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, qos_profile_sensor_data, QoSProfile,
                       ReliabilityPolicy)
from rclpy.serialization import deserialize_message
from rclpy.subscription import Subscription
from sensor_msgs.msg import CompressedImage, Image

from .base import ManagedNode, shared_log
from .energy_follow import energy_msg, EnergyFollow
from .perception_params import check, PARAMETERS
from .perception_status import PerceptionStatus
from .tasks import instance_decoder, make_task, Task
from .tracks_and_depth import TracksAndDepth
from .. import paths
from ..backends.live.choice import LiveChoice
from ..backends.live.metered import MeteredChoice
from ..backends.manager import shared_manager
from ..backends.measure.memory import release_freed_memory
from ..backends.remote_config import apply_remote
from ..core.backend import BackendError
from ..core.cdr import CdrError, parse_compressed_image, parse_image
from ..core.image import from_compressed, from_raw, ImageError, JPEG_DETECTS_CORRUPTION
from ..core.model import model_file
from ..core.postprocess import OutputError
from ..core.registry import load_models, RegistryError, user_registry_path
from ..core.stream import LatestSlot, StreamStats
from ..executor import shared as shared_executor
from ..executor.choice import executor_choice
from ..telemetry import shared as shared_meter

BACKGROUND_WAIT_S = 1.0     # a transition waits this long for cancelled background work


class ConfigError(ValueError):
    """A parameter has a value the node cannot use."""


class PerceptionNode(PerceptionStatus, ManagedNode):
    """Runs one registry model on one camera stream."""

    PARAMETERS = PARAMETERS

    def __init__(self, node_name: str = 'perception', **kwargs):
        super().__init__(node_name, **kwargs)
        self.stats = StreamStats()
        self._slot = LatestSlot()
        self._task: Optional[Task] = None   # the task's result publishers (nodes/tasks.py)
        self._sub: Optional[Subscription] = None
        self._worker: Optional[threading.Thread] = None
        self._running = False
        self._msg_type = Image
        self._topic = ''
        self._warned: Dict[str, Tuple[float, int]] = {}     # reason -> (last logged, count since)
        self._meter = None
        self._manager = None
        self._live: Optional[LiveChoice] = None     # the run-time choice (backends/live/choice.py)
        self._choice: Optional[MeteredChoice] = None    # what each frame asks for its result
        self._extras: Optional[TracksAndDepth] = None   # track ids, 3D from depth
        self._report_pub = None
        self._executor = None
        self._debug_pub = None
        self._debug_next = 0.0              # time.monotonic() of the next allowed debug image
        self._debug_period = 0.1
        self._joules = deque(maxlen=1000)   # recent energy per inference, for diagnostics
        # ~/energy follows the result (nodes/energy_follow.py)
        self._energy = EnergyFollow(self.stats, self.ros_time, self.context.ok, self._joules)

    @property
    def _model(self):
        """Return the Model the next frame runs on (None when not configured)."""
        return self._live.model if self._live is not None else None

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
        self._slot.clear()
        self._slot.reopen()
        self._running = True
        self._worker = threading.Thread(target=self._work, name=f'{self.get_name()}-infer',
                                        daemon=True)
        self._worker.start()
        assert self._live is not None and self._task is not None    # made by on_configure
        self._live.resume()     # a profile a deactivation stopped goes on
        if self._extras is not None:
            self._extras.activate()
        self._sub = self.create_subscription(
            self._msg_type, self._topic, self._on_frame, qos_profile_sensor_data, raw=True,
            event_callbacks=SubscriptionEventCallbacks(message_lost=self._on_lost))
        # the resolved names: remappings (camera_topic:=...) and the namespace applied
        self.get_logger().info(f'active: {self._sub.topic_name} -> '
                               f"{', '.join(self._task.topic_names())}")

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop taking frames and stop the worker."""
        topic = self._sub.topic_name if self._sub is not None else self._topic
        self._stop()
        snap = self.stats.snapshot()
        self.get_logger().info(f"deactivated: unsubscribed from {topic} ({snap['processed']} "
                               f"processed, {snap['dropped']} dropped, {snap['rejected']} "
                               f'rejected so far)')
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Free the model and the publishers."""
        model = self._model.spec.name if self._model else ''
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

    # ------------------------------------------------------------------- helpers
    def _configure(self) -> None:
        values = {key: self._param(key) for key in PARAMETERS}
        try:
            settings = check(values)    # the same check as a params file's (edge_infer.validate)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        model_name, transport, topic = values['model'], values['transport'], values['image_topic']
        policy, period = values['executor_policy'], values['diagnostics_period']
        registry_path = self._param('registry')
        registry = load_models(registry_path or None)      # + the user's (model add)
        if model_name not in registry:
            where = registry_path or f'{paths.config_dir() / "models.yaml"} or ' \
                f'{user_registry_path()}'
            raise ConfigError(f"model '{model_name}' is not in {where} "
                              f"(known: {', '.join(sorted(registry))})")
        spec = registry[model_name]
        overrides = {}
        if spec.task in ('detection', 'pose') or instance_decoder(spec.decoder):
            for key in ('score_threshold', 'nms_iou'):
                if values[key] >= 0:
                    overrides[key] = values[key]
        elif spec.task == 'classification' and self._param('top_k') > 0:
            overrides['top_k'] = self._param('top_k')
        models_dir = pathlib.Path(self._param('models_dir') or paths.models_dir())
        path = model_file(spec, models_dir, self._param('verify_checksum'))
        # process-wide objects: their lines go under this node while it calls
        # them (self.acting()), under the container otherwise (base.shared_log)
        if self._param('energy_metering'):
            self._meter = shared_meter.acquire(None, log=shared_log)
        self._manager = shared_manager(meter=self._meter, log=shared_log)
        for change in apply_remote(self._manager.config, values):
            self.get_logger().info(f"remote servers: {change} (the process's manager)")
        forced = '' if self._param('backend') in ('', 'auto') else self._param('backend')
        self._report_pub = self.create_publisher(BackendReport, '~/backend_report', QoSProfile(
            depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL))
        log = self.get_logger()
        self._live = LiveChoice(
            self._manager, spec, path, models_dir, overrides=overrides, settings=settings,
            log=log.info, warn=log.warning, report=self._publish_report, scope=self.acting)
        self._choice = MeteredChoice(self._live, self._meter, self._energy.pending)
        if policy:
            self._executor = shared_executor.acquire(policy, log=shared_log)
            with self.acting():
                backend, run = executor_choice(self._manager, spec, path, self._executor,
                                               self.get_fully_qualified_name(), log=log.info)
            self._live.fix(backend, run)
        else:
            try:
                with self.acting():
                    self._live.start(force=forced, use_cache=self._param('use_profile_cache'))
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        self._msg_type = Image if transport == 'raw' else CompressedImage
        if transport == 'compressed' and not JPEG_DETECTS_CORRUPTION:
            self.get_logger().warning('simplejpeg is not installed: JPEG frames are decoded '
                                      'with OpenCV, which cannot tell corrupt data '
                                      '(pip install simplejpeg)')
        self._topic = topic if transport == 'raw' else topic.rstrip('/') + '/compressed'
        try:
            self._task = make_task(self, spec, self._param('result_messages'),
                                   self._param('output_topic'), overrides.get(
                                       'score_threshold',
                                       spec.decoder_args.get('score_threshold', 0.0)))
            self._extras = TracksAndDepth(self, spec, values)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if self._param('debug_image_rate_hz') > 0:
            self._debug_pub = self.create_lifecycle_publisher(Image, '~/debug_image', 1)
            self._debug_period = 1.0 / self._param('debug_image_rate_hz')
        if self._meter is not None:
            self._energy.pub = self.create_lifecycle_publisher(EnergyRecord, '~/energy', 10)
        self._start_diagnostics(period)
        self.get_logger().info(
            f"configured: model '{spec.name}' from {spec.origin} ({spec.task}, "
            f'{spec.input_spec.width}x'
            f'{spec.input_spec.height}) on {self._model.backend_name}, input '
            f'{self.resolve_topic_name(self._topic)} ({transport})')

    def _stop(self) -> None:
        if self._sub is not None:
            self.destroy_subscription(self._sub)
            self._sub = None
        if self._extras is not None:
            self._extras.deactivate()
        self._running = False
        self._slot.close()
        if self._worker is not None:
            self._worker.join(timeout=10.0)
            self._worker = None
        left = self.join_background()
        if left:
            self.get_logger().info(f"not waiting for {', '.join(left)}: inside one "
                                   f'measurement, it ends by itself after it')
        self._energy.drain()    # while ~/energy is still active

    def cancel_background(self) -> None:
        """Stop taking frames and cancel background work, without waiting (no ROS calls)."""
        self._running = False
        self._slot.close()
        if self._live is not None:
            self._live.cancel()

    def join_background(self, timeout: float = BACKGROUND_WAIT_S) -> List[str]:
        """Stop the worker, cancel background work, wait up to ``timeout`` s (no ROS calls).

        Returns the background threads still running: a profile inside one
        candidate's measurement (32 s for ncnn's Vulkan on a software device)
        cannot be interrupted, so a deactivation or stop does not wait for it;
        it ends by itself after that measurement (a new activation lets it go
        on). A thread still inside ONNX Runtime when Python finalizes aborts
        the process, so the container leaves with ``os._exit`` while one runs
        (nodes/stopping.py). The container calls this before shutting rclpy
        down, even when a signal already ended the ROS context.
        """
        self.cancel_background()
        if self._worker is not None:
            self._worker.join(timeout=10.0)
            self._worker = None
        left = self._live.join(timeout=timeout) if self._live is not None else []
        if self._slot.clear():
            self.stats.count('dropped')
        return left

    def _release(self) -> None:
        self._stop_diagnostics()
        if self._task is not None:
            self._task.destroy()
            self._task = None
        if self._extras is not None:
            self._extras.destroy()
            self._extras = None
        # a record may be on its way from the sampler thread
        self._energy.release(self.destroy_lifecycle_publisher)
        if self._debug_pub is not None:
            self.destroy_lifecycle_publisher(self._debug_pub)
            self._debug_pub = None
        if self._meter is not None:
            self._meter = None
            shared_meter.release()
        if self._report_pub is not None:
            self.destroy_publisher(self._report_pub)
            self._report_pub = None
        if self._live is not None:
            self._live.close(timeout=BACKGROUND_WAIT_S)     # cancelled: ends by itself
            self._live = self._choice = None
            release_freed_memory()      # the sessions' heap back to the OS (cleanup's RSS)
        if self._executor is not None:
            self._executor = None
            shared_executor.release()

    # ------------------------------------------------------------- the data path
    def _on_lost(self, event) -> None:
        """Count frames the middleware reports lost before delivery (message-lost event)."""
        n = int(getattr(event, 'total_count_change', 1))
        # Fast DDS 2.14 sends, beside one event per lost frame (change 1), one
        # whose total wrapped to -2**31 and change is 2**31 - 1 (measured: 2 lost
        # 8K frames gave changes 1, 2147483647, 1): that one is no frame
        if 0 < n < 1_000_000:
            self._lost(n)

    def _lost(self, n: int) -> None:
        """Count ``n`` frames lost in transport; the first loss gets one line with the limit."""
        first = self.stats.lost == 0
        self.stats.count('lost', n)
        if first:
            self.get_logger().warning(
                f'{n} frame(s) on {self._sub.topic_name if self._sub else self._topic} lost in '
                f'transport (message-lost event), never received: a frame larger than the '
                f"transport carries (edge_infer's Fast DDS profile: 63.8 MiB, docs/transport.md)"
                f' or a subscriber too slow to take its fragments; counted as lost on '
                f'/diagnostics')

    def _on_frame(self, raw: bytes) -> None:
        self.stats.count('received')
        if self._slot.put((time.perf_counter(), raw)):
            self.stats.count('dropped')

    def _work(self) -> None:
        with self.acting():     # a fallback's manager lines are this node's
            self._serve()

    def _serve(self) -> None:
        while self._running:
            item = self._slot.take(timeout=0.5)
            if item is None:
                continue
            try:
                self._process(*item)
            except (ImageError, OutputError) as exc:
                self._reject(str(exc))
            except Exception as exc:  # keep serving: one line, not a traceback
                if not self.context.ok():
                    return      # Ctrl-C ended the context mid-frame: not a bad frame
                self._reject(f'{type(exc).__name__}: {exc}')

    def _reject(self, reason: str) -> None:
        """Count a bad frame; log it once, then at most every 5 s per reason."""
        self.stats.reject(reason)
        now = time.monotonic()
        last, hidden = self._warned.get(reason, (-1e9, 0))
        if now - last >= 5.0:
            more = f' ({hidden} more like it since the last report)' if hidden else ''
            self.get_logger().warning(f'frame rejected: {reason}{more}')
            self._warned[reason] = (now, 0)
        else:
            self._warned[reason] = (last, hidden + 1)
        if len(self._warned) > 100:     # bounded: forget the oldest reasons
            self._warned.pop(next(iter(self._warned)))

    def _parse(self, raw: bytes):
        """Return (header fields, Frame) from serialized bytes, pixels viewed in place."""
        try:
            if self._msg_type is Image:
                f = parse_image(raw)
                frame = from_raw(f.encoding, f.height, f.width, f.step, f.data, f.is_bigendian)
            else:
                f = parse_compressed_image(raw)     # a JPEG: decoded at the scale it needs
                frame = from_compressed(f.format, f.data, self._model.spec.input_spec)
            return (f.sec, f.nanosec, f.frame_id), frame
        except CdrError:        # an unusual encapsulation: let rclpy deserialize it
            msg = deserialize_message(raw, self._msg_type)
            stamp = (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id)
            if self._msg_type is Image:
                return stamp, from_raw(msg.encoding, msg.height, msg.width, msg.step,
                                       msg.data, msg.is_bigendian)
            return stamp, from_compressed(msg.format, msg.data, self._model.spec.input_spec)

    def _process(self, received: float, raw: bytes) -> None:
        t0 = time.perf_counter()
        (sec, nanosec, frame_id), frame = self._parse(raw)
        t1 = time.perf_counter()
        t_decode = (t1 - t0) * 1e3
        choice, task, meter = self._choice, self._task, self._meter
        assert choice is not None and task is not None  # frames are processed once configured
        # between frames the run-time choice may switch backend or fall back
        result, pending = choice.infer(frame)
        extras = self._extras
        if extras is not None:      # track ids from the frame's stamp
            extras.track(result, sec + nanosec * 1e-9)
        t2 = time.perf_counter()
        out = self._to_msg(frame, result, t_decode)
        session = self._model.session
        devices = getattr(session, 'segment_devices', None)
        if devices:
            out.segment_devices = list(devices)
        out.header.stamp.sec, out.header.stamp.nanosec = sec, nanosec
        out.header.frame_id = frame_id
        t3 = time.perf_counter()
        # The result never waits for its energy. The estimator delivered the
        # record inside end(): it rides on the result. A measured source needs
        # the first power sample after the run (up to one period, 10 ms at
        # 100 Hz): the result goes out with joules NaN, source 'pending', and
        # the record follows on ~/energy, keyed by the same header.
        if pending is not None and pending.event.is_set():
            out.energy = energy_msg(pending.record)
        else:
            out.energy = energy_msg(None)
            if pending is not None:
                out.energy.source = 'pending'
        t4 = time.perf_counter()
        task.publish(out, result)
        if extras is not None:      # 3D after 2D: it never delays the 2D result
            extras.publish(out.header, result, out.image_width, out.image_height)
        t5 = time.perf_counter()
        if pending is not None and meter is not None:   # the energy record: after the result
            self._energy.follows(out, pending, max(0.25, 3.0 / meter.rate_hz))
        self.stats.count('processed')
        self.stats.add_latency((t5 - t0) * 1e3, {
            'queued': (t0 - received) * 1e3, 'parse': (t1 - t0) * 1e3,
            'preprocess': result.preprocess_ms,
            'inference': result.inference_ms, 'postprocess': result.postprocess_ms,
            'run_other': (t2 - t1) * 1e3 - result.preprocess_ms - result.inference_ms
            - result.postprocess_ms,
            'build_msg': (t3 - t2) * 1e3, 'energy': (t4 - t3) * 1e3,
            'publish': (t5 - t4) * 1e3})
        self._debug_image(frame, result, out)      # after the result: never delays it
        choice.after_frame()    # maybe time a runner-up on this frame (bounded duty)

    def diagnostic_status(self):
        """Return this node's status for /diagnostics (records overdue counted first)."""
        self._energy.sweep()
        return super().diagnostic_status()

    def _debug_image(self, frame, result, out) -> None:
        """Publish the frame with the results drawn, if someone listens and the cap allows.

        Nothing is drawn or copied while ~/debug_image has no subscriber.
        """
        pub = self._debug_pub
        if pub is None or pub.get_subscription_count() == 0:
            return
        now = time.monotonic()
        if now < self._debug_next:
            return
        self._debug_next = now + self._debug_period
        from ..core.draw import to_bgr
        img = to_bgr(frame.pixels, frame.color)
        if frame.source_size is not None:   # a scaled JPEG decode: draw at the source's size
            import cv2
            img = cv2.resize(img, frame.source_size, interpolation=cv2.INTER_LINEAR)
        assert self._task is not None
        self._task.draw(img, result, f'{out.model} | {out.backend} | {out.inference_ms:.1f} ms')
        msg = Image(header=out.header, height=img.shape[0], width=img.shape[1],
                    encoding='bgr8', step=img.shape[1] * 3, data=img.tobytes())
        pub.publish(msg)
        self.stats.count('debug_images')

    def _to_msg(self, frame, result, decode_ms: float):
        spec = self._model.spec
        assert self._task is not None
        out = self._task.to_msg(result)     # the task's fields; the shared ones below
        out.model = spec.name
        out.backend = result.backend or self._model.backend_name     # a runner-up may run one
        out.image_width = frame.width
        out.image_height = frame.height
        out.preprocess_ms = decode_ms + result.preprocess_ms
        out.inference_ms = result.inference_ms
        out.postprocess_ms = result.postprocess_ms
        return out
