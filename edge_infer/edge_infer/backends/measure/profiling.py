# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Probe, measure and check one backend candidate on one model (no ROS).

- :func:`probe_backend`: a backend is *available* only when a small probe
  model (conv, relu, pooling, gemm) loads on it, runs, and matches the
  ONNX Runtime CPU result; the reason is kept either way.
- :func:`calibration_frames` (:mod:`.frames`): real frames (the bundled
  video and photos) for accuracy checks; synthetic ones, said so, when the
  footage is absent.
- :class:`Reference`: the model's outputs on those frames with ONNX Runtime
  on the CPU (fp32) on its authors' preprocessing
  (:mod:`...core.reference_preprocess`), decoded; candidates are fed by the
  runtime path (:mod:`...core.preprocess`), so a faster resize is judged
  like a faster library; the model's inputs of each input kind, and
  what preparing them costs on the CPU (``preprocess_ms``): a candidate's
  frame cost is that plus its run (:attr:`CandidateResult.frame_ms`); the
  decode is the same for every candidate and left out.
- :func:`screen_candidate`: load, accuracy against the reference (with its
  95 % interval: :mod:`.agreement`), warm up,
  timed runs within a time budget (median, p90 and max), energy per
  inference from the power meter when one is given. A candidate whose median
  after ``cut_runs`` runs exceeds ``cut_ms`` (a multiple of the best so far)
  stops there: its figures are real but few, and it says so.
- :func:`interleave`: the leading candidates side by side in rounds.
"""

import contextlib
from dataclasses import asdict, dataclass, field
import hashlib
import math
import pathlib
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .agreement import judge, Verdict
from .frames import (calibration_frames, CALIBRATION_SPAN, JUDGE_SPAN,  # noqa: F401 (kept here)
                     video_frames)
from .gate import ComputeGate
from ...core.backend import (Backend, BackendError, first_line, input_kind, open_session,
                             Session, UnsupportedModel)
from ...core.image import Frame
from ...core.preprocess import INPUT_KINDS, InputSpec, Preprocessor
from ...core.reference_preprocess import reference_input
from ...core.registry import ModelSpec

Log = Callable[[str], None]


@dataclass
class CandidateResult:
    """What the manager knows about one candidate for one model."""

    backend: str
    library: str = ''
    device: str = ''
    precision: str = 'fp32'
    tensor_passing: str = ''
    input_kind: str = 'float'       # what its sessions take (core.preprocess.INPUT_KINDS)
    status: str = 'unavailable'     # ok | unavailable | failed | rejected
    reason: str = ''
    p50_ms: float = float('nan')
    p90_ms: float = float('nan')
    p99_ms: float = float('nan')
    max_ms: float = float('nan')    # the tail: a stalling library shows here, not in p50
    preprocess_ms: float = float('nan')  # CPU preprocessing of its input kind, per frame
    runs: int = 0
    rounds: int = 0                 # interleaved rounds the figures come from (0 = alone)
    cut_short: bool = False         # timing stopped early: clearly slower than the best
    load_ms: float = float('nan')
    energy_j: float = float('nan')
    energy_error_j: float = float('nan')
    energy_source: str = ''
    accuracy: float = float('nan')  # agreement with the CPU fp32 reference, 0..1
    accuracy_detail: str = ''
    accuracy_low: float = float('nan')     # the agreement's 95 % interval (agreement.Verdict)
    accuracy_high: float = float('nan')
    model_file: str = ''            # the file profiled (a variant's, for fp16/int8)
    conditions: Dict[str, float] = field(default_factory=dict)  # load while measured
    chosen: bool = False
    lasting: bool = False           # failed as this file on this version always will (kept)

    @property
    def pre_ms(self) -> float:
        """Return the CPU preprocessing per frame (0 where not measured)."""
        return self.preprocess_ms if math.isfinite(self.preprocess_ms) else 0.0

    @property
    def frame_ms(self) -> float:
        """Return a frame's cost: CPU preprocessing + p50 run (the decode is the same for all)."""
        return self.p50_ms + self.pre_ms

    @property
    def edp(self) -> float:
        """Return energy x delay (J x s)."""
        return self.energy_j * self.p50_ms / 1e3

    def to_dict(self) -> dict:
        """Return a JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> 'CandidateResult':
        """Build from :meth:`to_dict` output (unknown keys ignored)."""
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in names})


def describe(backend: Backend, **kw) -> CandidateResult:
    """Return a result carrying the backend's description."""
    return CandidateResult(backend=backend.name, library=backend.library,
                           device=backend.device, precision=backend.precision,
                           tensor_passing=backend.tensor_passing,
                           input_kind=input_kind(backend), **kw)


