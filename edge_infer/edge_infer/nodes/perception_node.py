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
slow model never builds a queue.
"""

import threading
import time
from typing import Optional

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from edge_infer_msgs.msg import (Classification, ClassScore, Detection,
                                 DetectionArray)
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.qos import qos_profile_sensor_data
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import CompressedImage, Image

from .. import paths
from ..core.backend import BackendError, OrtCpuBackend
from ..core.cdr import CdrError, parse_compressed_image, parse_image
from ..core.image import from_compressed, from_raw, ImageError
from ..core.model import Model
from ..core.postprocess import OutputError
from ..core.registry import load_registry, RegistryError
from ..core.stream import LatestSlot, StreamStats

TRANSPORTS = ('raw', 'compressed')

# name -> (default, description). Documented with examples in config/*.yaml.
PARAMETERS = {
    'model': ('', 'registry name of the model to run (config/models.yaml)'),
    'image_topic': ('image', 'camera topic (sensor_msgs/Image); compressed adds /compressed'),
    'transport': ('raw', "'raw' (sensor_msgs/Image) or 'compressed' (CompressedImage)"),
    'output_topic': ('', "result topic; '' = ~/detections or ~/classification by task"),
    'registry': ('', "model registry file; '' = the package's config/models.yaml"),
    'models_dir': ('', "directory of model files; '' = $EDGE_INFER_HOME/models"),
    'intra_op_threads': (0, 'inference threads for this model; 0 = library default'),
    'score_threshold': (-1.0, 'detector score threshold; < 0 = registry value'),
    'nms_iou': (-1.0, 'detector NMS IoU threshold; < 0 = registry value'),
    'top_k': (0, 'classifier: classes per result; 0 = registry value'),
    'verify_checksum': (True, "check the model file's sha256 against the registry"),
    'diagnostics_period': (1.0, 'seconds between /diagnostics messages; 0 = off'),
}


class ConfigError(ValueError):
    """A parameter has a value the node cannot use."""


class PerceptionNode(LifecycleNode):
    """Runs one registry model on one camera stream."""

    def __init__(self, node_name: str = 'perception', **kwargs):
        super().__init__(node_name, **kwargs)
        for name, (default, doc) in PARAMETERS.items():
            self.declare_parameter(name, default, ParameterDescriptor(description=doc))
        self.stats = StreamStats()
        self._slot = LatestSlot()
        self._model: Optional[Model] = None
        self._pub = None
        self._diag_pub = None
        self._diag_timer = None
        self._sub = None
        self._worker: Optional[threading.Thread] = None
        self._running = False
        self._msg_type = Image
        self._topic = ''
        self._warned = {}           # reason -> (last logged, count since)
        self._guard_change_state()

    def _guard_change_state(self) -> None:
        """Answer an invalid transition request with success=False instead of crashing.

        rclpy 7's change_state service lets the RCLError of a transition that is
        invalid in the current state (e.g. deactivate while inactive) escape
        into the executor, which would take down every node of the container.
        """
        service = getattr(self, '_service_change_state', None)
        if service is None:
            return
        handler = service.callback

        def guarded(request, response):
            try:
                return handler(request, response)
            except Exception as exc:  # rclpy raises RCLError for invalid transitions
                state = self._state_machine.current_state[1]
                self.get_logger().error(
                    f'transition {request.transition.id} '
                    f"'{request.transition.label}' refused in state '{state}': "
                    + (str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
                response.success = False
                return response
        service.callback = guarded

    # ----------------------------------------------------------------- lifecycle
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Check parameters, open the model, create publishers."""
        try:
            self._configure()
        except (ConfigError, RegistryError, BackendError) as exc:
            self.get_logger().error(f'configure failed: {exc}')
            self._release()
            return TransitionCallbackReturn.FAILURE
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Subscribe to the camera and start the inference worker."""
        self._slot.clear()
        self._slot.reopen()
        self._running = True
        self._worker = threading.Thread(target=self._work, name=f'{self.get_name()}-infer',
                                        daemon=True)
        self._worker.start()
        self._sub = self.create_subscription(self._msg_type, self._topic, self._on_frame,
                                             qos_profile_sensor_data, raw=True)
        self.get_logger().info(f'active: {self._topic} -> {self._pub.topic_name}')
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop taking frames and stop the worker."""
        self._stop()
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Free the model and the publishers."""
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Release everything, whatever the state."""
        self._stop()
        self._release()
        return TransitionCallbackReturn.SUCCESS

    # ------------------------------------------------------------------- helpers
    def _param(self, name: str):
        return self.get_parameter(name).value

    def _configure(self) -> None:
        model_name = self._param('model')
        transport = self._param('transport')
        topic = self._param('image_topic')
        if not model_name:
            raise ConfigError("parameter 'model' is empty: name a model of the registry")
        if transport not in TRANSPORTS:
            raise ConfigError(f"parameter 'transport' is '{transport}': use one of "
                              f"{', '.join(TRANSPORTS)}")
        if not topic:
            raise ConfigError("parameter 'image_topic' is empty")
        threads = self._param('intra_op_threads')
        if threads < 0:
            raise ConfigError(f"parameter 'intra_op_threads' is {threads}: use 0 or more")
        period = self._param('diagnostics_period')
        if period < 0:
            raise ConfigError(f"parameter 'diagnostics_period' is {period}: use 0 or more")
        registry_path = self._param('registry') or str(paths.config_dir() / 'models.yaml')
        registry = load_registry(registry_path)
        if model_name not in registry:
            raise ConfigError(f"model '{model_name}' is not in {registry_path} "
                              f"(known: {', '.join(sorted(registry))})")
        spec = registry[model_name]
        overrides = {}
        if spec.task == 'detection':
            for key in ('score_threshold', 'nms_iou'):
                value = self._param(key)
                if value >= 0:
                    if value > 1 or (key == 'nms_iou' and value == 0):
                        raise ConfigError(f"parameter '{key}' is {value}: use a value in [0, 1]")
                    overrides[key] = value
        elif self._param('top_k') > 0:
            overrides['top_k'] = self._param('top_k')
        models_dir = self._param('models_dir') or str(paths.models_dir())
        self._model = Model(spec, OrtCpuBackend(intra_op_threads=threads), models_dir,
                            verify_checksum=self._param('verify_checksum'), **overrides)
        self._msg_type = Image if transport == 'raw' else CompressedImage
        self._topic = topic if transport == 'raw' else topic.rstrip('/') + '/compressed'
        out = self._param('output_topic') or (
            '~/detections' if spec.task == 'detection' else '~/classification')
        out_type = DetectionArray if spec.task == 'detection' else Classification
        self._pub = self.create_lifecycle_publisher(out_type, out, 10)
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        if period > 0:
            self._diag_timer = self.create_timer(period, self._publish_diagnostics)
        self.get_logger().info(
            f"configured: model '{spec.name}' ({spec.task}, {spec.input_spec.width}x"
            f'{spec.input_spec.height}) on {self._model.backend_name}, input {self._topic} '
            f'({transport})')

    def _stop(self) -> None:
        if self._sub is not None:
            self.destroy_subscription(self._sub)
            self._sub = None
        self._running = False
        self._slot.close()
        if self._worker is not None:
            self._worker.join(timeout=10.0)
            self._worker = None
        if self._slot.clear():
            self.stats.count('dropped')

    def _release(self) -> None:
        if self._diag_timer is not None:
            self.destroy_timer(self._diag_timer)
            self._diag_timer = None
        if self._pub is not None:
            self.destroy_lifecycle_publisher(self._pub)
            self._pub = None
        if self._diag_pub is not None:
            self.destroy_publisher(self._diag_pub)
            self._diag_pub = None
        if self._model is not None:
            self._model.close()
            self._model = None

    # ------------------------------------------------------------- the data path
    def _on_frame(self, raw: bytes) -> None:
        self.stats.count('received')
        if self._slot.put(raw):
            self.stats.count('dropped')

    def _work(self) -> None:
        while self._running:
            raw = self._slot.take(timeout=0.5)
            if raw is None:
                continue
            try:
                self._process(raw)
            except (ImageError, OutputError) as exc:
                self._reject(str(exc))
            except Exception as exc:  # keep serving: one line, not a traceback
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
                f = parse_compressed_image(raw)
                frame = from_compressed(f.format, f.data)
            return (f.sec, f.nanosec, f.frame_id), frame
        except CdrError:        # an unusual encapsulation: let rclpy deserialize it
            msg = deserialize_message(raw, self._msg_type)
            stamp = (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id)
            if self._msg_type is Image:
                return stamp, from_raw(msg.encoding, msg.height, msg.width, msg.step,
                                       msg.data, msg.is_bigendian)
            return stamp, from_compressed(msg.format, msg.data)

    def _process(self, raw: bytes) -> None:
        t0 = time.perf_counter()
        (sec, nanosec, frame_id), frame = self._parse(raw)
        t_decode = (time.perf_counter() - t0) * 1e3
        result = self._model.infer(frame)
        out = self._to_msg(frame, result, t_decode)
        out.header.stamp.sec, out.header.stamp.nanosec = sec, nanosec
        out.header.frame_id = frame_id
        self._pub.publish(out)
        self.stats.count('processed')
        self.stats.add_latency((time.perf_counter() - t0) * 1e3)

    def _to_msg(self, frame, result, decode_ms: float):
        spec = self._model.spec
        if spec.task == 'detection':
            out = DetectionArray()
            det = result.output
            for box, score, cid in zip(det.boxes.tolist(), det.scores.tolist(),
                                       det.class_ids.tolist()):
                x1, y1, x2, y2 = box
                out.detections.append(Detection(
                    class_id=int(cid), label=spec.label(cid), score=float(score),
                    center_x=(x1 + x2) / 2, center_y=(y1 + y2) / 2,
                    size_x=x2 - x1, size_y=y2 - y1))
        else:
            out = Classification()
            cls = result.output
            out.results = [ClassScore(class_id=int(c), label=spec.label(c), score=float(s))
                           for c, s in zip(cls.class_ids.tolist(), cls.scores.tolist())]
        out.model = spec.name
        out.backend = self._model.backend_name
        out.image_width = frame.width
        out.image_height = frame.height
        out.preprocess_ms = decode_ms + result.preprocess_ms
        out.inference_ms = result.inference_ms
        out.postprocess_ms = result.postprocess_ms
        return out

    # ---------------------------------------------------------------- diagnostics
    def diagnostic_status(self) -> DiagnosticStatus:
        """Return this node's status for /diagnostics."""
        snap = self.stats.snapshot()
        p50, p95 = self.stats.percentiles(50, 95)
        st = DiagnosticStatus()
        st.name = f'{self.get_fully_qualified_name()}: perception'
        st.hardware_id = self._model.backend_name if self._model else ''
        st.level = DiagnosticStatus.OK
        st.message = 'ok'
        if not self._running:
            st.level, st.message = DiagnosticStatus.OK, 'inactive'
        elif snap['rejected']:
            st.level = DiagnosticStatus.WARN
            st.message = f"{snap['rejected']} frames rejected; last: {snap['last_error']}"
        values = {'model': self._model.spec.name if self._model else '',
                  'backend': st.hardware_id, 'input_topic': self._topic,
                  'received': snap['received'], 'processed': snap['processed'],
                  'dropped': snap['dropped'], 'rejected': snap['rejected'],
                  'latency_p50_ms': f'{p50:.2f}', 'latency_p95_ms': f'{p95:.2f}',
                  'last_error': snap['last_error']}
        st.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        return st

    def _publish_diagnostics(self) -> None:
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.status = [self.diagnostic_status()]
        self._diag_pub.publish(msg)
