# Copyright 2026 edge_infer contributors. Apache-2.0.
"""ncnn's own preprocessing (``from_pixels_resize``): agreement with the authors' pipeline, cost.

    EDGE_INFER_CACHE=DIR ./run.sh exec python bench/probes/ncnn_resize.py [--frames 24] \
        [--rounds 9]

Issue 40's ncnn half of "in-graph preprocessing with the resize inside": the
path every ncnn example takes, the camera's uint8 frame straight into an
``ncnn.Mat`` by ``Mat.from_pixels_resize`` (colour order swapped on the
way; ``from_pixels_roi_resize`` for MobileNetV2's centre square), a
``copy_make_border`` to the model's square for letterbox models (the pad
value before normalising, as the authors pad), then
``substract_mean_normalize``. ncnn's resize is bilinear on uint8 with
half-pixel centres and 11-bit weights, no antialias. An NHWC model (pnnx
keeps the ONNX layout and permutes after its input) gets the planar Mat
transposed by numpy; that copy is in the cost. Per model, on the frames the
accuracy guard judges on, against ORT CPU fp32 on the authors' pipeline
(core/reference_preprocess.py):

1. agreement of ncnn's input through ORT CPU fp32 (the preprocessing
   alone), through ncnn CPU fp32 at 1 thread (the whole ncnn path), and of
   today's ncnn candidate input (core/preprocess.py's float Preprocessor
   with the registry's interpolation) through ncnn CPU fp32;
2. on a 768x576 video frame, interleaved rounds, median (p90, max): the
   preprocessing alone, ncnn's against the Preprocessor, and each followed
   by the ncnn fp32 run.

The converted models (pnnx) come from ``$EDGE_INFER_CACHE/ncnn`` (default
the data home's cache); a model pnnx cannot convert gets the ORT column only.
The table goes to ``ncnn_resize.csv`` / ``.md`` (benchlib).
"""

import argparse
import os
import pathlib

import benchlib
from edge_infer import paths
from edge_infer.backends.libs.ncnn import _ncnn, NcnnBackend
from edge_infer.backends.libs.ort import OrtBackend
from edge_infer.backends.measure.agreement import agreement
from edge_infer.backends.measure.frames import calibration_frames
from edge_infer.core.backend import BackendError
from edge_infer.core.preprocess import Preprocessor, Transform
from edge_infer.core.reference_preprocess import reference_input
from edge_infer.core.registry import load_registry
import numpy as np
from preprocess import _time    # bench/probes/preprocess.py: interleaved rounds


class NcnnPixels:
    """A frame made into the model's input by ncnn's Mat functions, the Mat kept alive."""

    def __init__(self, spec):
        self.spec = spec
        self.ncnn = _ncnn()
        self.norm = [1.0 / float(s) for s in spec.std]
        self.mean = [float(m) for m in spec.mean]
        self.mat = None

    def _type(self, frame) -> int:
        P = self.ncnn.Mat.PixelType
        if frame.color == self.spec.color:
            return int(P.PIXEL_RGB if frame.color == 'rgb' else P.PIXEL_BGR)
        return int(P.PIXEL_BGR2RGB if frame.color == 'bgr' else P.PIXEL_RGB2BGR)

    def __call__(self, frame):
        """Return (float32 input tensor in the model's layout, Transform)."""
        ncnn, s = self.ncnn, self.spec
        px = frame.pixels
        if px.shape[2] != 3 or not px.flags.c_contiguous:
            px = np.ascontiguousarray(px[:, :, :3])
        h, w = px.shape[:2]
        W, H = s.width, s.height
        kind = self._type(frame)
        if s.resize == 'center_crop':     # as core/preprocess.py's crop
            side = min(w, h, round(min(w, h) * s.crop_fraction))
            x0, y0 = (w - side) // 2, (h - side) // 2
            mat = ncnn.Mat.from_pixels_roi_resize(px, kind, w, h, x0, y0, side, side, W, H)
            k = W / side
            tf = Transform(k, k, -x0 * k, -y0 * k, w, h)
        elif s.resize == 'stretch':
            mat = ncnn.Mat.from_pixels_resize(px, kind, w, h, W, H)
            tf = Transform(W / w, H / h, 0.0, 0.0, w, h)
        else:                             # letterbox: the authors' sizes, centred
            r = min(W / w, H / h)
            nw, nh = int(round(w * r)), int(round(h * r))
            small = ncnn.Mat.from_pixels_resize(px, kind, w, h, nw, nh)
            left, top = (W - nw) // 2, (H - nh) // 2
            mat = ncnn.copy_make_border(small, top, H - nh - top, left, W - nw - left,
                                        int(ncnn.BorderType.BORDER_CONSTANT),
                                        float(s.pad_value))
            tf = Transform(nw / w, nh / h, left, top, w, h)
        mat.substract_mean_normalize(self.mean, self.norm)
        self.mat = mat                    # np.asarray(mat) is a view: keep the Mat
        chw = np.asarray(mat)
        x = chw.transpose(1, 2, 0).copy() if s.layout == 'NHWC' else chw
        return x[None], tf


