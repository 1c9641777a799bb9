# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The resize inside OpenVINO's graph: agreement with the authors' pipeline, and frame cost.

    ./run.sh exec python bench/probes/graph_resize.py [--frames 24] [--rounds 9] [--precision bf16]

Issue 40 asks whether the whole preprocessing can go into the compiled model:
PrePostProcessor takes the camera's uint8 frame as it is (its size, BGR),
and the graph converts the colour, pads to a square (letterbox models) or
crops (MobileNetV2's centre), resizes (``RESIZE_LINEAR``, or
``RESIZE_BILINEAR_PILLOW`` for torchvision's antialiased bilinear), then
normalises. One compiled model per frame size. Per model, on the frames the
accuracy guard judges on:

1. agreement (the manager's check) with ORT CPU fp32 on the authors'
   pipeline (core/reference_preprocess.py), for the graph resize and for
   today's ``+pre`` path (the registry's u8 resize on the CPU, the rest in
   the graph), both on OpenVINO at ``--precision``;
2. a 768x576 video frame's cost, interleaved rounds, median (p90, max):
   the graph path's infer (the frame handed over as is) against the ``+pre``
   path's CPU resize + infer.

The table goes to ``graph_resize.csv`` / ``.md`` (benchlib).
"""

import argparse
import dataclasses

import benchlib
from edge_infer import paths
from edge_infer.backends.libs.openvino import OpenVinoBackend
from edge_infer.backends.libs.ort import OrtBackend
from edge_infer.backends.measure.agreement import agreement
from edge_infer.backends.measure.frames import calibration_frames
from edge_infer.core.preprocess import Preprocessor, Transform
from edge_infer.core.reference_preprocess import reference_input
from edge_infer.core.registry import load_registry
import numpy as np
from preprocess import _time    # bench/probes/preprocess.py: interleaved rounds

HINT = {'fp32': 'f32', 'bf16': 'bf16', 'fp16': 'f16'}


def geometry(spec, w: int, h: int):
    """Return (crop begin/end or None, pads begin/end or None, Transform) for a frame size."""
    W, H = spec.input_spec.width, spec.input_spec.height
    if spec.input_spec.resize == 'center_crop':    # as core/preprocess.py's crop
        side = min(w, h, round(min(w, h) * spec.input_spec.crop_fraction))
        x0, y0 = (w - side) // 2, (h - side) // 2
        s = W / side
        tf = Transform(s, s, -x0 * s, -y0 * s, w, h)
        return ([y0, x0, 0], [y0 + side, x0 + side, 3]), None, tf
    if spec.input_spec.resize == 'stretch':
        return None, None, Transform(W / w, H / h, 0.0, 0.0, w, h)
    side = max(w, h)
    px, py = (side - w) // 2, (side - h) // 2
    s = W / side
    tf = Transform(s, s, px * s, py * s, w, h)
    return None, ([py, px, 0], [side - h - py, side - w - px, 0]), tf


def compile_graph_resize(spec, w: int, h: int, precision: str):
    """Return the compiled model taking a 1 x h x w x 3 uint8 BGR frame."""
    import openvino as ov
    from openvino import Layout, Type
    from openvino.preprocess import ColorFormat, PaddingMode, PrePostProcessor, ResizeAlgorithm
    core = ov.Core()
    model = core.read_model(str(paths.models_dir() / spec.file))
    crop, pads, _ = geometry(spec, w, h)
    ppp = PrePostProcessor(model)
    t = ppp.input().tensor().set_element_type(Type.u8).set_layout(Layout('NHWC'))
    t.set_shape([1, h, w, 3]).set_color_format(ColorFormat.BGR)
    ppp.input().model().set_layout(Layout(spec.input_spec.layout))
    steps = ppp.input().preprocess()
    if spec.input_spec.color == 'rgb':
        steps.convert_color(ColorFormat.RGB)
    if crop is not None:
        steps.crop([0] + crop[0], [1] + crop[1])
    if pads is not None:    # padding takes floats only (OpenVINO 2026.4)
        steps.convert_element_type(Type.f32)
        steps.pad([0] + pads[0], [0] + pads[1], float(spec.preprocess.pad_value),
                  PaddingMode.CONSTANT)
    algo = (ResizeAlgorithm.RESIZE_BILINEAR_PILLOW if spec.preprocess.antialias
            else ResizeAlgorithm.RESIZE_LINEAR)
    steps.resize(algo)      # on the uint8 pixels where it can: a quarter of the bytes
    if pads is None:
        steps.convert_element_type(Type.f32)
    steps.mean([float(m) for m in spec.input_spec.mean])
    steps.scale([float(s) for s in spec.input_spec.std])
    return core.compile_model(ppp.build(), 'CPU', {
        'INFERENCE_NUM_THREADS': 1, 'PERFORMANCE_HINT': 'LATENCY',
        'INFERENCE_PRECISION_HINT': HINT[precision], 'ENABLE_CPU_PINNING': False})


def main() -> int:
    """Measure every model; print and save the table."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--models', nargs='*', default=None, help='registry keys (default: all)')
    ap.add_argument('--frames', type=int, default=24, help='judged frames, as the guard')
    ap.add_argument('--rounds', type=int, default=9, help='interleaved timing rounds')
    ap.add_argument('--precision', default='bf16', choices=sorted(HINT))
    benchlib.common_args(ap)
    args = ap.parse_args()
    if args.quick:
        args.frames, args.rounds = min(args.frames, 4), min(args.rounds, 2)
    res = benchlib.Results('graph_resize', "The resize inside OpenVINO's graph: agreement "
                           "with the authors' pipeline, and frame cost",
                           'issue 40 (in-graph preprocessing)', args.machine, args.out)
    reg = load_registry(paths.config_dir() / 'models.yaml')
    frames, what = calibration_frames(args.frames)
    video = frames[0]
    res.note(f'frames: {what}; OpenVINO CPU {args.precision}, 1 thread; timing on a '
             f'{video.width}x{video.height} frame, {args.rounds} interleaved rounds of 20 calls; '
             "agreement: the manager's check against ORT CPU fp32 on the authors' pipeline; ms: "
             'median (p90, max) of the rounds')
    print('\n| model | graph resize | agreement: graph resize / +pre (CPU resize) | '
          'graph: infer ms | +pre: CPU resize + infer ms |')
    print('|---|---|---|---|---|')
    for name in args.models or reg:
        spec = reg[name]
        decoder = spec.make_decoder()
        ref_sess = OrtBackend(intra_op_threads=2).open_session(paths.models_dir() / spec.file)
        ref = [decoder([np.array(o, copy=True) for o in ref_sess.run(x)], tf)
               for x, tf in (reference_input(f, spec.input_spec, spec.preprocess)
                             for f in frames)]
        ref_sess.close()
        compiled = {}

        def graph(f):
            h, w = f.pixels.shape[:2]
            if (w, h) not in compiled:
                compiled[(w, h)] = compile_graph_resize(spec, w, h, args.precision)
            req = compiled[(w, h)].create_infer_request()
            outs = req.infer([np.ascontiguousarray(f.pixels)[None]])
            return [np.array(o) for o in outs.values()], geometry(spec, w, h)[2]
        got = [decoder(*graph(f)) for f in frames]
        pre_backend = OpenVinoBackend(1, args.precision, graph_preprocessing=True)
        sess = pre_backend.open_session(paths.models_dir() / spec.file,
                                        input_spec=spec.input_spec)
        u8 = Preprocessor(spec.input_spec, 'u8')
        plus = [decoder([np.array(o, copy=True) for o in sess.run(x)], tf)
                for x, tf in (u8(f) for f in frames)]
        h, w = video.pixels.shape[:2]
        req = compiled[(w, h)].create_infer_request() if (w, h) in compiled else None
        frame_in = np.ascontiguousarray(video.pixels)[None]
        t = _time({'graph': lambda: req.infer([frame_in]),
                   'plus': lambda: sess.run(u8(video)[0])}, args.rounds, 20)
        sess.close()
        algo = 'BILINEAR_PILLOW' if spec.preprocess.antialias else 'LINEAR'
        geo = dataclasses.replace(spec.input_spec).resize
        a_graph, a_pre = agreement(spec, ref, got)[0], agreement(spec, ref, plus)[0]
        print(f'| {name} | {geo}, {algo} | {a_graph:.3f} / '
              f'{a_pre:.3f} ({spec.input_spec.interpolation}) | '
              f"{t['graph'][0]:.2f} ({t['graph'][1]:.2f}, {t['graph'][2]:.2f}) | "
              f"{t['plus'][0]:.2f} ({t['plus'][1]:.2f}, {t['plus'][2]:.2f}) |")
        res.add(model=name, graph_resize=f'{geo}, {algo}', agree_graph=a_graph, agree_pre=a_pre,
                interpolation=spec.input_spec.interpolation, graph_ms=t['graph'][0],
                graph_ms_p90=t['graph'][1], graph_ms_max=t['graph'][2], pre_ms=t['plus'][0],
                pre_ms_p90=t['plus'][1], pre_ms_max=t['plus'][2])
    res.write(['model', 'graph_resize', 'agree_graph', 'agree_pre', 'interpolation', 'graph_ms',
               'graph_ms_p90', 'graph_ms_max', 'pre_ms', 'pre_ms_p90', 'pre_ms_max'],
              ['model', 'graph resize', 'agreement: graph resize', '+pre (CPU resize)',
               '+pre interpolation', 'graph: infer ms', 'p90', 'max',
               '+pre: CPU resize + infer ms', 'p90', 'max'])
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
