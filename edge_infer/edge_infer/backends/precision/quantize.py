# Copyright 2026 edge_infer contributors. Apache-2.0.
"""int8 variants of a model file, calibrated on frames that never judge them.

Two quantizers, each a variant kind (:mod:`.variants` names and caches the files):

- ``int8``: ONNX Runtime's ``quantize_static`` (QDQ; per-channel int8
  weights in 7-bit range, see :func:`ort_int8`; uint8 activations). The
  calibration method is chosen by measurement: MinMax first, and where it
  misses the target on the validation frames Percentile (99.999 %) too; the
  one that agrees best with fp32 there is kept.
- ``int8-nncf``: NNCF's ``nncf.quantize`` on the OpenVINO model (preset
  MIXED: symmetric weights, asymmetric activations); where that result does
  not reach the target on the validation frames but comes within
  :data:`AC_REACH` of it, ``nncf.quantize_with_accuracy_control`` with the
  package's own accuracy check (:mod:`..measure.agreement`) as its validation
  function returns the most sensitive layers to float until it does.
  Saved as OpenVINO IR.

Frames (:func:`calibration_sets`): calibration and validation frames come
from the user's footage where the model's registry entry names it
(``calibration``: a folder of images or a rosbag2 folder), else from the
first half of the bundled video; one evenly spread grid, alternately to
either set, so the two never share a frame. The manager's accuracy check
then judges the variant on the second half of the video and the photos
(:func:`..measure.profiling.calibration_frames`), frames no quantizer saw. The
target on the validation frames is stricter than the judge's floor (half
the gap to 1), so a variant tuned to pass there has a margin where it is
judged.

Quantizing runs in a child process (``python -m edge_infer.backends.precision.quantize``,
niced): importing NNCF (scipy, scikit-learn, networkx) adds 49 MB of RSS, which a
node should not keep; a quantizer that fails on an unusual graph costs the
candidate and not the node, and a cancelled profile kills it. The child
writes a JSON note beside the file (``<file>.json``): calibration source,
method, layers kept in float, validation score, seconds. The manager adds
it to the candidate's accuracy detail.
"""

import argparse
import json
import logging
import os
import pathlib
import pickle
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .calibration_sources import calibration_sets, QuantizeError
from ...core.backend import first_line

Log = Callable[[str], object]
KINDS = ('int8', 'int8-nncf')
# False: quantize in this process (the arm-check worker: under qemu-user it
# cannot start another aarch64 Python); cancel and crash isolation are lost.
ISOLATE = True
MAX_FLOAT_LAYERS = 12       # accuracy control: layers it may return to float
RANKING_FRAMES = 8          # accuracy control: validation frames that rank the layers
# Accuracy control runs only where nncf.quantize lands within this of the target:
# on MobileNetV2 (0.54 vs 0.995) it took 127 s, returned 11 layers to float and
# reached 0.875, still rejected; such a gap costs minutes of a robot's CPU for nothing.
AC_REACH = 0.25
# ONNX Runtime calibrates this many frames at a time (a divisor of the count):
# its histogram calibrators keep every activation of the frames they hold
CAL_STRIDE = 5
# the quantizer process (and what it starts) is stopped above this RSS: a
# board's memory is shared with its GPU and the serving graph
MAX_MB = 1000.0
INSTALL_NNCF = 'pip install nncf'
# lines of the quantizers' own chatter that the child's log leaves out
NOISE = ('INFO:nncf', 'WARNING:nncf', 'Number of histogram bins', 'Percentile :')


def validation_target(floor: float) -> float:
    """Return the agreement the quantizers aim for on validation frames: half the gap to 1."""
    return 1.0 - (1.0 - float(floor)) / 2.0


def _inputs(spec, frames) -> List[np.ndarray]:
    """Return the model's float input tensor of each frame (copied)."""
    from ...core.preprocess import Preprocessor
    pre = Preprocessor(spec.input_spec)
    return [np.array(pre(f)[0], copy=True) for f in frames]