def main() -> int:
    """Measure every model; print and save the table."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--models', nargs='*', default=None, help='registry keys (default: all)')
    ap.add_argument('--frames', type=int, default=24, help='judged frames, as the guard')
    ap.add_argument('--rounds', type=int, default=9, help='interleaved timing rounds')
    ap.add_argument('--reps', type=int, default=20, help='calls per round and path')
    benchlib.common_args(ap)
    args = ap.parse_args()
    if args.quick:
        args.frames, args.rounds, args.reps = (min(args.frames, 4), min(args.rounds, 2),
                                               min(args.reps, 5))
    res = benchlib.Results('ncnn_resize', "ncnn's own preprocessing: agreement with the "
                           "authors' pipeline, cost", 'issue 40 (in-graph preprocessing, ncnn)',
                           args.machine, args.out)
    reg = load_registry(paths.config_dir() / 'models.yaml')
    cache = pathlib.Path(os.environ.get('EDGE_INFER_CACHE', paths.cache_dir()))
    frames, what = calibration_frames(args.frames)
    video = frames[0]
    res.note(f'frames: {what}; ncnn {_ncnn().__version__} CPU fp32, 1 thread; timing on a '
             f'{video.width}x{video.height} frame, {args.rounds} interleaved rounds x '
             f'{args.reps}; ms: median (p90, max) of the rounds; agreement against ORT CPU fp32 '
             "on the authors' pipeline")
    print('\n| model | ncnn preprocessing | agreement: ncnn pre -> ORT fp32 / '
          '-> ncnn fp32 / Preprocessor -> ncnn fp32 | pre ms: ncnn / Preprocessor | '
          'pre + ncnn run ms: ncnn / Preprocessor |')
    print('|---|---|---|---|---|')
    md = []
    for name in args.models or reg:
        spec = reg[name]
        decoder = spec.make_decoder()
        model = paths.models_dir() / spec.file
        ort = OrtBackend(intra_op_threads=2).open_session(model)

        def through(sess, pre):
            return [decoder([np.array(o, copy=True) for o in sess.run(x)], tf)
                    for x, tf in (pre(f) for f in frames)]
        ref = through(ort, lambda f: reference_input(f, spec.input_spec, spec.preprocess))
        pix = NcnnPixels(spec.input_spec)
        cpu = Preprocessor(spec.input_spec, 'float')
        a_ort = agreement(spec, ref, through(ort, pix))[0]
        ort.close()
        why, v_ncnn, v_cpu = '', None, None
        try:
            sess = NcnnBackend('cpu', 1, 'fp32', cache, log=lambda _m: None).open_session(model)
        except BackendError as exc:
            sess, why = None, str(exc).split(': ', 1)[-1].split(' (')[0]
        if sess is not None:
            v_ncnn = agreement(spec, ref, through(sess, pix))[0]
            v_cpu = agreement(spec, ref, through(sess, cpu))[0]
            a_ncnn, a_cpu = f'{v_ncnn:.3f}', f'{v_cpu:.3f}'
            fns = {'ncnn': lambda: pix(video), 'cpu': lambda: cpu(video),
                   'ncnn_run': lambda: sess.run(pix(video)[0]),
                   'cpu_run': lambda: sess.run(cpu(video)[0])}
        else:
            a_ncnn, a_cpu = f'- ({why})', '-'
            fns = {'ncnn': lambda: pix(video), 'cpu': lambda: cpu(video)}
        t = _time(fns, args.rounds, args.reps)
        if sess is not None:
            sess.close()

        def ms(k):
            return f'{t[k][0]:.2f} ({t[k][1]:.2f}, {t[k][2]:.2f})' if k in t else '-'
        how = {'center_crop': 'roi_resize', 'stretch': 'resize'}.get(
            spec.input_spec.resize, 'resize + copy_make_border')
        if spec.input_spec.layout == 'NHWC':
            how += ' + HWC copy'
        print(f'| {name} | {how} | {a_ort:.3f} / {a_ncnn} / {a_cpu} '
              f'({spec.input_spec.interpolation}) | {ms("ncnn")} / {ms("cpu")} | '
              f'{ms("ncnn_run")} / {ms("cpu_run")} |')
        row = res.add(model=name, ncnn_preprocessing=how, agree_ncnn_pre_ort=a_ort,
                      agree_ncnn_pre_ncnn=v_ncnn, agree_preprocessor_ncnn=v_cpu,
                      interpolation=spec.input_spec.interpolation, ncnn_missing=why)
        for k in ('ncnn', 'cpu', 'ncnn_run', 'cpu_run'):
            if k in t:
                row.update({f'{k}_ms': t[k][0], f'{k}_ms_p90': t[k][1], f'{k}_ms_max': t[k][2]})
        md.append({'model': name, 'how': how, 'interpolation': spec.input_spec.interpolation,
                   'agree': f'{a_ort:.3f} / {a_ncnn} / {a_cpu}', 'pre': f'{ms("ncnn")} / '
                   f'{ms("cpu")}', 'run': f'{ms("ncnn_run")} / {ms("cpu_run")}'})
    res.write(['model', 'how', 'agree', 'interpolation', 'pre', 'run'],
              ['model', 'ncnn preprocessing', 'agreement: ncnn pre -> ORT fp32 / -> ncnn fp32 / '
               'Preprocessor -> ncnn fp32', 'Preprocessor interpolation',
               'pre ms: ncnn / Preprocessor', 'pre + ncnn run ms: ncnn / Preprocessor'],
              md_rows=md)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
