# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The model registry (config/models.yaml): what each model is and how to feed it.

One entry per model: file, task (detection, classification, pose,
segmentation), input (size, layout, colour order, resize, normalisation),
output decoding, labels, and where the weights came from. Pose entries also
resolve their keypoint names and skeleton (:attr:`ModelSpec.keypoint_names`,
:attr:`ModelSpec.skeleton`).
:func:`load_registry` validates everything up front so that a node's
configure step fails with one clear message instead of a traceback mid-stream.
"""

from dataclasses import dataclass, field
import pathlib
from typing import Dict, List, Optional, Tuple

import yaml

from .centernet_ssd import CenterNetDecoder, SsdDecoder
from .detector_layouts import BoxScoreDecoder, DetrDecoder, EndToEndDecoder, YoloxDecoder
from .obb import YoloObbDecoder
from .pose import keypoint_set, MoveNetDecoder, YoloPoseDecoder
from .postprocess import NanoDetDecoder, TopKDecoder
from .preprocess import InputSpec
from .reference_preprocess import AuthorsPreprocess, check as check_preprocess
from .segmentation import SemanticDecoder, YoloSegDecoder

# libyaml's parser where PyYAML has it: the registry is read at each node's
# configure, 10 ms a read in pure Python on a 2-core EPYC, 1 ms in C
YAML_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)

TASKS = ('detection', 'classification', 'pose', 'segmentation')
DECODERS = {'nanodet': 'detection', 'yolov8': 'detection', 'yolov5': 'detection',
            'end2end': 'detection', 'yolox': 'detection', 'rtdetr': 'detection',
            'centernet': 'detection', 'ssd': 'detection',
            'topk': 'classification',
            'yolov8_pose': 'pose', 'movenet': 'pose',
            'semantic': 'segmentation', 'yolov8_seg': 'segmentation',
            'yolov8_obb': 'detection'}

# The output keys the newer decoders take (named as their constructors' arguments,
# except the keypoint set's, which the spec resolves); any other key is refused.
KEYPOINT_KEYS = ('keypoints', 'skeleton', 'kpt_shape')
DECODER_ARGS = {
    'yolov8_pose': ('score_threshold', 'nms_iou', 'max_detections', 'keypoint_threshold')
    + KEYPOINT_KEYS,
    'movenet': ('score_threshold', 'nms_iou', 'max_detections', 'keypoint_threshold',
                'keypoints', 'skeleton'),
    'semantic': ('threshold', 'activation'),
    'yolov8_seg': ('score_threshold', 'nms_iou', 'max_detections', 'agnostic',
                   'mask_threshold'),
    'centernet': ('score_threshold', 'max_detections', 'box_encoding', 'box_units',
                  'cell_offset', 'activation', 'nms_iou', 'agnostic'),
    'ssd': ('score_threshold', 'nms_iou', 'max_detections', 'agnostic', 'box_format',
            'normalized', 'background_class', 'activation'),
    'yolov8_obb': ('score_threshold', 'nms_iou', 'max_detections'),
}


class RegistryError(ValueError):
    """The registry file or one of its entries is invalid; the message says where."""


class Labels(dict):
    """Class id -> label, read per detection; an id out of range reads as its number."""

    def __missing__(self, class_id) -> str:
        return str(class_id)


@dataclass
class ModelSpec:
    """One validated registry entry."""

    name: str
    file: str
    task: str
    input_spec: InputSpec
    decoder: str
    decoder_args: Dict
    labels: List[str]
    sha256: Optional[str] = None
    source: Dict = field(default_factory=dict)
    origin: str = ''        # the registry file the entry came from
    calibration: str = ''   # int8 calibration frames: a folder or bag ('' = bundled video)
    keypoint_names: List[str] = field(default_factory=list)        # pose: K names
    skeleton: List[Tuple[int, int]] = field(default_factory=list)  # pose: index pairs
    preprocess: AuthorsPreprocess = field(default_factory=AuthorsPreprocess)  # the authors'

    def label(self, class_id: int) -> str:
        """Return the label of ``class_id`` (or its number when out of range)."""
        if 0 <= class_id < len(self.labels):
            return self.labels[class_id]
        return str(class_id)

    def label_map(self) -> 'Labels':
        """Return class id -> label, for a frame's many lookups (:meth:`label`'s rule)."""
        return Labels(enumerate(self.labels))

    def make_decoder(self, **overrides):
        """Build the output decoder; ``overrides`` replace registry values (e.g. thresholds)."""
        args = dict(self.decoder_args)
        args.update({k: v for k, v in overrides.items() if v is not None})
        try:
            if self.decoder in DECODER_ARGS:
                return self._make_newer(args)
            if self.decoder == 'nanodet':
                return NanoDetDecoder(self.input_spec.width, self.input_spec.height,
                                      strides=args['strides'], bins=args['bins'],
                                      num_classes=len(self.labels),
                                      score_threshold=args['score_threshold'],
                                      nms_iou=args['nms_iou'],
                                      max_detections=args.get('max_detections', 100))
            if self.decoder in ('yolov8', 'yolov5'):
                return BoxScoreDecoder(len(self.labels), args['score_threshold'],
                                       args['nms_iou'], args.get('max_detections', 100),
                                       agnostic=bool(args.get('agnostic', False)),
                                       objectness=self.decoder == 'yolov5')
            w, h = self.input_spec.width, self.input_spec.height
            if self.decoder == 'yolox':
                return YoloxDecoder(w, h, len(self.labels), args['score_threshold'],
                                    args['nms_iou'], args.get('max_detections', 100),
                                    strides=args.get('strides', (8, 16, 32)),
                                    agnostic=bool(args.get('agnostic', False)))
            if self.decoder == 'rtdetr':
                return DetrDecoder(w, h, len(self.labels), args['score_threshold'],
                                   args.get('max_detections', 300))
            if self.decoder == 'end2end':
                return EndToEndDecoder(len(self.labels), args['score_threshold'],
                                       args.get('max_detections', 100),
                                       nms_iou=args.get('nms_iou', 1.0),
                                       agnostic=bool(args.get('agnostic', False)),
                                       input_w=w, input_h=h,
                                       class_offset=int(args.get('class_offset', 1)))
            return TopKDecoder(k=args.get('top_k', 5), softmax=args.get('softmax', True))
        except KeyError as exc:
            raise RegistryError(f"model '{self.name}': output needs key {exc}") from None

    def _make_newer(self, args: Dict):
        """Build a pose, segmentation, CenterNet, SSD or OBB decoder (defaults in its class)."""
        kw = {k: args[k] for k in DECODER_ARGS[self.decoder]
              if k in args and k not in KEYPOINT_KEYS}
        w, h, n = self.input_spec.width, self.input_spec.height, len(self.labels)
        if self.decoder in ('yolov8_pose', 'movenet'):
            k = len(self.keypoint_names or keypoint_set(
                args.get('keypoints'), args.get('skeleton'), args.get('kpt_shape'))[0])
            if self.decoder == 'movenet':
                return MoveNetDecoder(w, h, k, **kw)
            dims = int(args['kpt_shape'][1]) if args.get('kpt_shape') else 3
            return YoloPoseDecoder(k, keypoint_dims=dims, **kw)
        if self.decoder == 'semantic':
            return SemanticDecoder(n, w, h, **kw)
        if self.decoder == 'yolov8_seg':
            return YoloSegDecoder(n, w, h, **kw)
        if self.decoder == 'centernet':
            return CenterNetDecoder(w, h, n, **kw)
        if self.decoder == 'yolov8_obb':
            return YoloObbDecoder(n, **kw)
        return SsdDecoder(w, h, n, **kw)


def _need(entry: dict, key: str, where: str):
    if key not in entry:
        raise RegistryError(f"{where}: missing key '{key}'")
    return entry[key]


def _calibration(value, base: pathlib.Path, where: str) -> str:
    """Return the ``calibration`` source as an absolute path ('' when not given).

    A relative path is relative to the registry file; whether it holds usable
    images is checked when an int8 variant is made (and said there).
    """
    if value in (None, ''):
        return ''
    if not isinstance(value, str):
        raise RegistryError(f'{where}: calibration must be a path (a folder of images or a '
                            f'rosbag2 folder), not {value!r}')
    return str((base / pathlib.Path(value).expanduser()).resolve())


# Decoders of Ultralytics' export layouts: their models are fed with its LetterBox.
ULTRALYTICS_DECODERS = ('yolov8', 'yolov8_pose', 'yolov8_seg', 'yolov8_obb')
ULTRALYTICS_SOURCE = ('Ultralytics ultralytics/data/augment.py LetterBox: cv2.resize '
                      'INTER_LINEAR, centred, border 114')
PREPROCESS_KEYS = ('pipeline', 'resize', 'interpolation', 'antialias', 'crop', 'resize_size',
                   'scale_by', 'pad_value', 'color', 'source')


def default_preprocess(spec: InputSpec, decoder: str) -> AuthorsPreprocess:
    """Return the reference preprocessing of an entry without a ``preprocess`` block, said so.

    An Ultralytics layout gets Ultralytics' LetterBox (INTER_LINEAR, pad
    114); any other model cv2.resize's default (INTER_LINEAR, no antialias)
    with its input block's resize, pad and colour order.
    """
    if decoder in ULTRALYTICS_DECODERS and spec.resize == 'letterbox':
        return AuthorsPreprocess('cv2_resize', 'letterbox', 'linear', pad_value=114,
                                 color=spec.color, source=ULTRALYTICS_SOURCE,
                                 default=f'Ultralytics LetterBox (decoder {decoder})')
    return AuthorsPreprocess('cv2_resize', spec.resize, 'linear', pad_value=spec.pad_value,
                             color=spec.color, source='cv2.resize default (INTER_LINEAR)',
                             default='cv2.resize INTER_LINEAR with the resize and pad of '
                                     'the input block (no preprocess block)')


def _preprocess(value, spec: InputSpec, decoder: str, where: str) -> AuthorsPreprocess:
    """Return the entry's ``preprocess`` block validated, or the stated default."""
    if value is None:
        return default_preprocess(spec, decoder)
    if not isinstance(value, dict):
        raise RegistryError(f'{where}: preprocess must be a mapping')
    unknown = sorted(set(value) - set(PREPROCESS_KEYS))
    if unknown:
        raise RegistryError(f"{where}: preprocess takes no {', '.join(unknown)} "
                            f"(its keys: {', '.join(PREPROCESS_KEYS)})")
    if not str(value.get('source', '')).strip():
        raise RegistryError(f'{where}: preprocess needs a source (file and line, or paper)')
    try:
        pre = AuthorsPreprocess(
            pipeline=str(value.get('pipeline', 'cv2_resize')),
            resize=str(value.get('resize', spec.resize)),
            interpolation=str(value.get('interpolation', 'linear')),
            antialias=bool(value.get('antialias', False)), crop=str(value.get('crop', 'none')),
            resize_size=int(value.get('resize_size', 0)),
            scale_by=str(value.get('scale_by', 'size')),
            pad_value=int(value.get('pad_value', spec.pad_value)),
            color=str(value.get('color', spec.color)).lower(),
            source=' '.join(str(value['source']).split()))
        check_preprocess(pre, spec)
    except (TypeError, ValueError) as exc:
        raise RegistryError(f'{where}: preprocess: {exc}') from None
    return pre


