# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What a user's ONNX file is: its family (decoder), input size, preprocessing, labels (no ROS).

:func:`propose` reads the file's inputs, outputs and metadata (Ultralytics
exports carry task, names, imgsz, stride and end2end in ``metadata_props``)
and returns a :class:`Proposal`; ``edge_infer model add`` (user.py) writes it
to the registry. A file with free dimensions or non-float32 tensors gets a
derived copy (derive.py), and its outputs' shapes are read by running it
once. A layout that fits several families, or none, is a
:class:`ModelError` whose message names what was seen and what to pass.
"""

import ast
from dataclasses import dataclass, field
import pathlib
from typing import Any, Dict, List, Optional, Tuple

FAMILIES = ('yolov8', 'yolov5', 'end2end', 'yolox', 'rtdetr', 'nanodet', 'topk',
            'yolov8_pose', 'movenet', 'yolov8_seg', 'semantic', 'yolov8_obb')
YOLO = ('yolov8', 'yolov5', 'end2end')
TASK_OF = {'yolov8_pose': 'pose', 'movenet': 'pose', 'yolov8_seg': 'segmentation',
           'semantic': 'segmentation'}
COCO, IMAGENET = 80, 1000


class ModelError(ValueError):
    """The file cannot be read as a model edge_infer can decode; the message says why."""


@dataclass
class Proposal:
    """What ``model add`` proposes for one file."""

    family: str
    task: str
    inputs: dict        # the registry entry's input: size, layout, preprocessing
    output: dict
    labels: List[str]
    why: List[str] = field(default_factory=list)
    derived: Optional[Any] = None       # the ONNX model to register instead (derive.py)
    checked: List[str] = field(default_factory=list)   # the trial run's lines (add's try_on)
    preprocess: Optional[dict] = None   # the authors' pipeline (registry key), where known


def read_onnx(path: pathlib.Path) -> Tuple[Any, list, list, Dict[str, str]]:
    """Return (model, inputs, outputs, metadata); tensors: (name, shape, None for a free dim)."""
    import onnx
    from .derive import tensor_type
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf's DecodeError and friends
        raise ModelError(f'{path}: not a readable ONNX file ({type(exc).__name__}: '
                         f'{str(exc)[:120]})') from None
    inits = {i.name for i in model.graph.initializer}
    inputs = [(t.name, tensor_type(t)[1]) for t in model.graph.input if t.name not in inits]
    outputs = [(t.name, tensor_type(t)[1]) for t in model.graph.output]
    if not outputs:
        raise ModelError(f'{path}: the graph has no outputs')
    return model, inputs, outputs, {p.key: p.value for p in model.metadata_props}


def parse_imgsz(text: str) -> Tuple[int, int]:
    """Return (width, height) of ``--imgsz W[xH]`` (one number: a square)."""
    parts = str(text).lower().replace(',', 'x').split('x')
    try:
        w, h = (int(parts[0]), int(parts[-1])) if len(parts) <= 2 else (0, 0)
    except ValueError:
        w = h = 0
    if not (16 <= w <= 8192 and 16 <= h <= 8192):
        raise ModelError(f"--imgsz '{text}': use W or WxH in pixels (16 to 8192), e.g. 640 "
                         f'or 640x384')
    return w, h


def _meta_imgsz(meta: Dict[str, str]) -> Optional[Tuple[int, int]]:
    """Return (width, height) of Ultralytics' ``imgsz`` ([h, w] or one number), None if absent."""
    try:
        size = ast.literal_eval(meta['imgsz'])
        h, w = (size, size) if isinstance(size, int) else (int(size[0]), int(size[1]))
    except (KeyError, ValueError, SyntaxError, TypeError, IndexError):
        return None
    return (w, h) if w > 0 and h > 0 else None


def _names(meta: Dict[str, str]) -> Optional[List[str]]:
    try:
        names = ast.literal_eval(meta['names'])
    except (KeyError, ValueError, SyntaxError):
        return None
    if isinstance(names, dict):
        return [str(names[k]) for k in sorted(names)]
    return [str(n) for n in names] if isinstance(names, (list, tuple)) else None