# ---------------------------------------------------------------------- ORT
class _Reader:
    """CalibrationDataReader over a list of tensors, read in strides.

    ``len`` and ``set_range`` let ``quantize_static`` calibrate
    :data:`CAL_STRIDE` frames at a time (its ``CalibStridedMinMax`` option,
    which every calibrator honours): the histogram calibrators otherwise keep
    every activation of every frame at once.
    """

    def __init__(self, name: str, tensors: Sequence[np.ndarray]):
        self._tensors = [np.ascontiguousarray(t, np.float32) for t in tensors]
        self._name = name
        self.set_range(0, len(self._tensors))

    def __len__(self) -> int:
        return len(self._tensors)

    def set_range(self, start_index: int, end_index: int) -> None:
        self._it = iter(self._tensors[start_index:end_index])

    def get_next(self):
        t = next(self._it, None)
        return None if t is None else {self._name: t}

    def rewind(self):
        self.set_range(0, len(self._tensors))


def stride(n: int, most: int) -> int:
    """Return the largest divisor of ``n`` up to ``most`` (ORT needs strides that divide n)."""
    return max(d for d in range(1, max(1, min(n, most)) + 1) if n % d == 0)


def ort_int8(src: pathlib.Path, dst: pathlib.Path, calibration: Sequence[np.ndarray],
             method: str = 'MinMax') -> None:
    """Quantize ``src`` to QDQ int8 at ``dst``, calibrated with ``method`` on ``calibration``.

    ``reduce_range``: 7-bit weights. On x86 CPUs without VNNI ORT's u8s8
    kernels add pairs of products in int16, which saturates with full-range
    weights (MobileNetV2 top-1 agreed with fp32 on 6 of 16 frames without it,
    13 of 16 with it). ``quant_pre_process`` is not run: on both bundled
    models it changed neither result nor accuracy, and its symbolic shape
    inference needs sympy.
    """
    import onnx
    from onnxruntime.quantization import (CalibrationMethod, QuantFormat, quantize_static,
                                          QuantType)
    model = onnx.load(str(src))
    inits = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    if len(names) != 1:
        raise QuantizeError(f'int8: {src.name} has {len(names)} inputs; calibration feeds one')
    extra: Dict[str, object] = {'CalibStridedMinMax': stride(len(calibration), CAL_STRIDE)}
    if method == 'Percentile':
        extra['CalibPercentile'] = 99.999
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)    # the quantizer logs advice on the root logger
    try:
        quantize_static(str(src), str(dst), _Reader(names[0], calibration),
                        quant_format=QuantFormat.QDQ, per_channel=True, reduce_range=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        calibrate_method=getattr(CalibrationMethod, method),
                        extra_options=extra)
    finally:
        root.setLevel(level)


def _ort_outputs(path: pathlib.Path):
    """Return run(x) -> list of outputs for an ONNX file on ORT's CPU provider."""
    from ..libs.ort import OrtBackend
    sess = OrtBackend(intra_op_threads=1).open_session(path)
    return lambda x: [np.array(o, copy=True) for o in sess.run(x)]


def make_ort(src: pathlib.Path, dst: pathlib.Path, cal: List[np.ndarray],
             score: Callable[[Callable], Tuple[float, str]], target: float,
             log: Log) -> dict:
    """Make the ORT int8 file with the calibration method that validates best."""
    best: Optional[Tuple[float, str, str]] = None
    tried = []
    for method in ('MinMax', 'Percentile'):
        tmp = dst.with_name(f'{dst.stem}.{method}.onnx')
        ort_int8(src, tmp, cal, method)
        acc, detail = score(_ort_outputs(tmp))
        tried.append(f'{method} {acc:.3f}')
        log(f'int8 ({method} calibration): validation agreement {acc:.3f} ({detail})')
        if best is None or acc > best[0]:
            if best is not None:
                os.unlink(best[2])
            best = (acc, method, str(tmp))
        else:
            os.unlink(tmp)
        if acc >= target:
            break
    assert best is not None
    os.replace(best[2], dst)
    return {'method': f'quantize_static, {best[1]} calibration (validated: '
                      f"{', '.join(tried)})", 'validation': best[0], 'float_layers': []}


