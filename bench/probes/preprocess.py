# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The frame path outside the model: resize interpolation per model, JPEG decode scale.

    ./run.sh exec python bench/probes/preprocess.py [--frames 24] [--rounds 9]

1. Per registry model, the u8 resizes (core/preprocess.py
   INTERPOLATIONS): ``area`` and each other one (``linear``, ``area2``).
   Accuracy: the model's results with the other against those with
   ``area`` on real frames (the bundled
   video, then the photos; ONNX Runtime CPU), with the backend manager's
   own agreement check (backends/measure/agreement.py: box F1 / top-1 / keypoint
   PCK / mask IoU); also the share of frames whose results are identical in
   class and within IoU 0.9. Time: preprocessing a 768x576 video frame,
   interleaved rounds, median with p90 and max of the round medians.
2. JPEG (the frames at quality 90): whole decode vs libjpeg-turbo's 1/2,
   1/4 or 1/8 DCT scale where it still gives the model what it needs
   (core/image.py ``from_compressed`` with the model's input), each with
   the model's own preprocessing after it: time on the video frame, and the
   agreement of the scaled decode's results with the whole decode's.

The table goes to ``preprocess.csv`` / ``.md`` (benchlib). Its :func:`_time`
(interleaved rounds) is also what authors_reference.py, graph_resize.py and
ncnn_resize.py time with.
"""

import argparse
import dataclasses
import time

import benchlib
import numpy as np


def _median(v):
    """Return (median, p90, max) of ``v``."""
    s = benchlib.summary(v)
    return s['median'], sorted(v)[int(0.9 * (len(v) - 1))], s['max']


def _time(fns: dict, rounds: int, n: int) -> dict:
    """Return {name: (median, p90, max) ms per call}: ``n`` calls per round, order rotating."""
    out = {k: [] for k in fns}
    order = list(fns)
    for r in range(rounds):
        for k in order[r % len(order):] + order[:r % len(order)]:
            t = time.perf_counter()
            for _ in range(n):
                fns[k]()
            out[k].append((time.perf_counter() - t) / n * 1e3)
    return {k: _median(v) for k, v in out.items()}


def _same(spec, a, b) -> bool:
    """Return whether two results match: classes and IoU >= 0.9, top-1, or mask IoU >= 0.9."""
    from edge_infer.backends.measure.agreement import _iou
    if spec.task == 'classification':
        return int(a.class_ids[0]) == int(b.class_ids[0])
    if hasattr(a, 'boxes'):
        if len(a) != len(b) or sorted(a.class_ids.tolist()) != sorted(b.class_ids.tolist()):
            return False
        return all(_iou(box, b.boxes).max() >= 0.9 for box in a.boxes)
    inter = np.logical_and(a.mask > 0, b.mask > 0).sum()
    union = np.logical_or(a.mask > 0, b.mask > 0).sum()
    return union == 0 or inter / union >= 0.9


def main() -> int:
    """Measure every model; print and save the table."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--frames', type=int, default=24)
    ap.add_argument('--rounds', type=int, default=9)
    ap.add_argument('--models', nargs='*', default=None)
    benchlib.common_args(ap)
    args = ap.parse_args()
    if args.quick:
        args.frames, args.rounds = min(args.frames, 4), min(args.rounds, 2)
    res = benchlib.Results('preprocess', 'The frame path outside the model: resize '
                           'interpolation per model, JPEG decode scale', '(probe)',
                           args.machine, args.out)
    import cv2
    from edge_infer.backends.measure.agreement import agreement
    from edge_infer.backends.libs.ort import OrtBackend
    from edge_infer.backends.measure.profiling import calibration_frames
    from edge_infer.core import image
    from edge_infer.core.model import open_model
    from edge_infer.core.preprocess import INTERPOLATIONS, Preprocessor
    from edge_infer.core.registry import load_registry
    from edge_infer import paths
    reg = load_registry(paths.config_dir() / 'models.yaml')
    frames, what = calibration_frames(args.frames)
    video = frames[0]
    jpeg = cv2.imencode('.jpg', video.pixels, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()
    res.note(f'frames: {what}; timing on a {video.width}x{video.height} video frame, '
             f'{args.rounds} interleaved rounds (30 calls each); ms: median (p90) of the '
             "rounds; agreement: the manager's check against ``area``; same: frames whose "
             'results match in class and within IoU 0.9 (top-1; mask IoU 0.9)')
    jpegs = [cv2.imencode('.jpg', f.pixels, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()
             for f in frames]
    alts = [k for k in INTERPOLATIONS if k != 'area']
    print("other resize vs area: agreement (manager's check), frames the same, time p50 (p90)")
    print("JPEG scaled vs whole decode (+ the model's preprocessing): time p50, agreement")
    print(f"{'model':18} {'input':>8} {'resize':>7} {'agree':>6} {'same':>7} {'area ms':>16} "
          f"{'other ms':>16}  {'jpeg whole':>10} {'scaled':>7} {'agree':>6} scale")
    for name in args.models or reg:
        spec = reg[name]
        specs = {k: dataclasses.replace(spec, input_spec=dataclasses.replace(
            spec.input_spec, interpolation=k)) for k in ['area'] + alts}
        dct = dataclasses.replace(spec.input_spec, jpeg_dct_scaling=True)
        results = {}
        for k, s in specs.items():
            m = open_model(s, OrtBackend(intra_op_threads=2))
            results[k] = [m.infer(f).output for f in frames]
            m.close()
        scores = {k: agreement(spec, results['area'], results[k])[0] for k in alts}
        same = {k: sum(_same(spec, a, b) for a, b in zip(results['area'], results[k]))
                for k in alts}
        m = open_model(spec, OrtBackend(intra_op_threads=2))
        whole_r = [m.infer(image.from_compressed('jpeg', j)).output for j in jpegs]
        scaled_r = [m.infer(image.from_compressed('jpeg', j, dct)).output
                    for j in jpegs]
        m.close()
        jpeg_score, _ = agreement(spec, whole_r, scaled_r)
        pres = {k: Preprocessor(s.input_spec) for k, s in specs.items()}
        own = Preprocessor(spec.input_spec)
        fns = {k: (lambda p=p: p(video)) for k, p in pres.items()}

        def whole():
            own(image.from_compressed('jpeg', jpeg))

        def scaled():
            own(image.from_compressed('jpeg', jpeg, dct))
        fns.update(whole=whole, scaled=scaled)
        t = _time(fns, args.rounds, 30)
        frame = image.from_compressed('jpeg', jpeg, dct)
        area, whole_ms, scaled_ms = t['area'], t['whole'], t['scaled']
        for k in alts:
            print(f'{name:18} {spec.input_spec.width:>4}x{spec.input_spec.height:<3} {k:>7} '
                  f'{scores[k]:6.3f} {same[k]:>3}/{len(frames):<3} '
                  f'{area[0]:6.3f} ({area[1]:.3f}) {t[k][0]:7.3f} '
                  f'({t[k][1]:.3f})  {whole_ms[0]:10.3f} {scaled_ms[0]:7.3f} '
                  f'{jpeg_score:6.3f} {frame.pixels.shape[1]}x{frame.pixels.shape[0]}')
            res.add(model=name, input=f'{spec.input_spec.width}x{spec.input_spec.height}',
                    resize=k, agreement=scores[k], same=same[k], frames=len(frames),
                    area_ms=area[0], area_ms_p90=area[1], other_ms=t[k][0],
                    other_ms_p90=t[k][1], jpeg_whole_ms=whole_ms[0], jpeg_scaled_ms=scaled_ms[0],
                    jpeg_agreement=jpeg_score,
                    scale=f'{frame.pixels.shape[1]}x{frame.pixels.shape[0]}')
    res.write(['model', 'input', 'resize', 'agreement', 'same', 'frames', 'area_ms', 'area_ms_p90',
               'other_ms', 'other_ms_p90', 'jpeg_whole_ms', 'jpeg_scaled_ms', 'jpeg_agreement',
               'scale'],
              ['model', 'input', 'other resize', 'agreement vs area', 'frames the same', 'of',
               'area ms', 'p90', 'other ms', 'p90', 'JPEG whole decode ms', 'scaled ms',
               'agreement scaled vs whole', 'scaled size'])
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