def _parse(name: str, entry: dict, base: pathlib.Path) -> ModelSpec:
    where = f"model '{name}'"
    if not isinstance(entry, dict):
        raise RegistryError(f'{where}: entry must be a mapping')
    task = _need(entry, 'task', where)
    if task not in TASKS:
        raise RegistryError(f"{where}: task '{task}' unknown (one of {', '.join(TASKS)})")
    inp = _need(entry, 'input', where)
    norm = inp.get('normalize', {})
    try:
        spec = InputSpec(width=int(_need(inp, 'width', where + ' input')),
                         height=int(_need(inp, 'height', where + ' input')),
                         color=str(inp.get('color', 'rgb')).lower(),
                         layout=str(inp.get('layout', 'NCHW')).upper(),
                         resize=str(inp.get('resize', 'letterbox')),
                         crop_fraction=float(inp.get('crop_fraction', 0.875)),
                         pad_value=int(inp.get('pad_value', 0)),
                         interpolation=str(inp.get('interpolation', 'area')),
                         jpeg_dct_scaling=bool(inp.get('jpeg_dct_scaling', False)),
                         mean=tuple(float(v) for v in norm.get('mean', (0, 0, 0))),
                         std=tuple(float(v) for v in norm.get('std', (1, 1, 1))))
    except (TypeError, ValueError) as exc:
        raise RegistryError(f'{where}: bad input value: {exc}') from None
    if spec.width <= 0 or spec.height <= 0:
        raise RegistryError(f'{where}: input size must be positive')
    out = dict(_need(entry, 'output', where))
    decoder = out.pop('decoder', None)
    if decoder not in DECODERS:
        raise RegistryError(f"{where}: output decoder '{decoder}' unknown "
                            f"(one of {', '.join(DECODERS)})")
    if DECODERS[decoder] != task:
        raise RegistryError(f"{where}: decoder '{decoder}' does not fit task '{task}'")
    labels_file = _need(entry, 'labels', where)
    labels_path = (base / labels_file)
    if not labels_path.is_file():
        raise RegistryError(f'{where}: labels file {labels_path} not found')
    labels = [ln.strip() for ln in labels_path.read_text().splitlines() if ln.strip()]
    model = ModelSpec(name=name, file=str(_need(entry, 'file', where)), task=task,
                      input_spec=spec, decoder=decoder, decoder_args=out, labels=labels,
                      sha256=entry.get('sha256'), source=dict(entry.get('source', {})),
                      calibration=_calibration(entry.get('calibration', ''), base, where),
                      preprocess=_preprocess(entry.get('preprocess'), spec, decoder, where))
    unknown = sorted(set(out) - set(DECODER_ARGS.get(decoder, out)))
    if unknown:
        raise RegistryError(f"{where}: decoder '{decoder}' takes no {', '.join(unknown)} "
                            f"(its keys: {', '.join(DECODER_ARGS[decoder])})")
    try:
        if task == 'pose':
            model.keypoint_names, model.skeleton = keypoint_set(
                out.get('keypoints'), out.get('skeleton'), out.get('kpt_shape'))
        from .preprocess import Preprocessor
        Preprocessor(spec)      # validates colour/layout/resize/normalisation
        model.make_decoder()    # validates decoder arguments
    except (TypeError, ValueError) as exc:
        raise RegistryError(f'{where}: {exc}') from None
    return model