# ---------------------------------------------------------------------- NNCF
def make_nncf(src: pathlib.Path, dst: pathlib.Path, cal: List[np.ndarray], ref,
              score: Callable[..., Tuple[float, str]], target: float, log: Log) -> dict:
    """Make the OpenVINO IR int8 file: nncf.quantize, then accuracy control if needed.

    ``ref``: the fp32 reference on the validation frames
    (:class:`..measure.profiling.Reference`), ``score`` its :func:`_scorer`.
    Accuracy control ranks layers on at most :data:`RANKING_FRAMES` of them
    and returns at most :data:`MAX_FLOAT_LAYERS` to float: on a 2-core x86
    without VNNI an unbounded run on MobileNetV2 took over 20 minutes.
    """
    from ..libs.openvino import telemetry_blocked  # noqa: F401  (blocks OpenVINO telemetry first)
    try:
        import nncf
        from nncf.quantization.advanced_parameters import AdvancedAccuracyRestorerParameters
    except ImportError as exc:
        raise QuantizeError(f'nncf not installed ({exc}): {INSTALL_NNCF}') from None
    import openvino as ov
    core = ov.Core()
    model = core.read_model(str(src))
    config = {'INFERENCE_PRECISION_HINT': 'f32', 'PERFORMANCE_HINT': 'LATENCY'}

    def runner(compiled):
        req = compiled.create_infer_request()
        return lambda x: [np.array(o, copy=True) for o in req.infer({0: x}).values()]

    every = list(range(len(ref.inputs)))
    preset = nncf.QuantizationPreset.MIXED
    quantized = nncf.quantize(model, nncf.Dataset(cal), subset_size=len(cal), preset=preset)
    acc, detail = score(runner(core.compile_model(quantized, 'CPU', config)))
    log(f'int8-nncf (nncf.quantize, MIXED): validation agreement {acc:.3f} ({detail})')
    note = {'method': 'nncf.quantize (MIXED)', 'validation': acc, 'float_layers': []}
    if acc < target - AC_REACH:
        log(f'int8-nncf: no accuracy control: {acc:.3f} is more than {AC_REACH:g} under the '
            f'target {target:.3f} (12 layers back in float did not close such a gap)')
    elif acc < target:
        t0 = time.monotonic()
        quantized = nncf.quantize_with_accuracy_control(
            model, nncf.Dataset(cal),
            nncf.Dataset(every, lambda i: ref.inputs[i][0]),
            lambda compiled, items: score(runner(compiled), list(items))[0],
            max_drop=1.0 - target, drop_type=nncf.DropType.ABSOLUTE,
            subset_size=len(cal), preset=preset,
            advanced_accuracy_restorer_parameters=AdvancedAccuracyRestorerParameters(
                max_num_iterations=MAX_FLOAT_LAYERS,
                ranking_subset_size=min(RANKING_FRAMES, len(every)), num_ranking_workers=1))
        acc, detail = score(runner(core.compile_model(quantized, 'CPU', config)))
        floats = _float_layers(quantized)
        log(f'int8-nncf (accuracy control, {time.monotonic() - t0:.0f} s): validation '
            f'agreement {acc:.3f} ({detail}); {len(floats)} layer(s) in float')
        note = {'method': 'nncf.quantize_with_accuracy_control (MIXED, max drop '
                          f'{1.0 - target:.3g})', 'validation': acc, 'float_layers': floats}
    ov.save_model(quantized, str(dst), compress_to_fp16=False)
    return note