# ------------------------------------------------------------------------ probing
def probe_model(cache_dir: pathlib.Path) -> pathlib.Path:
    """Write (once) and return a small conv net: Conv-Relu-Conv1x1-GlobalAvgPool-Flatten-Gemm."""
    import onnx
    from onnx import helper, numpy_helper, TensorProto
    rng = np.random.default_rng(7)
    w1 = rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3
    b1 = rng.standard_normal(8).astype(np.float32) * 0.1
    w2 = rng.standard_normal((16, 8, 1, 1)).astype(np.float32) * 0.3
    wf = rng.standard_normal((10, 16)).astype(np.float32) * 0.3
    bf = rng.standard_normal(10).astype(np.float32) * 0.1
    inits = [numpy_helper.from_array(a, n) for a, n in
             ((w1, 'w1'), (b1, 'b1'), (w2, 'w2'), (wf, 'wf'), (bf, 'bf'))]
    nodes = [
        helper.make_node('Conv', ['x', 'w1', 'b1'], ['c1'], pads=[1, 1, 1, 1]),
        helper.make_node('Relu', ['c1'], ['r1']),
        helper.make_node('Conv', ['r1', 'w2'], ['c2']),
        helper.make_node('GlobalAveragePool', ['c2'], ['p']),
        helper.make_node('Flatten', ['p'], ['f']),
        helper.make_node('Gemm', ['f', 'wf', 'bf'], ['y'], transB=1),
    ]
    graph = helper.make_graph(
        nodes, 'edge_infer_probe',
        [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    model.ir_version = 8
    data = model.SerializeToString()
    path = pathlib.Path(cache_dir) / f'probe_{hashlib.sha256(data).hexdigest()[:12]}.onnx'
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix('.tmp')
        tmp.write_bytes(data)
        tmp.replace(path)
        onnx.checker.check_model(onnx.load(str(path)))
    return path


def probe_backend(backend: Backend, cache_dir: pathlib.Path) -> Tuple[bool, str]:
    """Return (available, reason): the probe model ran on the backend and matched ORT CPU."""
    ok, why = backend.available()
    if not ok:
        return False, why
    from ..libs.ort import OrtBackend
    path = probe_model(cache_dir)
    x = np.random.default_rng(11).standard_normal((1, 3, 32, 32)).astype(np.float32)
    try:
        ref = OrtBackend().open_session(path).run(x)[0].copy()
    except BackendError as exc:
        return False, f'no CPU reference for the probe: {exc}'
    feed: np.ndarray = x
    input_spec = InputSpec(32, 32)     # mean 0, std 1: pixels as they are
    try:
        if input_kind(backend) == 'u8':     # the graph normalises: feed pixels
            u8 = np.random.default_rng(11).integers(0, 256, (1, 32, 32, 3), dtype=np.uint8)
            ref = OrtBackend().open_session(path).run(
                np.ascontiguousarray(u8.transpose(0, 3, 1, 2), np.float32))[0].copy()
            feed = u8
        sess = backend.open_session(path, strict=True, input_spec=input_spec)
        t0 = time.perf_counter()
        out = sess.run(feed)[0]
        ms = (time.perf_counter() - t0) * 1e3
        sess.close()
    except Exception as exc:  # any library error means: not usable
        return False, f'probe model failed: {first_line(exc)}'
    out = np.asarray(out, np.float32).reshape(ref.shape)
    err = float(np.abs(out - ref).max())
    tol = 2e-2 if backend.precision != 'fp32' else 1e-3
    scale = float(np.abs(ref).max()) or 1.0
    if not np.isfinite(err) or err > tol * scale:
        return False, f'probe output differs from ORT CPU by {err:.3g} (> {tol * scale:.3g})'
    return True, f'{why}; probe ran in {ms:.1f} ms, max |diff| vs ORT CPU {err:.1e}'


# ---------------------------------------------------------------------- reference
TIMED_FRAMES = 6    # the frames whose preprocessing is timed again after the first round


class Reference:
    """A model's CPU fp32 outputs on the calibration frames, its authors' preprocessing, decoded.

    Also the model's inputs per input kind (``inputs_for``) and the CPU time
    that preparing a frame takes per kind (``preprocess_ms``: median over
    the frames in interleaved rounds, so that both kinds see the same load).
    """

    def __init__(self, spec: ModelSpec, model_path: pathlib.Path, frames: Sequence[Frame],
                 frames_what: str = '', rounds: int = 5):
        from ..libs.ort import OrtBackend
        self.spec = spec
        self.frames_what = frames_what
        self.frames = list(frames)
        self._inputs: Dict[str, List[Tuple[np.ndarray, object]]] = {}
        self.preprocess_ms: Dict[str, float] = {}
        pres = {k: Preprocessor(spec.input_spec, k) for k in INPUT_KINDS}
        times: Dict[str, List[float]] = {k: [] for k in INPUT_KINDS}
        for r in range(rounds if self.frames else 0):
            for k in (INPUT_KINDS if r % 2 == 0 else INPUT_KINDS[::-1]):
                for f in (self.frames if r == 0 else self.frames[:TIMED_FRAMES]):
                    t = time.perf_counter()
                    tensor, tf = pres[k](f)
                    times[k].append((time.perf_counter() - t) * 1e3)
                    if r == 0:
                        self._inputs.setdefault(k, []).append((np.array(tensor, copy=True), tf))
        self.preprocess_ms = {k: float(np.median(v)) for k, v in times.items() if v}
        sess = OrtBackend().open_session(model_path)
        self.decoder = spec.make_decoder()
        self.outputs = []
        for f in self.frames:       # the authors' input, not the runtime path's
            x, tf = reference_input(f, spec.input_spec, spec.preprocess)
            self.outputs.append(self.decoder([np.array(o, copy=True) for o in sess.run(x)], tf))
        sess.close()

    @property
    def inputs(self) -> List[Tuple[np.ndarray, object]]:
        """Return (float input tensor, Transform) per frame."""
        return self._inputs.get('float', [])

    def inputs_for(self, kind: str) -> List[Tuple[np.ndarray, object]]:
        """Return (input tensor of ``kind``, Transform) per frame."""
        return self._inputs.get(kind, [])

    def first_inputs(self) -> Dict[str, np.ndarray]:
        """Return {input kind: the first frame's input}: what timed runs feed."""
        return {k: v[0][0] for k, v in self._inputs.items() if v}

    def judge(self, outputs) -> Verdict:
        """Return the agreement of decoded outputs (the first frames') with its interval."""
        return judge(self.spec, self.outputs, outputs)

    def agreement(self, outputs) -> Tuple[float, str]:
        """Return (agreement 0..1, detail) of decoded candidate outputs vs the reference."""
        v = self.judge(outputs)
        return v.value, v.detail


# ---------------------------------------------------------------------- profiling
def _fill_times(res: CandidateResult, times: Sequence[float]) -> None:
    res.runs = len(times)
    res.p50_ms = float(np.median(times))
    res.p90_ms = float(np.percentile(times, 90))
    res.p99_ms = float(np.percentile(times, 99))
    res.max_ms = float(max(times))


def _fill_energy(res: CandidateResult, energy: Sequence[Tuple[float, float, str]]) -> None:
    if energy:
        res.energy_j = float(np.median([e[0] for e in energy]))
        res.energy_error_j = float(np.median([e[1] for e in energy]))
        res.energy_source = energy[-1][2]


def _timed_run(sess, x, meter, model: str, times: List[float], energy: List,
               gate: Optional[ComputeGate]) -> None:
    with gate.exclusive() if gate is not None else contextlib.nullcontext():
        # (none of this process's frames runs beside it)
        token = meter.begin(model) if meter is not None else None
        t = time.perf_counter()
        sess.run(x)
        times.append((time.perf_counter() - t) * 1e3)
    if token is not None:
        rec = meter.end(token)
        if rec is not None:
            energy.append((rec.joules, rec.error_j, rec.source))


def screen_candidate(backend: Backend, spec: ModelSpec, model_path: pathlib.Path,
                     reference: Reference, budget_s: float = 1.5, warmup: int = 2,
                     min_runs: int = 5, max_runs: int = 200, meter=None,
                     min_accuracy: float = 0.9, cut_ms: float = float('inf'),
                     cut_runs: int = 3, judge_min_frames: int = 6, judge_s: float = 1.0,
                     gate: Optional[ComputeGate] = None
                     ) -> Tuple[CandidateResult, Optional[Session]]:
    """Load, check accuracy, time within the budget; return (result, open session or None).

    The accuracy check runs every reference frame, but a candidate still
    at it after ``judge_s`` stops once it has run ``judge_min_frames`` (a
    software Vulkan device takes seconds a frame): its interval says so.
    The session stays open (for :func:`interleave`) unless the candidate
    failed; the caller closes it. ``gate``: the process's compute gate (its
    runtime's), held alone for each timed run.
    """
    res = describe(backend, model_file=pathlib.Path(model_path).name)
    res.preprocess_ms = reference.preprocess_ms.get(res.input_kind, float('nan'))
    inputs = reference.inputs_for(res.input_kind)
    t0 = time.perf_counter()
    try:
        sess = open_session(backend, model_path, spec.input_spec)
    except UnsupportedModel as exc:
        res.status, res.reason, res.lasting = 'failed', str(exc), True
        return res, None
    except BackendError as exc:
        res.status, res.reason = 'failed', str(exc)
        return res, None
    except Exception as exc:  # a library's own error type
        res.status, res.reason = 'failed', f'{backend.name}: load: {first_line(exc)}'
        return res, None
    res.load_ms = (time.perf_counter() - t0) * 1e3
    try:
        decoded: List[object] = []
        t_judge = time.perf_counter()
        for x, tf in inputs:   # all the frames, or the first judge_min_frames of a slow one
            if len(decoded) >= judge_min_frames and time.perf_counter() - t_judge > judge_s:
                break
            decoded.append(reference.decoder([np.array(o, copy=True) for o in sess.run(x)], tf))
        v = reference.judge(decoded)
        res.accuracy, res.accuracy_low, res.accuracy_high = v.value, v.low, v.high
        res.accuracy_detail = v.detail + (
            f'; judged on {len(decoded)} of {len(inputs)} frames (slower than {judge_s:g} s)'
            if len(decoded) < len(inputs) else '')
        x = inputs[0][0]
        times: List[float] = []
        deadline = time.perf_counter() + budget_s
        for _ in range(warmup):
            sess.run(x)
        energy: List[Tuple[float, float, str]] = []
        while len(times) < max_runs and (len(times) < min_runs or
                                         time.perf_counter() < deadline):
            _timed_run(sess, x, meter, spec.name, times, energy, gate)
            if times[0] > budget_s * 1e3 and len(times) >= 2:
                res.cut_short = float(np.median(times)) > cut_ms
                break   # very slow candidate: two runs are all the budget allows
            if len(times) >= cut_runs and float(np.median(times)) > cut_ms:
                res.cut_short = True
                break
    except Exception as exc:  # a backend failing mid-run is a result, not a crash
        res.status, res.reason = 'failed', f'{backend.name}: run: {first_line(exc)}'
        sess.close()
        return res, None
    _fill_times(res, times)
    _fill_energy(res, energy)
    if not res.accuracy >= min_accuracy:
        res.status = 'rejected'
        res.reason = (f'accuracy {res.accuracy:.3f} < {min_accuracy} vs ORT CPU fp32 on the '
                      f"authors' preprocessing ({res.accuracy_detail}; {reference.frames_what})")
    else:
        res.status = 'ok'
        res.reason = f'{res.accuracy_detail} ({reference.frames_what})'
    if res.cut_short:
        res.reason += (f'; timing cut short after {res.runs} runs: p50 {res.p50_ms:.1f} ms > '
                       f'{cut_ms:.1f} ms (x the best so far)')
    return res, sess


@dataclass
class Ranking:
    """How settled the ranking of the leading candidates is after interleaved rounds."""

    leader: str = ''
    runner_up: str = ''
    rounds: int = 0
    wins: float = float('nan')      # share of rounds the leader's median beat the runner-up's
    settled: bool = False
    ratio: float = float('nan')     # runner-up / leader, medians over all rounds

    def describe(self) -> str:
        """Return one line for logs and reports."""
        if not self.runner_up:
            return f'{self.leader}: the only candidate in the running'
        state = 'settled' if self.settled else 'NOT settled (budget ended)'
        return (f'{self.leader} beat {self.runner_up} in {self.wins:.0%} of {self.rounds} '
                f'interleaved rounds ({self.ratio:.2f}x): {state}')


def interleave(sessions: Dict[str, Session], results: Dict[str, CandidateResult],
               x, budget_s: float, runs_per_round: int = 5, min_rounds: int = 4,
               max_rounds: int = 40, confidence: float = 0.8, meter=None,
               model: str = '', cancel=None, gate: Optional[ComputeGate] = None) -> Ranking:
    """Time the leading candidates in interleaved rounds until the ranking is settled.

    Each round runs every candidate ``runs_per_round`` times in a row (one
    untimed run first, after the previous library), the order rotating each
    round, so load that comes and goes hits all of them alike. After
    ``min_rounds``, the ranking is settled when the leader (lowest median over
    all rounds) beat the runner-up's round median in at least ``confidence``
    of the rounds. Each result's figures are replaced by its interleaved ones.
    ``x``: the input, or {input kind: input} when the sessions take different
    kinds; the ranking is on frame cost (each result's ``pre_ms`` added).
    ``gate``: the process's compute gate, held alone for each timed run.
    """
    feeds = x if isinstance(x, dict) else None

    def pre(name: str) -> float:
        return results[name].pre_ms if name in results else 0.0

    names = list(sessions)
    times: Dict[str, List[float]] = {n: [] for n in names}
    energy: Dict[str, List] = {n: [] for n in names}
    medians: Dict[str, List[float]] = {n: [] for n in names}
    ranking = Ranking(leader=names[0] if names else '')
    if len(names) < 2:
        return ranking
    deadline = time.perf_counter() + budget_s
    for r in range(max_rounds):
        if cancel is not None and cancel.is_set():
            break
        k = r % len(names)
        for name in names[k:] + names[:k]:
            sess = sessions[name]
            feed = feeds[input_kind(sess)] if feeds is not None else x
            block: List[float] = []
            try:
                sess.run(feed)
                for _ in range(runs_per_round):
                    _timed_run(sess, feed, meter, model, block, energy[name], gate)
            except Exception as exc:  # a candidate failing mid-run leaves the running
                results[name].status = 'failed'
                results[name].reason = f'{name}: run: {first_line(exc)}'
                block = []
            if block:
                times[name] += block
                medians[name].append(float(np.median(block)) + pre(name))
        names = [n for n in names if results[n].status == 'ok' or n not in results]
        if len(names) < 2:
            break
        ranking.rounds = r + 1
        overall = {n: float(np.median(times[n])) + pre(n) for n in names}
        order = sorted(names, key=lambda n: overall[n])
        ranking.leader, ranking.runner_up = order[0], order[1]
        won = sum(a < b for a, b in zip(medians[order[0]], medians[order[1]]))
        ranking.wins = won / ranking.rounds
        ranking.ratio = overall[order[1]] / overall[order[0]]
        ranking.settled = ranking.rounds >= min_rounds and ranking.wins >= confidence
        if ranking.settled or time.perf_counter() > deadline:
            break
    for n in times:
        if times[n] and results[n].status != 'failed':
            res = results[n]
            _fill_times(res, times[n])
            _fill_energy(res, energy[n])
            res.rounds = len(medians[n])
    return ranking


@dataclass
class ProfileRun:
    """Per-model outcome: every candidate's result and the selection."""

    model: str
    results: List[CandidateResult] = field(default_factory=list)
    chosen: Optional[str] = None
    why: str = ''
    from_cache: Dict[str, bool] = field(default_factory=dict)
    ranking: Optional[Ranking] = None
    conditions: Dict[str, float] = field(default_factory=dict)  # load while measuring
    notes: List[str] = field(default_factory=list)
