# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The perception node's parameters: name -> (default, description), and their one check.

Free of rclpy: the node declares them from here and calls :func:`check` at
configure; :mod:`edge_infer.validate` calls the same :func:`check` on a
params file before anything starts. Documented with examples in
config/perception.yaml; `ros2 param describe` shows the descriptions.
"""

from dataclasses import dataclass, field
import pathlib
from typing import Any, Dict, List, Mapping, Tuple

from .. import paths
from ..backends.live.batching import MODES
from ..backends.live.rule import LiveSettings
from ..backends.remote_config import check_remote
from ..core.model import model_file
from ..core.registry import load_models, ModelSpec, user_registry_path
from ..core.tracking import ALGORITHMS, DEFAULT as DEFAULT_TRACKER, REID_WINDOW_S
from ..executor.core import POLICIES

TRANSPORTS = ('raw', 'compressed')
RESULT_MESSAGES = ('both', 'standard', 'edge_infer')    # see nodes/tasks.py

PARAMETERS = {
    'model': ('', 'registry name of the model to run (config/models.yaml)'),
    'image_topic': ('image', 'camera topic (sensor_msgs/Image); compressed adds /compressed'),
    'image_topics': ([], 'several cameras, one node: one session serves them; each '
                         "camera's results on ~/<camera>/... (nodes/cameras.py); "
                         '[] = image_topic alone'),
    'camera_names': ([], "the cameras' names in their topics, one per image_topics entry; "
                         '[] = camera0, camera1, ...'),
    'batching': ('auto', "several cameras: 'auto' = frames of several cameras in one run "
                         "where this board's measurement says it pays, 'on' = always, "
                         "'off' = one frame at a time (backends/live/batching.py)"),
    'batch_timeout_ms': (0.0, 'how long a batch waits for the other cameras once its first '
                              'frame is taken; 0 = only the frames already waiting'),
    'transport': ('raw', "'raw' (sensor_msgs/Image) or 'compressed' (CompressedImage)"),
    'output_topic': ('', "edge_infer result topic; '' = by task: ~/detections, "
                         '~/classification, ~/poses or ~/segmentation'),
    'registry': ('', "model registry file; '' = the package's config/models.yaml"),
    'models_dir': ('', "directory of model files; '' = $EDGE_INFER_HOME/models"),
    'backend': ('auto', "'auto' = measured choice (backend manager); or a candidate's name, "
                        "e.g. 'onnxruntime/cpu/t1' (see `edge_infer backends`)"),
    'objective': ('latency', 'what auto minimises: latency | energy | edp (energy x delay)'),
    'max_latency_ms': (0.0, 'auto: only candidates with p50 at or under this; 0 = no limit'),
    'min_accuracy': (0.0, 'auto: agreement floor vs ONNX Runtime CPU fp32 (0..1); '
                          '0 = config/backends.yaml per task'),
    'use_profile_cache': (True, 'reuse measured profiles (keyed by board, model, versions)'),
    'provisional': (True, 'auto, profile not cached whole: serve at once on a provisional '
                          'backend, profile in the background, then switch'),
    'drift_threshold': (1.5, 'observed/profiled median latency ratio that triggers a '
                             're-evaluation; 0 = off'),
    'drift_window_s': (5.0, 'seconds the drift must last (median over the window)'),
    'latency_percentile': (0, 'auto, objective latency: rank by p50, p90 or p99; '
                              '0 = config/backends.yaml'),
    'reselect_duty': (0.05, 'online re-selection: share of compute spent timing the '
                            'runners-up on real frames (0 = off)'),
    'reselect_serve': (True, 'a runner-up within 1.25x of the chosen one runs some frames '
                             'itself (result published, naming it); false: extra runs only'),
    'reselect_idle_s': (30.0, 'online re-selection: runners-up are open for this long after '
                              'a fresh choice, a load change, a drift or a switch, and for a '
                              'look every 120 s; closed otherwise (memory); 0 = always open'),
    'reselect_memory_mb': (64.0, "online re-selection: the process's open runners-up stay "
                                 'within this many MB: the models look in turn (one may always '
                                 'look alone); 0 = no cap'),
    'executor_policy': ('', "run the model's segments on the process-wide shared executor: "
                            "accelerator-only | by-layer-type | cost-model; '' = whole model "
                            'on the chosen backend'),
    'score_threshold': (-1.0, 'detector / pose / instance score threshold; < 0 = registry '
                              'value'),
    'nms_iou': (-1.0, 'detector / pose / instance NMS IoU threshold; < 0 = registry value'),
    'top_k': (0, 'classifier: classes per result; 0 = registry value'),
    'verify_checksum': (True, "check the model file's sha256 against the registry"),
    'diagnostics_period': (1.0, 'seconds between /diagnostics messages; 0 = off'),
    'debug_image_rate_hz': (10.0, '~/debug_image (bgr8, results drawn on the frame) at most '
                                  'this often, only while someone subscribes; 0 = off'),
    'diagnostics_window_s': (10.0, '/diagnostics is WARN while a frame was rejected within '
                                   'this many seconds, then OK again'),
    'drop_rate_warn': (0.25, '/diagnostics is WARN while more than this share of the frames '
                             'received in the last diagnostics_window_s were dropped '
                             '(0..1; 0 = off)'),
    'stale_after_s': (5.0, '/diagnostics is STALE while active and no result was published '
                           'for this many seconds (0 = off)'),
    'result_messages': ('both', 'both | standard (vision_msgs on ~/vision/*) | edge_infer '
                                '(the task topic); keypoints and masks go out either way'),
    'tracker': (DEFAULT_TRACKER, 'detection / pose / instance nodes: track ids on every box '
                                 "(results, ~/vision/detections' id, the debug image): "
                                 + ' | '.join(ALGORITHMS) + "; 'none' = off"),
    'reid_window_s': (REID_WINDOW_S, 'tracking: an id lost this many seconds ago is given back '
                                     'to a new track that looks like it (colours of the '
                                     'clothes, a clear margin over anyone else); 0 = off'),
    'publish_untracked': (False, 'tracking: also publish boxes no track holds (id -1: a new '
                                 'object before its 2nd match, a low-score box); false = only '
                                 'boxes with an id, as Ultralytics track mode'),
    'depth_topic': ('', 'aligned depth image (16UC1 mm or 32FC1 m): 3D per detection on '
                        "~/vision/detections_3d; '' = off"),
    'camera_info_topic': ('', "the depth camera's CameraInfo; '' = camera_info beside "
                              'depth_topic'),
    'depth_topics': ([], "several cameras: each one's aligned depth image, one per "
                         "image_topics entry ('' = none for that camera), its CameraInfo "
                         'beside it; [] = no depth'),
    'depth_tolerance_s': (0.05, 'a result takes the depth frame nearest in stamp within this '
                                'many seconds; none within: counted, no 3D'),
    'remote_servers': ([''], 'Triton servers (grpc://host:port) whose models are candidates '
                             "triton/<host>/<model>, added to config/backends.yaml's; "
                             "[''] = only those (docs/triton.md)"),
    'remote_timeout_ms': (0.0, 'a remote answer later than this fails its frame (the best '
                               "local candidate serves it); 0 = config/backends.yaml's"),
    'remote_retry_s': (30.0, 'a server that failed mid-stream (down, stalled) is a candidate '
                             'again after this many seconds (a local library that raised '
                             'stays out)'),
    'remote_tls_ca': ('', "root certificate (PEM) to check a server's TLS certificate; "
                          "'' = no TLS unless remote_tls_cert is set"),
    'remote_tls_cert': ('', "this robot's client certificate (PEM), for a server that asks "
                            "for one (mutual TLS); '' = none"),
    'remote_tls_key': ('', "the private key (PEM) of remote_tls_cert; '' = none"),
    'remote_token': ('', "sent with every request as gRPC metadata 'authorization: Bearer "
                         "<token>'; '' = none (set it from a file or the environment)"),
    'energy_metering': (True, 'attribute energy to each model run: ~/energy publishes an '
                              "EnergyRecord per frame (the result's header), after the "
                              "result (whose energy says 'pending')"),
}


def check(p: Mapping[str, Any]) -> LiveSettings:
    """Return the run-time choice's settings; ValueError names the first bad parameter.

    ``p``: every parameter of the table, defaults applied. What needs the
    registry (the model's name, a forced backend) is checked where it is read.
    """
    def bad(key: str, use: str) -> ValueError:
        return ValueError(f"parameter '{key}' is {p[key]!r}: use {use}")
    if not p['model']:
        raise ValueError("parameter 'model' is empty: name a model of the registry")
    if not p['image_topic']:
        raise ValueError("parameter 'image_topic' is empty: name the camera topic")
    cameras(p)
    for key, allowed in (('transport', TRANSPORTS), ('result_messages', RESULT_MESSAGES),
                         ('batching', MODES),
                         ('executor_policy', ('',) + tuple(POLICIES))):
        if p[key] not in allowed:
            raise bad(key, 'one of ' + ', '.join(repr(a) for a in allowed))
    settings = LiveSettings(
        objective=p['objective'], max_latency_ms=p['max_latency_ms'],
        min_accuracy=p['min_accuracy'], latency_percentile=p['latency_percentile'],
        drift_threshold=p['drift_threshold'], drift_window_s=p['drift_window_s'],
        duty=p['reselect_duty'], serve=p['reselect_serve'], runners_idle_s=p['reselect_idle_s'],
        runners_memory_mb=p['reselect_memory_mb'], provisional=p['provisional'],
        remote_retry_s=p['remote_retry_s'])
    settings.check({'duty': 'reselect_duty', 'runners_idle_s': 'reselect_idle_s',
                    'runners_memory_mb': 'reselect_memory_mb'})
    for key in ('diagnostics_period', 'debug_image_rate_hz', 'top_k', 'batch_timeout_ms'):
        if p[key] < 0:
            raise bad(key, '0 (off or the default) or more')
    if p['diagnostics_window_s'] <= 0:
        raise bad('diagnostics_window_s', 'a positive number of seconds')
    for key in ('score_threshold', 'nms_iou'):
        if p[key] > 1 or (key == 'nms_iou' and p[key] == 0):
            raise bad(key, "a value in [0, 1] (< 0: the registry's)")
    if not 0 <= p['drop_rate_warn'] <= 1:
        raise bad('drop_rate_warn', 'a share in [0, 1] (0 = off)')
    if p['stale_after_s'] < 0:
        raise bad('stale_after_s', '0 (off) or more seconds')
    if p['tracker'] not in ('none',) + ALGORITHMS:
        raise bad('tracker', 'one of ' + ', '.join(repr(t) for t in ('none',) + ALGORITHMS))
    if p['reid_window_s'] < 0:
        raise bad('reid_window_s', '0 (off) or more seconds')
    if not p['depth_tolerance_s'] > 0:
        raise bad('depth_tolerance_s', 'a positive number of seconds')
    check_remote(p)
    return settings


def cameras(p: Mapping[str, Any]) -> List[Tuple[str, str]]:
    """Return each camera's (name, topic): ('', image_topic) for the node's one camera.

    Two or more ``image_topics``: named by ``camera_names`` (default camera0,
    camera1, ...). ValueError names the parameter that cannot be served.
    """
    topics, names = list(p['image_topics'] or []), list(p['camera_names'] or [])
    if any(not t for t in topics) or len(set(topics)) != len(topics):
        raise ValueError(f"parameter 'image_topics' must hold distinct, non-empty topics: "
                         f'{topics}')
    if len(topics) <= 1:
        if names or p['depth_topics']:
            key = 'camera_names' if names else 'depth_topics'
            raise ValueError(f"parameter '{key}' is for the cameras of image_topics: "
                             f'give two topics or more, or leave it empty')
        return [('', topics[0] if topics else p['image_topic'])]
    if not names:
        names = [f'camera{i}' for i in range(len(topics))]
    elif len(names) != len(topics):
        raise ValueError(f"parameter 'camera_names' has {len(names)} name(s) for "
                         f'{len(topics)} image_topics: give one per camera, or none')
    if len(set(names)) != len(names) or not all(map(_topic_token, names)):
        raise ValueError("parameter 'camera_names' must hold distinct names of letters, "
                         f"digits and '_', each starting with a letter: {names}")
    for key, instead in (('output_topic', ''), ('depth_topic', ': give depth_topics, one per '
                                                               'camera'),
                         ('camera_info_topic', ": each depth camera's is read beside its "
                                               'depth_topics entry')):
        if p[key]:
            raise ValueError(f"parameter '{key}' names one camera's topic: with several "
                             f"image_topics each camera's results go on ~/<camera>/...{instead}")
    depths = list(p['depth_topics'] or [])
    if depths and len(depths) != len(topics):
        raise ValueError(f"parameter 'depth_topics' has {len(depths)} topic(s) for "
                         f"{len(topics)} image_topics: give one per camera ('' = none)")
    return list(zip(names, topics))


def depth_topics(p: Mapping[str, Any]) -> List[str]:
    """Return each camera's depth topic ('' : none), in :func:`cameras`' order."""
    n = len(cameras(p))
    if n == 1:
        return [p['depth_topic']]
    return list(p['depth_topics'] or [''] * n)


def _topic_token(name: str) -> bool:
    """Return True if ``name`` is one token of a ROS topic name (rclpy's own rules)."""
    from rclpy.exceptions import NameValidationException
    from rclpy.validate_topic_name import validate_topic_name
    if not name or '/' in name or '~' in name:
        return False
    try:
        validate_topic_name(f'~/{name}')
    except NameValidationException:
        return False
    return True


def instance_decoder(decoder: str) -> bool:
    """Return True for segmentation decoders whose result is instances (InstanceMasks)."""
    return decoder == 'yolov8_seg'


class ConfigError(ValueError):
    """A parameter has a value the node cannot use."""


@dataclass
class ModelChoice:
    """The model a node's parameters name: its entry, file and decoder overrides."""

    spec: ModelSpec
    path: pathlib.Path          # the model file (checked against its checksum if asked)
    models_dir: pathlib.Path
    overrides: Dict[str, Any] = field(default_factory=dict)    # score_threshold, nms_iou, top_k


def model_of(p: Mapping[str, Any]) -> ModelChoice:
    """Return the model the parameters ``p`` name (ConfigError: not in the registry).

    The decoder's parameters that are set (>= 0, or top_k > 0) override the
    registry's for the task that has them.
    """
    registry = load_models(p['registry'] or None)      # + the user's (model add)
    if p['model'] not in registry:
        where = p['registry'] or f'{paths.config_dir() / "models.yaml"} or ' \
            f'{user_registry_path()}'
        raise ConfigError(f"model '{p['model']}' is not in {where} "
                          f"(known: {', '.join(sorted(registry))})")
    spec = registry[p['model']]
    overrides = {}
    if spec.task in ('detection', 'pose') or instance_decoder(spec.decoder):
        overrides = {k: p[k] for k in ('score_threshold', 'nms_iou') if p[k] >= 0}
    elif spec.task == 'classification' and p['top_k'] > 0:
        overrides['top_k'] = p['top_k']
    models_dir = pathlib.Path(p['models_dir'] or paths.models_dir())
    return ModelChoice(spec, model_file(spec, models_dir, p['verify_checksum']), models_dir,
                       overrides)