def _input(inputs, meta, imgsz: Optional[Tuple[int, int]] = None) -> Tuple[dict, List[str]]:
    """Return the entry's input (size, layout) and why; a free size from metadata, --imgsz, 640."""
    if len(inputs) != 1:
        raise ModelError(f'{len(inputs)} inputs ({inputs}): edge_infer feeds one image tensor')
    name, shp = inputs[0]
    if len(shp) != 4 or 3 not in (shp[1], shp[3]) and None not in (shp[1], shp[3]):
        raise ModelError(f"input '{name}' has shape {shp}: expected [1, 3, H, W] or [1, H, W, 3]")
    layout = 'NHWC' if shp[3] == 3 and shp[1] != 3 else 'NCHW'
    h, w = (shp[1], shp[2]) if layout == 'NHWC' else (shp[2], shp[3])
    why = []
    if not h or not w:
        given = _meta_imgsz(meta)
        source = 'the metadata (imgsz)'
        if given is None and imgsz:
            given, source = imgsz, '--imgsz'
        elif given is not None and imgsz and tuple(imgsz) != given:
            why.append(f'--imgsz {imgsz[0]}x{imgsz[1]} not used: the metadata says '
                       f'{given[0]}x{given[1]}')
        if given is None:
            given, source = (640, 640), "the default (Ultralytics' 640; --imgsz W[xH] to change)"
        w, h = w or given[0], h or given[1]
        why.append(f'free input size: {w}x{h} from {source}')
    elif imgsz and tuple(imgsz) != (w, h):
        why.append(f'--imgsz {imgsz[0]}x{imgsz[1]} not used: the file fixes its input at {w}x{h}')
    return {'width': int(w), 'height': int(h), 'layout': layout}, why


def _runnable(model, inputs, outputs, inp: dict) -> Tuple[Optional[Any], list, List[str]]:
    """Return (the derived model or None, the outputs' shapes at ``inp``'s size, what changed).

    A free dimension of an output is read by running the model once at that size.
    """
    from .derive import derive, DeriveError, needs, run_once
    w, h = inp['width'], inp['height']
    shape = [1, h, w, 3] if inp['layout'] == 'NHWC' else [1, 3, h, w]
    changes = needs(model)
    if not changes and not any(None in s for _, s in outputs):
        return None, outputs, []
    try:
        derived, changed = derive(model, shape) if changes else (model, [])
    except DeriveError as exc:
        raise ModelError(str(exc)) from None
    try:
        measured = run_once(derived, shape)
    except DeriveError as exc:
        hint = ' (pass --imgsz W[xH]: the size it was exported at)' \
            if None in inputs[0][1] else ''
        raise ModelError(f"input '{inputs[0][0]}' {inputs[0][1]}: {exc}{hint}") from None
    outputs = [(n, measured.get(n, s)) for n, s in outputs]
    return (derived if changed else None), outputs, changed


def _per_pixel(shape, size) -> Optional[int]:
    """Return the channel count of a [1, C, H, W] / [1, H, W, C] map over the input, else None.

    A map over the input is at least 1/8 of its size (``size``: width, height).
    """
    if len(shape) != 4 or None in shape:
        return None
    w, h = size
    for c, (mh, mw) in ((shape[1], shape[2:]), (shape[3], shape[1:3])):
        if c <= 256 and mh * 8 >= h and mw * 8 >= w and mh <= h and mw <= w:
            return c
    return None


