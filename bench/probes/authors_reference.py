# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The authors' preprocessing as the reference: agreement of each runtime path, facts, time.

    ./run.sh exec python bench/probes/authors_reference.py [--frames 24] [--rounds 9] \
        [--models ...]

Per registry model, on the frames the accuracy guard judges on (the bundled
video's second half and the photos; ONNX Runtime CPU fp32, 2 threads):

1. Agreement (the manager's own check, backends/measure/agreement.py) of
   each runtime path with the authors' pipeline
   (core/reference_preprocess.py): the u8 resize with ``area`` (the old
   reference), ``linear``, ``warp`` and ``area2``; area against linear. JPEG
   (quality 90): the authors' pipeline on the whole decode against the
   DCT-scaled decode (core/image.py) + the runtime path with the registry's
   interpolation.
2. Facts checkable by eye in the photos (boxes, points read off the
   pictures on a 50 px grid, stated in FACTS), for the authors' pipeline
   and both runtime resizes: a detector's best box of the expected class
   (score, IoU with the box by eye); MoveNet's nose and shoulders on the
   astronaut (distance in pixels); the selfie mask's share inside the
   astronaut's box (and the box's share covered); MobileNetV2's top-1.
3. Time: the runtime preprocessing of a 768x576 video frame, float and u8
   kinds, per resize; JPEG whole decode vs the scaled decode, each with the
   registry's preprocessing; interleaved rounds, median (p90, max).

The three tables go through benchlib: ``authors_reference.csv`` / ``.md``
(agreement), ``authors_reference_facts.*`` and ``authors_reference_time.*``.
"""

import argparse
import dataclasses

import benchlib
import cv2
from edge_infer import paths
from edge_infer.backends.libs.ort import OrtBackend
from edge_infer.backends.measure.agreement import agreement
from edge_infer.backends.measure.frames import calibration_frames
from edge_infer.core import image
from edge_infer.core.image import Frame
from edge_infer.core.preprocess import Preprocessor
from edge_infer.core.reference_preprocess import reference_input
from edge_infer.core.registry import load_registry
import numpy as np
from preprocess import _time    # bench/probes/preprocess.py: interleaved rounds

# Read off the photos on a 50 px grid (x1, y1, x2, y2 / x, y), source pixels.
RESIZES = ('area', 'linear', 'warp', 'area2')     # core/preprocess.py INTERPOLATIONS
FACTS = {
    'astronaut.png': {'box': ('person', (20, 15, 370, 512)),
                      'points': {'nose': (222, 125), 'left_shoulder': (330, 265),
                                 'right_shoulder': (110, 265)}},
    'chelsea.png': {'box': ('cat', (0, 0, 451, 300))},
    'coffee.png': {'box': ('cup', (172, 18, 412, 300))},
    'motorcycle_left.png': {'box': ('motorcycle', (90, 95, 685, 450))},
}


def _iou(a, b) -> float:
    x1, y1 = max(a[0], b[0]), max(a[1], b[1])
    x2, y2 = min(a[2], b[2]), min(a[3], b[3])
    inter = max(0.0, x2 - x1) * max(0.0, y2 - y1)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union else 0.0


def _fact(spec, name: str, out) -> str:
    """Return what one result says about the photo's facts, one short cell."""
    fact = FACTS.get(name, {})
    if spec.task == 'detection' and 'box' in fact:
        label, box = fact['box']
        best = [(float(s), b) for s, c, b in zip(out.scores, out.class_ids, out.boxes)
                if spec.label(int(c)) == label]
        if not best:
            top = f' (top: {spec.label(int(out.class_ids[0]))} {float(out.scores[0]):.2f})' \
                if len(out) else ''
            return f'{label}: none{top}'
        s, b = max(best, key=lambda t: t[0])
        return f'{label} {s:.2f} IoU {_iou(b, box):.2f}'
    if spec.task == 'pose' and 'points' in fact:
        if not len(out.keypoints):
            return 'no person'
        kp = out.keypoints[0]
        d = [float(np.hypot(*(kp[spec.keypoint_names.index(k), :2] - np.array(p))))
             for k, p in fact['points'].items()]
        return 'nose {:.0f}, shoulders {:.0f} / {:.0f} px'.format(*d)
    if spec.task == 'segmentation' and name == 'astronaut.png':
        x1, y1, x2, y2 = FACTS[name]['box'][1]
        m = out.mask > 0
        inside = m[y1:y2, x1:x2].sum()
        covered = inside / m[y1:y2, x1:x2].size
        return f'in box {inside / max(1, m.sum()):.2f}, box covered {covered:.2f}'
    if spec.task == 'classification':
        return f'{spec.label(int(out.class_ids[0]))} {float(out.scores[0]):.2f}'
    return ''


def main() -> int:
    """Measure every model; print and save the three tables."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--models', nargs='*', default=None, help='registry keys (default: all)')
    ap.add_argument('--frames', type=int, default=24, help='judged frames, as the guard')
    ap.add_argument('--rounds', type=int, default=9, help='interleaved timing rounds')
    benchlib.common_args(ap)
    args = ap.parse_args()
    if args.quick:
        args.frames, args.rounds = min(args.frames, 4), min(args.rounds, 2)
    seed = "issue 40 (the authors' preprocessing as the reference)"
    res_agree = benchlib.Results('authors_reference', 'Agreement of each runtime path with the '
                                 "authors' preprocessing", seed, args.machine, args.out)
    res_facts = benchlib.Results('authors_reference_facts', 'Facts in the photos: the '
                                 "authors' pipeline and the runtime resizes", seed,
                                 args.machine, args.out)
    res_time = benchlib.Results('authors_reference_time', 'Runtime preprocessing time per '
                                'resize, JPEG whole vs scaled decode', seed, args.machine,
                                args.out)
    reg = load_registry(paths.config_dir() / 'models.yaml')
    frames, what = calibration_frames(args.frames)
    photos = {p.name: Frame(cv2.imread(str(p)), 'bgr')
              for p in sorted((paths.data_home() / 'cache').glob('photos/*.png'))}
    video = frames[0]
    jpegs = [cv2.imencode('.jpg', f.pixels, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()
             for f in frames]
    said = (f'frames: {what}; facts on {", ".join(photos)}; timing on a '
            f'{video.width}x{video.height} video frame, {args.rounds} interleaved rounds')
    res_agree.note(said)
    res_facts.notes.append(said)
    res_time.notes.append(said + ' of 20 calls; ms: median (p90, max) of the rounds')
    rows, facts, times = [], [], []
    for name in args.models or reg:
        spec = reg[name]
        sess = OrtBackend(intra_op_threads=2).open_session(paths.models_dir() / spec.file)
        decoder = spec.make_decoder()

        def run(x, tf):
            return decoder([np.array(o, copy=True) for o in sess.run(x)], tf)

        def runtime(interp: str, dct: bool = False):
            return Preprocessor(dataclasses.replace(spec.input_spec, interpolation=interp,
                                                    jpeg_dct_scaling=dct))

        def authors(f):
            return run(*reference_input(f, spec.input_spec, spec.preprocess))
        pres = {k: runtime(k) for k in RESIZES}
        ref = [authors(f) for f in frames]
        res = {k: [run(*p(f)) for f in frames] for k, p in pres.items()}
        whole = [image.from_compressed('jpeg', j) for j in jpegs]
        dct_spec = dataclasses.replace(spec.input_spec, jpeg_dct_scaling=True)
        scaled = [image.from_compressed('jpeg', j, dct_spec) for j in jpegs]
        ref_jpeg = [authors(f) for f in whole]
        own = runtime(spec.input_spec.interpolation)     # the registry's choice
        dct_res = [run(*own(f)) for f in scaled]
        agree = {k: agreement(spec, ref, v)[0] for k, v in res.items()}
        rows.append((name, spec.preprocess.describe(), spec.input_spec.interpolation,
                     *[agree[k] for k in RESIZES],
                     agreement(spec, res['area'], res['linear'])[0],
                     agreement(spec, ref_jpeg, dct_res)[0],
                     f'{scaled[0].pixels.shape[1]}x{scaled[0].pixels.shape[0]}'))
        for pname, f in photos.items():
            cells = [_fact(spec, pname, authors(f))] + [_fact(spec, pname, run(*p(f)))
                                                        for p in pres.values()]
            if any(cells):
                facts.append((name, pname, *cells))
        u8 = {k: Preprocessor(p.spec, 'u8') for k, p in pres.items()}
        jpeg = jpegs[0]
        fns = {k: (lambda p=p: p(video)) for k, p in pres.items()}
        fns.update({f'u8 {k}': (lambda p=p: p(video)) for k, p in u8.items()})
        fns.update({'jpeg whole': lambda: own(image.from_compressed('jpeg', jpeg)),
                    'jpeg dct': lambda: own(image.from_compressed('jpeg', jpeg, dct_spec))})
        times.append((name, _time(fns, args.rounds, 20)))
        sess.close()
    print("\n| model | authors' pipeline | chosen | " + ' | '.join(
        f"{k} vs authors'" for k in RESIZES) + ' | area vs linear | JPEG DCT + chosen vs '
        "authors' (whole decode) | scaled decode |")
    print('|---|---|---|' + '---|' * (len(RESIZES) + 3))
    agree_cols = [f'{k}_vs_authors' for k in RESIZES] + ['area_vs_linear',
                                                         'jpeg_dct_vs_authors']
    for r in rows:
        print(f'| {r[0]} | {r[1]} | {r[2]} | ' + ' | '.join(f'{v:.3f}' for v in r[3:-1])
              + f' | {r[-1]} |')
        res_agree.add(model=r[0], authors=r[1], chosen=r[2], **dict(zip(agree_cols, r[3:-1])),
                      scaled_decode=r[-1])
    print("\n| model | photo | authors' pipeline | " + ' | '.join(f'runtime, {k}' for k in RESIZES)
          + ' |')
    print('|---|---|---|' + '---|' * len(RESIZES))
    fact_cols = ['model', 'photo', 'authors'] + [f'runtime_{k}' for k in RESIZES]
    for f in facts:
        print('| ' + ' | '.join(f) + ' |')
        res_facts.add(**dict(zip(fact_cols, f)))
    keys = list(times[0][1])
    print('\n| model | ' + ' | '.join(f'{k} ms' for k in keys) + ' |')
    print('|---|' + '---|' * len(keys))
    wide = []
    for name, t in times:
        print(f'| {name} | ' + ' | '.join(f'{t[k][0]:.3f} ({t[k][1]:.3f}, {t[k][2]:.3f})'
                                          for k in keys) + ' |')
        for k in keys:
            res_time.add(model=name, path=k, ms_median=t[k][0], ms_p90=t[k][1], ms_max=t[k][2])
        wide.append({'model': name, **{k: f'{t[k][0]:.3f} ({t[k][1]:.3f}, {t[k][2]:.3f})'
                                       for k in keys}})
    res_agree.write(['model', 'authors', 'chosen'] + agree_cols + ['scaled_decode'],
                    ['model', "authors' pipeline", 'chosen']
                    + [f"{k} vs authors'" for k in RESIZES]
                    + ['area vs linear', "JPEG DCT + chosen vs authors' (whole decode)",
                       'scaled decode'])
    res_facts.write(fact_cols, ['model', 'photo', "authors' pipeline"]
                    + [f'runtime, {k}' for k in RESIZES])
    res_time.write(['model'] + keys, ['model'] + [f'{k} ms' for k in keys], md_rows=wide)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