def load_registry(path) -> Dict[str, ModelSpec]:
    """Read and validate a registry file; labels paths are relative to it."""
    path = pathlib.Path(path)
    specs = _load_one(path)
    for spec in specs.values():
        spec.origin = str(path)
    return specs


def user_registry_path() -> pathlib.Path:
    """Return the user's registry, ``$EDGE_INFER_HOME/models.yaml`` (``edge_infer model add``)."""
    from .. import paths
    return paths.data_home() / 'models.yaml'


def load_models(path=None, user_path=None) -> Dict[str, ModelSpec]:
    """Return the package's registry (or ``path``) with the user's entries over it.

    The user's registry (default :func:`user_registry_path`, read when it
    exists) wins on the same key; each entry's ``origin`` names its file.
    """
    from .. import paths
    specs = load_registry(path or paths.config_dir() / 'models.yaml')
    user = pathlib.Path(user_path) if user_path else user_registry_path()
    if user.is_file():
        specs.update(load_registry(user))
    return specs


def _load_one(path: pathlib.Path) -> Dict[str, ModelSpec]:
    try:
        doc = yaml.load(path.read_text(), Loader=YAML_LOADER)
    except OSError as exc:
        raise RegistryError(f'cannot read model registry {path}: {exc}') from None
    except yaml.YAMLError as exc:
        raise RegistryError(f'model registry {path} is not valid YAML: {exc}') from None
    if not isinstance(doc, dict) or not isinstance(doc.get('models'), dict):
        raise RegistryError(f"model registry {path}: top level needs a 'models' mapping")
    return {name: _parse(name, entry, path.parent) for name, entry in doc['models'].items()}