def _family(outputs, meta, nc: Optional[int], size=(0, 0)) -> Tuple[str, Optional[int], str]:
    """Return (family, class count or None, why) from the outputs' shapes (input ``size``)."""
    shapes = [s for _, s in outputs]
    if meta.get('task') == 'obb':
        if len(shapes) != 1 or len(shapes[0]) != 3 or not shapes[0][1] or not shapes[0][2]:
            raise ModelError(f"task 'obb' (Ultralytics metadata) but outputs {shapes}: "
                             f'expected one [1, 4 + classes + 1, N]')
        nc = nc if nc is not None else min(shapes[0][1:]) - 5
        if nc < 1:
            raise ModelError(f"task 'obb' (Ultralytics metadata) but output {shapes[0]} leaves "
                             f'{nc} classes: expected [1, 4 + classes + 1, N]')
        return 'yolov8_obb', nc, (
            f"task 'obb' in the metadata, {shapes[0]}: oriented boxes (cx cy w h, classes, "
            f'angle)')
    if meta.get('task') == 'pose':
        return 'yolov8_pose', nc or 1, f"task 'pose' in the metadata, {shapes[0]}"
    seg_layout = len(shapes) == 2 and sorted(map(len, shapes)) == [3, 4]
    if meta.get('task') == 'segment' and not seg_layout:
        raise ModelError(f"task 'segment' (Ultralytics metadata) but outputs {shapes}: "
                         f'expected [1, 4 + classes + 32, N] and [1, 32, H, W]')
    if seg_layout:
        det, protos = sorted(shapes, key=len)
        if nc is None and det[1] and protos[1]:
            nc = det[1] - 4 - protos[1]
        return 'yolov8_seg', nc, f'{shapes}: boxes + mask coefficients, and prototypes'
    if len(shapes) == 1 and shapes[0] in ([1, 1, 17, 3], [1, 6, 56]):
        return 'movenet', 1, (f'{shapes[0]}: MoveNet ' + ('single' if shapes[0][1] == 1 else
                                                          'multi') + '-pose, 17 keypoints')
    ch = _per_pixel(shapes[0], size) if len(shapes) == 1 else None
    if ch:
        return 'semantic', nc or max(2, ch), (
            f'{shapes[0]}: per-pixel scores, {ch} channel(s)'
            + (' (one foreground channel: background + foreground)' if ch == 1 else ''))
    names = [n for n, _ in outputs]
    if len(outputs) >= 2 and len(outputs) % 2 == 0 and all(
            n.startswith('cls_') for n in names[:len(names) // 2]):
        return 'nanodet', shapes[0][-1], 'NanoDet heads (cls_*/reg_* per stride)'
    if len(outputs) == 1 and len(shapes[0]) == 2:
        return 'topk', shapes[0][1], f'one [1, C] output {shapes[0]}: a classifier'
    if len(outputs) != 1 or len(shapes[0]) != 3:
        raise ModelError(f'outputs {shapes} fit no known layout (one [1, a, b] detector output, '
                         f'one [1, C] classifier output, or NanoDet heads): pass --family '
                         f'only if the file really has one of those')
    _, a, b = shapes[0]
    if 'rt-detr' in meta.get('description', '').lower().replace('rtdetr', 'rt-detr'):
        return 'rtdetr', nc if nc is not None else (b - 4 if b else None), \
            'RT-DETR in the metadata (one query per object, no NMS)'
    if str(meta.get('end2end', '')).lower() == 'true':
        return 'end2end', nc, 'end2end: true in the metadata (NMS inside)'
    if b == 6 and (a is None or a <= 1000):
        return 'end2end', nc, f'{shapes[0]}: rows of x1 y1 x2 y2 score class (NMS inside)'
    if nc is not None:
        fits = [f for f, w in (('yolov8', 4 + nc), ('yolov5', 5 + nc))
                if w in (a, b) and not (f == 'yolov5' and a == w)]
        if len(fits) == 1:
            return fits[0], nc, f'{shapes[0]} with {nc} classes'
        raise ModelError(f'output {shapes[0]} fits no detector layout for {nc} classes '
                         f'(yolov8: 4+{nc} = {4 + nc}, yolov5: 5+{nc} = {5 + nc})')
    if a is not None and b is not None and a < b:
        return 'yolov8', a - 4, f'{shapes[0]}: channels first, as Ultralytics exports v8/v11'
    c = b
    guess = [f for f, k in (('yolov8', c - 4), ('yolov5', c - 5)) if k == COCO]
    if len(guess) == 1:
        yolox = '; YOLOX raw grids have this shape too: --family yolox' \
            if guess[0] == 'yolov5' else ''
        return guess[0], COCO, (f'{shapes[0]}: {c} = {c - COCO} + 80 COCO classes '
                                f'({"with" if guess[0] == "yolov5" else "no"} objectness)'
                                f'{yolox}')
    raise ModelError(f'output {shapes[0]} fits yolov8 (transposed, {c - 4} classes) and '
                     f'yolov5 ({c - 5} classes): pass --family yolov8|yolov5 or --labels FILE')


def propose(path: pathlib.Path, family: str = '', labels: Optional[List[str]] = None,
            imgsz: Optional[Tuple[int, int]] = None) -> Proposal:
    """Return what ``model add`` would register for ``path``; ModelError if it cannot.

    ``imgsz``: (width, height) for a model whose input size is free and whose
    metadata does not give it.
    """
    from ... import paths
    from .derive import tensor_type
    model, inputs, outputs, meta = read_onnx(path)
    names = labels or _names(meta)
    nc = len(names) if names else None
    inp, why = _input(inputs, meta, imgsz)
    derived, outputs, changed = _runnable(model, inputs, outputs, inp)
    if changed:
        why.append('derived file (yours is left as it is): ' + '; '.join(changed))
    if family:
        if family not in FAMILIES:
            raise ModelError(f"family '{family}': use one of {', '.join(FAMILIES)}")
        fam, why_f = family, 'given (--family)'
        shp = outputs[0][1] if len(outputs) == 1 else []
        if nc is None and family == 'topk' and shp:
            nc = shp[-1]
        elif nc is None and family == 'yolov8_obb' and len(shp) == 3:
            nc = min(shp[1], shp[2]) - 5
        elif nc is None and family in ('yolov8', 'yolov5', 'yolox', 'rtdetr') and \
                len(shp) == 3:
            first = family == 'yolov8' and shp[1] < shp[2]
            nc = (shp[1] if first else shp[2]) - (4 if family in ('yolov8', 'rtdetr') else 5)
        if nc is not None and nc < 1:
            raise ModelError(f'output {shp} leaves {nc} classes for --family {family}: '
                             f'the layout is not {family}')
    else:
        fam, nc, why_f = _family(outputs, meta, nc, (inp['width'], inp['height']))
    why.append(f'family {fam}: {why_f}')
    if not names and fam in ('movenet', 'yolov8_pose') and (nc or 1) == 1:
        names = ['person']
    elif not names and fam == 'semantic' and nc == 2:
        names = ['background', 'foreground']
    if not names:
        builtin = {COCO: 'coco.txt', IMAGENET: 'imagenet.txt'}.get(nc or 0)
        if builtin:
            names = (paths.config_dir() / 'labels' / builtin).read_text().split('\n')
            names = [n.strip() for n in names if n.strip()]
            why.append(f'labels: {builtin} ({nc} classes)')
        elif nc:
            names = [f'class_{i}' for i in range(nc)]
            why.append(f'labels: none in the file, {nc} classes named class_0..; '
                       f'pass --labels FILE for names')
        else:
            raise ModelError('cannot tell the class count: pass --labels FILE')
    else:
        why.append(f"labels: {len(names)} from {'--labels' if labels else 'the metadata'}")
    ultralytics = meta.get('author', '').lower().startswith('ultralytics') or fam in YOLO
    if fam == 'yolox':
        inp.update(color='bgr', resize='letterbox', pad_value=114,
                   normalize={'mean': [0, 0, 0], 'std': [1, 1, 1]})
        out = {'decoder': 'yolox', 'score_threshold': 0.3, 'nms_iou': 0.45,
               'max_detections': 300}
        why.append('preprocessing: YOLOX (BGR 0..255, letterbox padded with 114)')
        task = 'detection'
    elif fam == 'rtdetr':
        inp.update(color='rgb', resize='stretch',
                   normalize={'mean': [0, 0, 0], 'std': [255, 255, 255]})
        out = {'decoder': 'rtdetr', 'score_threshold': 0.25, 'max_detections': 300}
        why.append('preprocessing: RT-DETR (RGB 0..1, stretched to the input)')
        task = 'detection'
    elif fam in YOLO:
        inp.update(color='rgb', resize='letterbox', pad_value=114,
                   normalize={'mean': [0, 0, 0], 'std': [255, 255, 255]})
        out = {'decoder': fam, 'score_threshold': 0.25, 'nms_iou': 0.7, 'max_detections': 300}
        why.append('preprocessing: Ultralytics (RGB, 0..1, letterbox padded with 114); '
                   'thresholds: its predict defaults (score 0.25, IoU 0.7, 300 boxes)')
        task = 'detection'
    elif fam == 'yolov8_obb':
        inp.update(color='rgb', resize='letterbox', pad_value=114,
                   normalize={'mean': [0, 0, 0], 'std': [255, 255, 255]})
        out = {'decoder': fam, 'score_threshold': 0.25, 'nms_iou': 0.7, 'max_detections': 300}
        why.append('preprocessing: Ultralytics (RGB, 0..1, letterbox padded with 114); '
                   'oriented boxes: their angle in edge_infer_msgs, their axis-aligned bounds '
                   'in vision_msgs')
        task = 'detection'
    elif fam in ('yolov8_pose', 'yolov8_seg'):
        inp.update(color='rgb', resize='letterbox', pad_value=114,
                   normalize={'mean': [0, 0, 0], 'std': [255, 255, 255]})
        out = {'decoder': fam, 'score_threshold': 0.25, 'nms_iou': 0.7, 'max_detections': 100}
        if fam == 'yolov8_pose':
            try:
                kpt = list(ast.literal_eval(meta.get('kpt_shape', '[17, 3]')))
            except (ValueError, SyntaxError):
                kpt = [17, 3]
            out['kpt_shape'] = [int(v) for v in kpt]
            if kpt[0] == 17:
                out['keypoints'] = 'coco17'
            why.append(f'keypoints: {kpt[0]} x {kpt[1]} (kpt_shape)'
                       + (', COCO names and skeleton' if kpt[0] == 17 else ''))
        why.append('preprocessing: Ultralytics (RGB, 0..1, letterbox padded with 114)')
        task = TASK_OF[fam]
    elif fam == 'movenet':
        inp.update(color='rgb', resize='letterbox', pad_value=0,
                   normalize={'mean': [0, 0, 0], 'std': [1, 1, 1]})
        out = {'decoder': 'movenet', 'score_threshold': 0.2, 'keypoint_threshold': 0.3,
               'keypoints': 'coco17'}
        why.append('preprocessing: MoveNet (RGB 0..255, letterbox)')
        task = 'pose'
    elif fam == 'semantic':
        inp.update(color='rgb', resize='stretch',
                   normalize={'mean': [0, 0, 0], 'std': [255, 255, 255]})
        out = {'decoder': 'semantic'}
        why.append('preprocessing: a guess (RGB 0..1, stretched): check it against the '
                   "model's documentation and edit the entry if it differs")
        task = 'segmentation'
    elif fam == 'nanodet':
        raise ModelError('NanoDet heads: copy the bundled nanodet entry of config/models.yaml '
                         '(its strides and bins depend on the export)')
    else:
        task = 'classification'
        if ultralytics and meta.get('task') == 'classify':
            inp.update(color='rgb', resize='center_crop',
                       normalize={'mean': [0, 0, 0], 'std': [255, 255, 255]})
            out = {'decoder': 'topk', 'top_k': 5, 'softmax': False}
            why.append('preprocessing: Ultralytics classify (RGB 0..1, centre crop); '
                       'outputs are probabilities')
        else:
            inp.update(color='rgb', resize='center_crop',
                       normalize={'mean': [123.675, 116.28, 103.53],
                                  'std': [58.395, 57.12, 57.375]})
            out = {'decoder': 'topk', 'top_k': 5, 'softmax': True}
            why.append('preprocessing: ImageNet (RGB, mean/std, centre crop 0.875)')
    kind = tensor_type(next(t for t in model.graph.input if t.name == inputs[0][0]))[0]
    if kind in ('uint8', 'int32') and inp['normalize'] != {'mean': [0, 0, 0],
                                                           'std': [1, 1, 1]}:
        inp['normalize'] = {'mean': [0, 0, 0], 'std': [1, 1, 1]}
        why.append(f'{kind} input: fed 0..255 pixels (its own scaling is inside the model)')
    prop = Proposal(fam, task, inp, out, list(names), why, derived)
    if ultralytics and inp.get('resize') == 'letterbox':
        from ...core.registry import ULTRALYTICS_SOURCE
        prop.preprocess = {'pipeline': 'cv2_resize', 'resize': 'letterbox',
                           'interpolation': 'linear', 'antialias': False,
                           'pad_value': int(inp.get('pad_value', 114)),
                           'color': inp.get('color', 'rgb'), 'source': ULTRALYTICS_SOURCE}
        why.append("reference preprocessing: Ultralytics' LetterBox (INTER_LINEAR, pad "
                   f"{prop.preprocess['pad_value']})")
    return prop
