# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Your own model: ``edge_infer model add | list | check`` (no ROS).

    edge_infer model add FILE.onnx [--name N] [--labels FILE] [--family F]
                         [--calibration FOLDER|BAG]
    edge_infer model list
    edge_infer model check NAME IMAGE [--out PNG]

``add`` reads the ONNX file's inputs, outputs and metadata (Ultralytics
exports carry task, names, imgsz, stride and end2end in ``metadata_props``),
proposes the family (decoder), input size, preprocessing and labels, copies
the file into the models directory, records its checksum, writes the entry
to the user's registry ``$EDGE_INFER_HOME/models.yaml`` (read beside the
package's ``config/models.yaml``; the user's entry wins on the same key) and
runs the model on a bundled photo. A layout that fits several families gets
one line naming them and asking for ``--family``; one that fits none gets one
line with the tensor shapes seen. A node then runs it with ``model: NAME``.
"""

import argparse
import ast
from dataclasses import dataclass, field
import pathlib
import shutil
import sys
from typing import Dict, List, Optional, Tuple

import numpy as np
import yaml

FAMILIES = ('yolov8', 'yolov5', 'end2end', 'yolox', 'rtdetr', 'nanodet', 'topk',
            'yolov8_pose', 'movenet', 'yolov8_seg', 'semantic')
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


def read_onnx(path: pathlib.Path) -> Tuple[list, list, Dict[str, str]]:
    """Return (inputs, outputs, metadata): tensors as (name, shape with None for free dims)."""
    import onnx
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf's DecodeError and friends
        raise ModelError(f'{path}: not a readable ONNX file ({type(exc).__name__}: '
                         f'{str(exc)[:120]})') from None
    inits = {i.name for i in model.graph.initializer}

    def shape(t):
        return [d.dim_value if d.HasField('dim_value') else None
                for d in t.type.tensor_type.shape.dim]
    inputs = [(t.name, shape(t)) for t in model.graph.input if t.name not in inits]
    for t in model.graph.input:
        if t.name not in inits and t.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
            kind = onnx.TensorProto.DataType.Name(t.type.tensor_type.elem_type).lower()
            raise ModelError(f"input '{t.name}' is {kind} {shape(t)}: edge_infer feeds "
                             f'float32 image tensors (re-export it with a float input, or '
                             f'add a Cast after a float input)')
    outputs = [(t.name, shape(t)) for t in model.graph.output]
    return inputs, outputs, {p.key: p.value for p in model.metadata_props}


def _names(meta: Dict[str, str]) -> Optional[List[str]]:
    try:
        names = ast.literal_eval(meta['names'])
    except (KeyError, ValueError, SyntaxError):
        return None
    if isinstance(names, dict):
        return [str(names[k]) for k in sorted(names)]
    return [str(n) for n in names] if isinstance(names, (list, tuple)) else None


def _input(inputs, meta) -> Tuple[dict, List[str]]:
    if len(inputs) != 1:
        raise ModelError(f'{len(inputs)} inputs ({inputs}): edge_infer feeds one image tensor')
    name, shp = inputs[0]
    if len(shp) != 4:
        raise ModelError(f"input '{name}' has shape {shp}: expected [1, 3, H, W] or [1, H, W, 3]")
    layout = 'NHWC' if shp[3] == 3 and shp[1] != 3 else 'NCHW'
    h, w = (shp[1], shp[2]) if layout == 'NHWC' else (shp[2], shp[3])
    why = []
    if not h or not w:
        try:
            size = ast.literal_eval(meta.get('imgsz', '640'))
        except (ValueError, SyntaxError):
            size = 640
        h, w = (size, size) if isinstance(size, int) else (size[0], size[1])
        why.append(f'free input size: {w}x{h} from ' +
                   ('the metadata (imgsz)' if 'imgsz' in meta else 'the default'))
    return {'width': int(w), 'height': int(h), 'layout': layout}, why


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
        raise ModelError(f"task 'obb' (Ultralytics metadata): rotated boxes are not decoded "
                         f'(outputs {shapes})')
    if meta.get('task') == 'pose':
        return 'yolov8_pose', nc or 1, f"task 'pose' in the metadata, {shapes[0]}"
    if meta.get('task') == 'segment' or (len(shapes) == 2 and sorted(map(len, shapes)) == [3, 4]):
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


def propose(path: pathlib.Path, family: str = '', labels: Optional[List[str]] = None
            ) -> Proposal:
    """Return what ``model add`` would register for ``path``; ModelError if it cannot."""
    from .. import paths
    inputs, outputs, meta = read_onnx(path)
    names = labels or _names(meta)
    nc = len(names) if names else None
    inp, why = _input(inputs, meta)
    if family:
        if family not in FAMILIES:
            raise ModelError(f"family '{family}': use one of {', '.join(FAMILIES)}")
        fam, why_f = family, 'given (--family)'
        shp = outputs[0][1] if len(outputs) == 1 else []
        if nc is None and family == 'topk' and shp:
            nc = shp[-1]
        elif nc is None and family in ('yolov8', 'yolov5', 'yolox', 'rtdetr') and \
                len(shp) == 3:
            first = family == 'yolov8' and shp[1] and shp[2] and shp[1] < shp[2]
            nc = (shp[1] if first else shp[2]) - (4 if family in ('yolov8', 'rtdetr') else 5)
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
    return Proposal(fam, task, inp, out, list(names), why)


def add(path: pathlib.Path, name: str = '', labels_file: Optional[pathlib.Path] = None,
        family: str = '', registry: Optional[pathlib.Path] = None,
        models_dir: Optional[pathlib.Path] = None,
        calibration: Optional[pathlib.Path] = None) -> Tuple[str, Proposal]:
    """Register ``path`` in the user's registry; return (name, proposal).

    ``calibration``: a folder of images or a rosbag2 folder whose frames
    calibrate the model's int8 variants (checked for a readable image here);
    without it they calibrate on the bundled video.
    """
    from .. import paths
    from ..checksums import sha256_file
    from ..core.registry import load_registry, user_registry_path
    path = pathlib.Path(path)
    if not path.is_file():
        raise ModelError(f'{path}: no such file')
    labels = None
    if labels_file is not None:
        labels = [ln.strip() for ln in pathlib.Path(labels_file).read_text().splitlines()
                  if ln.strip()]
    prop = propose(path, family, labels)
    if calibration is not None:
        from ..backends.calibration_sources import QuantizeError, source_frames
        calibration = pathlib.Path(calibration).expanduser().resolve()
        try:
            source_frames(str(calibration), 1, log=lambda s: None)
        except (QuantizeError, OSError, ValueError) as exc:    # rosbags' errors too
            raise ModelError(f'--calibration: {exc}') from None
    name = name or path.stem
    registry = pathlib.Path(registry) if registry else user_registry_path()
    models_dir = pathlib.Path(models_dir) if models_dir else paths.models_dir()
    models_dir.mkdir(parents=True, exist_ok=True)
    target = models_dir / f'{name}.onnx'
    if target.resolve() != path.resolve():
        shutil.copyfile(path, target)
    labels_path = registry.parent / 'labels' / f'{name}.txt'
    labels_path.parent.mkdir(parents=True, exist_ok=True)
    labels_path.write_text('\n'.join(prop.labels) + '\n')
    doc = yaml.safe_load(registry.read_text()) if registry.is_file() else None
    doc = doc if isinstance(doc, dict) and isinstance(doc.get('models'), dict) else \
        {'models': {}}
    doc['models'][name] = {
        'file': target.name, 'sha256': sha256_file(target), 'task': prop.task,
        'input': prop.inputs, 'output': prop.output,
        'labels': str(labels_path.relative_to(registry.parent)),
        'source': {'added_from': str(path.resolve()), 'family': prop.family,
                   'why': '; '.join(prop.why)}}
    if calibration is not None:
        doc['models'][name]['calibration'] = str(calibration)
    registry.parent.mkdir(parents=True, exist_ok=True)
    tmp = registry.with_suffix('.yaml.tmp')
    tmp.write_text("# Your models (edge_infer model add); read beside the package's "
                   'config/models.yaml, and wins on the same name.\n'
                   + yaml.safe_dump(doc, sort_keys=False))
    load_registry(tmp)       # refuse to write an entry the nodes could not read
    tmp.replace(registry)
    return name, prop


def check(spec, image: pathlib.Path, models_dir: Optional[pathlib.Path] = None,
          out_png: Optional[pathlib.Path] = None) -> List[str]:
    """Run ``spec`` on ``image`` (ONNX Runtime CPU); return lines; write the annotated picture."""
    import cv2
    from .. import paths
    from ..backends.ort import OrtBackend
    from ..core.draw import draw_result, to_bgr
    from ..core.image import from_compressed
    from ..core.model import Model
    frame = from_compressed(pathlib.Path(image).suffix.lstrip('.').replace('jpg', 'jpeg'),
                            pathlib.Path(image).read_bytes())
    model = Model(spec, OrtBackend(intra_op_threads=2), models_dir or paths.models_dir(),
                  verify_checksum=True)
    try:
        result = model.infer(frame)
    finally:
        model.close()
    out = result.output
    lines = describe(spec, out, pathlib.Path(image).name)
    img = draw_result(to_bgr(frame.pixels, frame.color), spec, out, caption=spec.name)
    if out_png is not None:
        pathlib.Path(out_png).parent.mkdir(parents=True, exist_ok=True)
        cv2.imwrite(str(out_png), img)
        lines.append(f'annotated picture: {out_png}')
    return lines


def describe(spec, out, where: str) -> List[str]:
    """Return lines saying what one result of ``spec`` holds: boxes, poses, masks or classes."""
    if spec.task == 'classification':
        return [f'top classes in {where}'] + [
            f'  {spec.label(int(c))} {s:.3f}' for c, s in zip(out.class_ids, out.scores)]
    lines = []
    if hasattr(out, 'boxes'):
        what = {'pose': 'pose(s)', 'segmentation': 'instance(s)'}.get(spec.task, 'detection(s)')
        lines.append(f'{len(out)} {what} in {where}')
        for i, (b, s, c) in enumerate(zip(out.boxes, out.scores, out.class_ids)):
            x1, y1, x2, y2 = map(float, b)
            lines.append(f'  {spec.label(int(c))} {s:.2f} at ({x1:.0f}, {y1:.0f})-'
                         f'({x2:.0f}, {y2:.0f})')
            kps = getattr(out, 'keypoints', None)
            if kps is not None:
                sure = [f'{n} ({x:.0f}, {y:.0f})' for n, (x, y, k) in zip(
                    spec.keypoint_names, kps[i].tolist()) if k >= 0.3]
                lines.append(f'    {len(sure)} keypoints over 0.3: ' + ', '.join(sure[:5])
                             + (' ...' if len(sure) > 5 else ''))
    mask = getattr(out, 'mask', None)
    if mask is not None and not hasattr(out, 'boxes'):
        counts = np.bincount(mask.ravel(), minlength=len(spec.labels))
        lines.append(f'mask {mask.shape[1]}x{mask.shape[0]} of {where}: ' + ', '.join(
            f'{spec.label(c)} {n / mask.size:.1%}' for c, n in enumerate(counts) if n))
    return lines


def _photo() -> pathlib.Path:
    from .. import paths
    from ..bag.footage import fetch_footage
    photos = fetch_footage(paths.data_home() / 'cache', log=lambda *a: None)['photos']
    return next((p for p in photos if p.name == 'astronaut.png'), photos[0])


def main(argv=None) -> int:
    """Run ``edge_infer model add | list | check``; return the exit status."""
    from ..core.backend import BackendError
    from ..core.registry import load_models
    ap = argparse.ArgumentParser(prog='edge_infer model', description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest='verb', required=True)
    a = sub.add_parser('add', help='register an ONNX file in your registry')
    a.add_argument('file', type=pathlib.Path)
    a.add_argument('--name', default='')
    a.add_argument('--labels', type=pathlib.Path, default=None,
                   help='class names, one per line, in class-id order')
    a.add_argument('--family', default='', choices=('',) + FAMILIES)
    a.add_argument('--calibration', type=pathlib.Path, default=None,
                   help='a folder of images or a rosbag2 folder from your camera: int8 '
                        'variants calibrate on it (default: the bundled video)')
    sub.add_parser('list', help='every model the nodes can run, and its registry file')
    c = sub.add_parser('check', help='run a model on an image; print and draw the result')
    c.add_argument('name')
    c.add_argument('image', type=pathlib.Path)
    c.add_argument('--out', type=pathlib.Path, default=None, help='annotated PNG')
    args = ap.parse_args(argv)
    try:
        if args.verb == 'add':
            name, prop = add(args.file, args.name, args.labels, args.family,
                             calibration=args.calibration)
            print(f"added '{name}': {prop.task}, {prop.inputs['width']}x{prop.inputs['height']}, "
                  f'{len(prop.labels)} classes')
            for line in prop.why:
                print(f'  {line}')
            spec = load_models()[name]
            print(f'  in {spec.origin}')
            print('  int8 calibration: ' + (
                spec.calibration or "the bundled video's first half (--calibration FOLDER|BAG "
                'for frames from your own camera)'))
            for line in check(spec, _photo(), out_png=pathlib.Path('out') / f'{name}.png'):
                print(line)
            print(f'run it: a node with model: {name} (backend: auto measures it on this board)')
        elif args.verb == 'list':
            for name, spec in sorted(load_models().items()):
                print(f'{name:20} {spec.task:15} {spec.decoder:9} {spec.input_spec.width}x'
                      f'{spec.input_spec.height}  {spec.origin}')
        else:
            models = load_models()
            if args.name not in models:
                raise ModelError(f"model '{args.name}' is not registered "
                                 f"(known: {', '.join(sorted(models))})")
            for line in check(models[args.name], args.image,
                              out_png=args.out or pathlib.Path('out') / f'{args.name}.png'):
                print(line)
    except (ValueError, OSError, BackendError) as exc:     # ModelError, RegistryError, ...
        print(f'edge_infer model: {exc}', file=sys.stderr)
        return 2
    return 0
