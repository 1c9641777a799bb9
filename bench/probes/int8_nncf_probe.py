# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Feasibility of NNCF int8 for the bundled models, judged on frames it never saw.

    ./run.sh exec python bench/probes/int8_nncf_probe.py
        [--models nanodet mobilenet_v2] [--accuracy-control]

The probe that preceded the int8-nncf candidates (edge_infer/backends/precision/quantize.py
makes them now, on the video's first half, judged on the second half and the
photos); kept to compare quantizer settings quickly: per model, OpenVINO on
one thread at fp32, at the CPU's native precision, and int8 from
``nncf.quantize`` (30 calibration frames: the video's first half at phase 0.5, disjoint
from the judging frames; preset MIXED for detectors, PERFORMANCE otherwise)
and, with ``--accuracy-control`` (classifiers),
``nncf.quantize_with_accuracy_control`` (validation: 24 more first-half frames
at phase 0.25, top-1 vs fp32, max drop 0.01). Judged by the manager's own
accuracy check against ONNX Runtime CPU fp32 on 12 profile frames; time:
p50 of 60 runs on one frame, after 5 warm-up runs. The table goes to
``int8_nncf_probe.csv`` / ``.md`` (benchlib).
"""

import argparse
import time

import benchlib
import numpy as np


def _time(request, x, runs: int = 60) -> float:
    """Return the median ms of ``runs`` inferences on ``x`` after 5 warm-up runs."""
    return benchlib.summary(benchlib.time_calls(lambda: request.infer({0: x}), runs,
                                                warmup=5))['median']


def main() -> int:
    """Quantize each model; print and save each variant's time and accuracy."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--models', nargs='*', default=['nanodet', 'mobilenet_v2'])
    ap.add_argument('--accuracy-control', action='store_true')
    benchlib.common_args(ap)
    args = ap.parse_args()
    runs = 10 if args.quick else 60
    if args.quick:
        args.models = args.models[:1]
    res = benchlib.Results('int8_nncf_probe', 'Feasibility of NNCF int8 for the bundled '
                           'models, judged on frames it never saw', '(probe)',
                           args.machine, args.out)
    from edge_infer import paths
    from edge_infer.backends.libs.openvino import native_precision  # blocks OpenVINO telemetry
    from edge_infer.backends.measure.profiling import calibration_frames, Reference
    from edge_infer.core.preprocess import Preprocessor
    from edge_infer.core.registry import load_models
    try:
        import nncf
    except ImportError as exc:
        print(f'nncf not importable ({exc}): pip install nncf')
        return 2
    import openvino as ov
    core = ov.Core()
    native = {'bf16': 'bf16', 'fp16': 'f16'}.get(native_precision()[0], 'f32')

    def compiled(model, precision: str):
        return core.compile_model(model, 'CPU', {
            'PERFORMANCE_HINT': 'LATENCY', 'INFERENCE_PRECISION_HINT': precision,
            'ENABLE_CPU_PINNING': False, 'NUM_STREAMS': 1, 'INFERENCE_NUM_THREADS': 1})
    res.note(f'nncf {nncf.__version__}, openvino {ov.__version__}, native precision {native}; '
             f'OpenVINO CPU, 1 thread; p50 of {runs} runs on one frame after 5 warm-up runs; '
             "accuracy: the manager's check against ONNX Runtime CPU fp32 on 12 profile frames")
    for name in args.models:
        spec = load_models()[name]
        path = paths.models_dir() / spec.file
        pre = Preprocessor(spec.input_spec)
        calib = [np.array(pre(f)[0], copy=True)
                 for f in calibration_frames(30, phase=0.5, span=(0.0, 0.5))[0]]
        judge, what = calibration_frames(12)
        ref = Reference(spec, path, judge, what)
        model = core.read_model(str(path))
        variants = [('fp32', model, 'f32'), (native, model, native)]
        t0 = time.monotonic()
        preset = (nncf.QuantizationPreset.MIXED if spec.task == 'detection'
                  else nncf.QuantizationPreset.PERFORMANCE)
        variants.append(('int8', nncf.quantize(model, nncf.Dataset(calib),
                                               subset_size=len(calib), preset=preset,
                                               fast_bias_correction=True), native))
        res.note(f'{name}: nncf.quantize {time.monotonic() - t0:.1f} s ({len(calib)} frames)')
        if args.accuracy_control and spec.task != 'classification':
            res.note(f'{name}: no accuracy control (its validation here is top-1: '
                     'classifiers)')
        elif args.accuracy_control:
            val = [np.array(pre(f)[0], copy=True)
                   for f in calibration_frames(24, phase=0.25, span=(0.0, 0.5))[0]]
            fp = compiled(model, 'f32')
            labels = [int(np.argmax(fp(x)[0])) for x in val]

            def validate(cm, data):
                return float(np.mean([int(np.argmax(cm(x)[0])) == lab
                                      for x, lab in zip(data, labels)]))
            t0 = time.monotonic()
            variants.append(('int8-ac', nncf.quantize_with_accuracy_control(
                model, nncf.Dataset(calib), nncf.Dataset(val), validate, max_drop=0.01,
                drop_type=nncf.DropType.ABSOLUTE, subset_size=len(calib)), native))
            res.note(f'{name}: accuracy control {time.monotonic() - t0:.1f} s')
        for label, m, precision in variants:
            request = compiled(m, precision).create_infer_request()
            outs = [ref.decoder([np.array(o, copy=True) for o in request.infer({0: x}).values()],
                                tf) for x, tf in ref.inputs]
            acc, detail = ref.agreement(outs)
            p50 = _time(request, ref.inputs[0][0], runs)
            print(f'  {label:8} p50 {p50:6.2f} ms  '
                  f'accuracy {acc:.3f} ({detail[:80]})')
            res.add(model=name, variant=label, precision=precision, p50_ms=p50, accuracy=acc,
                    detail=detail)
    res.write(['model', 'variant', 'precision', 'p50_ms', 'accuracy', 'detail'],
              ['model', 'variant', 'OpenVINO precision hint', 'p50 ms', 'accuracy', 'detail'])
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