def _float_layers(model) -> List[str]:
    """Return the convolutions and matmuls of a quantized model whose input is not quantized."""
    return [op.get_friendly_name() for op in model.get_ordered_ops()
            if op.get_type_name() in ('Convolution', 'GroupConvolution', 'MatMul') and
            op.input_value(0).get_node().get_type_name() != 'FakeQuantize']


# ---------------------------------------------------------------------- child
def _scorer(ref) -> Callable[..., Tuple[float, str]]:
    """Return score(run, indices=every frame): a file's agreement with the fp32 reference.

    ``run(x)`` returns the outputs of one input; ``indices`` picks validation
    frames (accuracy control ranks layers on a subset).
    """
    from ..measure.agreement import agreement

    def score(run, indices: Optional[Sequence[int]] = None) -> Tuple[float, str]:
        idx = range(len(ref.inputs)) if indices is None else indices
        got = [ref.decoder(run(ref.inputs[i][0]), ref.inputs[i][1]) for i in idx]
        return agreement(ref.spec, [ref.outputs[i] for i in idx], got)
    return score


def _make(kind: str, src: pathlib.Path, dst: pathlib.Path, spec, floor: float,
          n_cal: int, n_val: int, log: Log) -> dict:
    """Make one int8 file (in the child); return its note."""
    from ..measure.profiling import Reference
    t0 = time.monotonic()
    cal_frames, val_frames, what = calibration_sets(spec, n_cal, n_val, log)
    log(f'{kind}: calibration frames: {what}')
    cal = _inputs(spec, cal_frames)
    ref = Reference(spec, src, val_frames, 'validation', rounds=1)
    score = _scorer(ref)
    target = validation_target(floor)
    if kind == 'int8':
        note = make_ort(src, dst, cal, score, target, log)
    else:
        note = make_nncf(src, dst, cal, ref, score, target, log)
    note.update({'kind': kind, 'calibration': what, 'target': target,
                 'seconds': round(time.monotonic() - t0, 1)})
    return note


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Child entry: make one variant file; the last stdout line is a JSON result."""
    ap = argparse.ArgumentParser(description='Make one int8 variant (run by make_in_child).')
    ap.add_argument('kind', choices=KINDS)
    ap.add_argument('src')
    ap.add_argument('dst')
    ap.add_argument('spec', help='pickled ModelSpec')
    ap.add_argument('--floor', type=float, default=0.9)
    ap.add_argument('--calibration-frames', type=int, default=30)
    ap.add_argument('--validation-frames', type=int, default=24)
    args = ap.parse_args(argv)
    with open(args.spec, 'rb') as f:
        spec = pickle.load(f)
    try:
        note = _make_checked(args.kind, pathlib.Path(args.src), pathlib.Path(args.dst), spec,
                             args.floor, args.calibration_frames, args.validation_frames,
                             lambda s: print(s, flush=True))
    except QuantizeError as exc:
        print(json.dumps({'ok': False, 'reason': first_line(exc)}), flush=True)
        return 1
    print(json.dumps({'ok': True, 'note': note}), flush=True)
    return 0


def make_in_child(kind: str, src: pathlib.Path, dst: pathlib.Path, spec, floor: float,
                  n_calibration: int = 30, n_validation: int = 24, log: Log = print,
                  cancel: Optional[threading.Event] = None, max_mb: float = MAX_MB) -> dict:
    """Make ``dst`` in a niced child process; return its note (also written to ``dst``.json).

    The note gives the child's peak RSS (``peak_mb``); a child above ``max_mb``
    (0: no bound) is stopped.

    :raises QuantizeError: the child's reason, a crash (its exit status), a
        cancel, or the memory bound.
    """
    if ISOLATE:
        note = _run_child(kind, src, dst, spec, floor, n_calibration, n_validation, log, cancel,
                          max_mb)
    else:
        note = _make_checked(kind, pathlib.Path(src), pathlib.Path(dst), spec, floor,
                             n_calibration, n_validation, log)
    pathlib.Path(str(dst) + '.json').write_text(json.dumps(note, indent=1))
    return note


def _make_checked(kind: str, src: pathlib.Path, dst: pathlib.Path, spec, floor: float,
                  n_cal: int, n_val: int, log: Log) -> dict:
    """Return :func:`_make`'s note; the quantizer's own error on this graph as QuantizeError."""
    try:
        return _make(kind, src, dst, spec, floor, n_cal, n_val, log)
    except QuantizeError:
        raise
    except Exception as exc:
        raise QuantizeError(first_line(exc)) from None


def _run_child(kind: str, src: pathlib.Path, dst: pathlib.Path, spec, floor: float,
               n_calibration: int, n_validation: int, log: Log,
               cancel: Optional[threading.Event], max_mb: float) -> dict:
    """Run :func:`main` in a niced child process; return its note."""
    env = dict(os.environ)
    env['PYTHONUNBUFFERED'] = '1'
    with tempfile.TemporaryDirectory(prefix='edge_infer_quantize_') as tmp:
        spec_file = pathlib.Path(tmp) / 'spec.pickle'
        spec_file.write_bytes(pickle.dumps(spec))
        cmd = [sys.executable, '-m', 'edge_infer.backends.precision.quantize', kind, str(src),
               str(dst), str(spec_file), '--floor', str(floor),
               '--calibration-frames', str(n_calibration),
               '--validation-frames', str(n_validation)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, text=True,
                                preexec_fn=lambda: os.nice(10))
        lines: List[str] = []
        stop = threading.Event()
        peak = [0.0, False]     # highest RSS of the child and its children, MB; over the cap

        def watch() -> None:        # a cancelled profile or a child over the cap is killed
            while not stop.wait(0.1):
                if proc.poll() is not None:
                    return
                if cancel is not None and cancel.is_set():
                    proc.kill()
                    return
                peak[0] = max(peak[0], tree_rss_mb(proc.pid))
                if max_mb and peak[0] > max_mb:
                    peak[1] = True
                    proc.kill()
                    return
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                line = line.rstrip()
                if line.startswith('{'):
                    lines.append(line)
                elif line and not line.startswith(NOISE) and '━' not in line:
                    log(line)
            code = proc.wait()
        finally:
            stop.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if cancel is not None and cancel.is_set():
        raise QuantizeError(f'{kind}: cancelled')
    if peak[1]:
        raise QuantizeError(f'{kind}: the quantizer went over {max_mb:.0f} MB (stopped at '
                            f'{peak[0]:.0f} MB; the bound is variant_memory_mb in '
                            'config/backends.yaml)')
    result: Dict = json.loads(lines[-1]) if lines else {}
    if not result.get('ok'):
        raise QuantizeError(result.get('reason') or
                            f'{kind}: the quantizer process died (exit status {code})')
    note = result['note']
    note['peak_mb'] = round(peak[0])
    return note


def tree_rss_mb(pid: int) -> float:
    """Return the RSS of process ``pid`` and its descendants together, MB (0 once gone)."""
    import psutil
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total / 1e6


def read_note(path: pathlib.Path) -> dict:
    """Return the note written beside a variant file ({} when there is none)."""
    try:
        return json.loads(pathlib.Path(str(path) + '.json').read_text())
    except (OSError, ValueError):
        return {}


def describe_note(note: dict) -> str:
    """Return one line: how a variant was calibrated and what it scored on validation."""
    if not note:
        return ''
    text = f"{note.get('method', '?')}; calibrated on {note.get('calibration', '?')}"
    if 'validation' in note:
        text += f"; validation agreement {note['validation']:.3f}"
    if note.get('float_layers'):
        text += f"; {len(note['float_layers'])} layer(s) kept in float"
    return text


if __name__ == '__main__':
    raise SystemExit(main())
