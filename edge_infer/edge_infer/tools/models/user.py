# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Your own model: ``edge_infer model add | list | check`` (no ROS).

    edge_infer model add FILE.onnx [--name N] [--labels FILE] [--family F]
                         [--imgsz W[xH]] [--calibration FOLDER|BAG]
    edge_infer model list
    edge_infer model check NAME IMAGE [--out PNG]

``add`` asks recognise.py what the file is (family, input size,
preprocessing, labels), copies it into the models directory (or writes the
derived copy of derive.py: a fixed input size, float32 in and out), records
its checksum, runs it on a bundled photo and only then writes the entry to
the user's registry ``$EDGE_INFER_HOME/models.yaml`` (read beside the
package's ``config/models.yaml``; the user's entry wins on the same key).
Whatever fails, the user gets one line and exit code 2, and the registry,
the models directory and the labels stay as they were. A node then runs
it with ``model: NAME``.
"""

import argparse
import pathlib
import shutil
import sys
from typing import Dict, List, Optional, Tuple

import numpy as np
import yaml

from .recognise import FAMILIES, ModelError, parse_imgsz, Proposal, propose


def add(path: pathlib.Path, name: str = '', labels_file: Optional[pathlib.Path] = None,
        family: str = '', registry: Optional[pathlib.Path] = None,
        models_dir: Optional[pathlib.Path] = None,
        calibration: Optional[pathlib.Path] = None,
        imgsz: Optional[Tuple[int, int]] = None,
        try_on: Optional[pathlib.Path] = None,
        out_png: Optional[pathlib.Path] = None,
        preprocess=None) -> Tuple[str, Proposal]:
    """Register ``path`` in the user's registry; return (name, proposal).

    ``calibration``: a folder of images or a rosbag2 folder whose frames
    calibrate the model's int8 variants (checked for a readable image here);
    without it they calibrate on the bundled video. ``try_on``: an image the
    model must run on before anything is kept (its lines: ``proposal.checked``).
    On any failure the registry, the models directory and the labels are as
    they were. ``preprocess``: the authors' pipeline (a registry ``preprocess``
    mapping, or a pipeline name: ``--preprocess``); without it, what the file
    says (Ultralytics' LetterBox) or the registry's stated default.
    """
    from ... import paths
    from ...checksums import sha256_file
    from ...core.registry import load_registry, RegistryError, user_registry_path
    path = pathlib.Path(path)
    if not path.is_file():
        raise ModelError(f'{path}: no such file')
    labels = None
    if labels_file is not None:
        labels = [ln.strip() for ln in pathlib.Path(labels_file).read_text().splitlines()
                  if ln.strip()]
    prop = propose(path, family, labels, imgsz)
    if isinstance(preprocess, str):
        preprocess = {'pipeline': preprocess}
    if preprocess is not None:
        if not isinstance(preprocess, dict):
            raise ModelError('--preprocess: a pipeline name or a mapping of its keys')
        prop.preprocess = {'source': 'edge_infer model add --preprocess (no source given)',
                           **preprocess}
    if calibration is not None:
        from ...backends.precision.calibration_sources import QuantizeError, source_frames
        calibration = pathlib.Path(calibration).expanduser().resolve()
        try:
            source_frames(str(calibration), 1, log=lambda s: None)
        except (QuantizeError, OSError, ValueError) as exc:    # rosbags' errors too
            raise ModelError(f'--calibration: {exc}') from None
    name = name or path.stem
    registry = pathlib.Path(registry) if registry else user_registry_path()
    models_dir = pathlib.Path(models_dir) if models_dir else paths.models_dir()
    target = models_dir / f'{name}.onnx'
    labels_path = registry.parent / 'labels' / f'{name}.txt'
    tmp = registry.with_suffix('.yaml.tmp')
    same = target.resolve() == path.resolve()   # the file is in the models directory already
    kept = _Kept([labels_path] if same else [target, labels_path])   # put back on failure
    try:
        models_dir.mkdir(parents=True, exist_ok=True)
        if prop.derived is not None:
            import onnx
            onnx.save(prop.derived, str(target))
        elif not same:
            shutil.copyfile(path, target)
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
        if prop.derived is not None:
            doc['models'][name]['source']['sha256_of_the_original'] = sha256_file(path)
        if calibration is not None:
            doc['models'][name]['calibration'] = str(calibration)
        if prop.preprocess is not None:
            doc['models'][name]['preprocess'] = prop.preprocess
        registry.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text("# Your models (edge_infer model add); read beside the package's "
                       'config/models.yaml, and wins on the same name.\n'
                       + yaml.safe_dump(doc, sort_keys=False))
        spec = load_registry(tmp)[name]      # refuse an entry the nodes could not read
        if try_on is not None:
            prop.checked = check(spec, try_on, models_dir, out_png)
    except (ModelError, RegistryError, OSError) as exc:
        kept.restore()
        tmp.unlink(missing_ok=True)
        raise ModelError(f'{exc}') from None
    except Exception as exc:    # the decoder or a runtime on the trial image
        kept.restore()
        tmp.unlink(missing_ok=True)
        first = str(exc).splitlines()[0][:200] if str(exc) else ''
        where = try_on.name if try_on is not None else 'the trial image'
        raise ModelError(f'it did not run on {where}: {type(exc).__name__}: {first}') from None
    tmp.replace(registry)
    kept.drop()
    return name, prop


class _Kept:
    """Files as they were before ``model add`` wrote over them: put back, or forgotten."""

    def __init__(self, files: List[pathlib.Path]):
        self.saved: Dict[pathlib.Path, Optional[pathlib.Path]] = {}
        for f in files:
            backup = f.with_name(f.name + '.before-add')
            if f.is_file():
                f.replace(backup)
                self.saved[f] = backup
            else:
                self.saved[f] = None

    def restore(self) -> None:
        for f, backup in self.saved.items():
            try:
                if backup is None:
                    f.unlink(missing_ok=True)
                else:
                    backup.replace(f)
            except OSError:
                pass

    def drop(self) -> None:
        for backup in self.saved.values():
            if backup is not None:
                backup.unlink(missing_ok=True)


def check(spec, image: pathlib.Path, models_dir: Optional[pathlib.Path] = None,
          out_png: Optional[pathlib.Path] = None) -> List[str]:
    """Run ``spec`` on ``image`` (ONNX Runtime CPU); return lines; write the annotated picture."""
    import cv2
    from ... import paths
    from ...backends.libs.ort import OrtBackend
    from ...core.draw import draw_result, to_bgr
    from ...core.image import from_compressed
    from ...core.model import Model
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
    from ... import paths
    from ..bag.footage import fetch_footage
    photos = fetch_footage(paths.data_home() / 'cache', log=lambda *a: None)['photos']
    return next((p for p in photos if p.name == 'astronaut.png'), photos[0])


def _make_variants(spec) -> None:
    """Make the new model's variant files now (a robot's start only measures them)."""
    from ... import paths
    from ...backends.manager import BackendManager, default_cache_dir
    from ...backends.variants_tool import make_for_model, tool_config
    print('  variants: making its fp16 / int8 files once (each quantizer in <= '
          f"{tool_config()['variant_memory_mb']:.0f} MB) ...")
    mgr = BackendManager(default_cache_dir(), config=tool_config(), log=lambda s: None)
    for entry in make_for_model(mgr, spec, paths.models_dir() / spec.file,
                                log=lambda s: print(f'  {s}')):
        if not entry.get('error'):
            print(f"  made {pathlib.Path(entry['file']).name}"
                  + (f", peak {entry['peak_mb']} MB" if entry.get('peak_mb') else ''))


def main(argv=None) -> int:
    """Run ``edge_infer model add | list | check``; return the exit status."""
    from ...core.backend import BackendError
    from ...core.registry import load_models, RegistryError
    ap = argparse.ArgumentParser(prog='edge_infer model', description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest='verb', required=True)
    a = sub.add_parser('add', help='register an ONNX file in your registry')
    a.add_argument('file', type=pathlib.Path)
    a.add_argument('--name', default='')
    a.add_argument('--labels', type=pathlib.Path, default=None,
                   help='class names, one per line, in class-id order')
    a.add_argument('--family', default='', choices=('',) + FAMILIES)
    a.add_argument('--imgsz', default=None, metavar='W[xH]',
                   help='input size of a model whose input size is free and whose metadata '
                        "does not say it (default: Ultralytics' 640)")
    a.add_argument('--preprocess', default=None, metavar='PIPELINE|{...}',
                   help="how the model's authors make its input, the accuracy guard's "
                        'reference: a pipeline name (warp_perspective, cv2_resize, '
                        'tf_resize_with_pad, pil_resize_center_crop) or a YAML mapping of '
                        "config/models.yaml's preprocess keys (default: Ultralytics' "
                        'LetterBox for its exports, else cv2.resize INTER_LINEAR, said)')
    a.add_argument('--calibration', type=pathlib.Path, default=None,
                   help='a folder of images or a rosbag2 folder from your camera: int8 '
                        'variants calibrate on it (default: the bundled video)')
    a.add_argument('--no-variants', action='store_true',
                   help='do not make the fp16 / int8 files now (edge_infer variants NAME '
                        'makes them later; a robot never quantizes at start)')
    sub.add_parser('list', help='every model the nodes can run, and its registry file')
    c = sub.add_parser('check', help='run a model on an image; print and draw the result')
    c.add_argument('name')
    c.add_argument('image', type=pathlib.Path)
    c.add_argument('--out', type=pathlib.Path, default=None, help='annotated PNG')
    args = ap.parse_args(argv)
    try:
        if args.verb == 'add':
            imgsz = parse_imgsz(args.imgsz) if args.imgsz else None
            out_png = pathlib.Path('out') / f'{args.name or args.file.stem}.png'
            pre = yaml.safe_load(args.preprocess) if args.preprocess else None
            name, prop = add(args.file, args.name, args.labels, args.family,
                             calibration=args.calibration, imgsz=imgsz, try_on=_photo(),
                             out_png=out_png, preprocess=pre)
            print(f"added '{name}': {prop.task}, {prop.inputs['width']}x{prop.inputs['height']}, "
                  f'{len(prop.labels)} classes')
            for line in prop.why:
                print(f'  {line}')
            spec = load_models()[name]
            print(f'  in {spec.origin}')
            print(f'  reference preprocessing: {spec.preprocess.describe()}'
                  + (f' (default: {spec.preprocess.default}; --preprocess to name the '
                     "authors' own)" if spec.preprocess.default else ''))
            print('  int8 calibration: ' + (
                spec.calibration or "the bundled video's first half (--calibration FOLDER|BAG "
                'for frames from your own camera)'))
            for line in prop.checked:
                print(line)
            if not args.no_variants:
                _make_variants(spec)
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
    except (ModelError, RegistryError, BackendError, OSError) as exc:
        print(f'edge_infer model: {exc}', file=sys.stderr)
        return 2
    except Exception as exc:    # a case not foreseen: still one line, and exit 2
        first = str(exc).splitlines()[0][:200] if str(exc) else ''
        print(f'edge_infer model {args.verb}: unexpected {type(exc).__name__}: {first} '
              f'(please report it with the file)', file=sys.stderr)
        return 2
    return 0
