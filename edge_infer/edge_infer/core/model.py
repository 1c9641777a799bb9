# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A model ready to run: registry entry + backend session + pre/post-processing."""

import copy
from dataclasses import dataclass
import pathlib
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .backend import Backend, BackendError, input_kind, open_session, Session
from .image import Frame
from .postprocess import Classes, Detections
from .preprocess import Preprocessor
from .registry import ModelSpec
from ..checksums import sha256_file


@dataclass
class Result:
    """What one frame produced, with the time each stage took (milliseconds)."""

    output: Union[Detections, Classes]
    preprocess_ms: float
    inference_ms: float
    postprocess_ms: float
    backend: str = ''       # the backend that ran it (a runner-up may run a frame)
    devices: Tuple[str, ...] = ()   # the shared executor's device per segment ('': not split)
    batch: int = 1          # frames run together (inference_ms is the whole run's)


def model_file(spec: ModelSpec, models_dir: pathlib.Path,
               verify_checksum: bool = True) -> pathlib.Path:
    """Return the model's file path; BackendError when missing or not the registry's file."""
    path = pathlib.Path(models_dir) / spec.file
    if not path.is_file():
        raise BackendError(f"model '{spec.name}': file {path} not found "
                           f'(run the set-up: python -m edge_infer.data prepare)')
    if verify_checksum and spec.sha256:
        actual = sha256_file(path)
        if actual != spec.sha256:
            raise BackendError(f"model '{spec.name}': {path} has sha256 {actual[:12]}..., "
                               f'registry expects {spec.sha256[:12]}... '
                               f'(file replaced or corrupt)')
    return path


def rows_floor_refusal(session, decode) -> str:
    """Return why ``session`` cannot feed ``decode`` ('' where it can).

    A Triton server may send only the cells whose best score reaches its
    floor (backends/libs/triton_rows.py): exact for a decoder keeping scores
    over a threshold at or over the floor, short of detections under it.
    """
    floor = float(getattr(session, 'rows_floor', 0.0) or 0.0)
    threshold = getattr(decode, 'score_threshold', None)
    if floor and threshold is not None and float(threshold) < floor:
        return (f'{session.backend_name} sends only the cells scoring {floor:g} or more '
                f'(edge_infer serve --rows-floor), and this node keeps scores over '
                f'{float(threshold):g}: serve with a lower --rows-floor (0 = dense outputs)')
    return ''


class Model:
    """Runs one registry model on one backend, frame by frame (not thread-safe).

    ``clock``: what the stage times are read from (``perf_counter()``); the
    time module, or a simulated clock in tests and benchmarks.
    """

    def __init__(self, spec: ModelSpec, backend: Backend, models_dir: pathlib.Path,
                 verify_checksum: bool = True, clock=time, **decoder_overrides):
        self.spec = spec
        self.clock = clock
        self.backend: Optional[Backend] = backend   # what opened the session (None: given one)
        self.path = path = model_file(spec, models_dir, verify_checksum)
        self.session: Optional[Session] = open_session(backend, path, spec.input_spec)
        self.backend_name = self.session.backend_name
        # input kind -> Preprocessor (shared by with_session copies)
        self._preprocessors: Dict[str, Preprocessor] = {}
        self.preprocess = self.preprocessor(input_kind(self.session))
        self.decode = spec.make_decoder(**decoder_overrides)
        why = rows_floor_refusal(self.session, self.decode)
        if why:
            self.session.close()
            raise BackendError(why)
        # the last preprocessed tensor (a reused buffer, no copy) and the frame it came from
        self.last_input: Optional[np.ndarray] = None
        self.last_frame: Optional[Frame] = None
        self._batch_in: Optional[np.ndarray] = None     # a batch session's input (reused)

    def preprocessor(self, kind: str) -> Preprocessor:
        """Return the Preprocessor that makes ``kind`` inputs (made once)."""
        pre = self._preprocessors.get(kind)
        if pre is None:
            pre = self._preprocessors[kind] = Preprocessor(self.spec.input_spec, kind)
        return pre

    def with_session(self, session) -> 'Model':
        """Return a Model running ``session`` with this one's pre/post-processing (no reload)."""
        why = rows_floor_refusal(session, self.decode)
        if why:
            raise BackendError(why)
        other = copy.copy(self)     # every attribute shared, whatever __init__ sets later
        other.session, other.backend_name = session, session.backend_name
        other.backend = None
        other.preprocess = self.preprocessor(input_kind(session))
        return other

    def input_for(self, kind: str):
        """Return the last frame's input of ``kind`` (prepared again where the kind differs)."""
        if self.last_input is None or kind == input_kind(self.session):
            return self.last_input
        assert self.last_frame is not None      # set with last_input
        return self.preprocessor(kind)(self.last_frame)[0]

    def infer(self, frame: Frame,
              around_run: Optional[Callable[[], Callable[[], None]]] = None) -> Result:
        """Preprocess, run and decode one frame.

        ``around_run``: called just before the model run; the callable it
        returns is called just after (also when the run raises). The energy
        meter marks its window with it.
        """
        clock = self.clock
        t0 = clock.perf_counter()
        tensor, tf = self.preprocess(frame)
        self.last_input, self.last_frame = tensor, frame
        # The meter's own work stays out of inference_ms: its window opens
        # before t1 and closes after t2, so it covers the timed run.
        finish = around_run() if around_run is not None else None
        t1 = clock.perf_counter()
        try:
            if self.session is None:
                raise BackendError(f'{self.backend_name}: the model is closed')
            outputs = self.session.run(tensor)
            t2 = clock.perf_counter()
        finally:
            if finish is not None:
                finish()
        t3 = clock.perf_counter()
        out = self.decode(outputs, tf)
        t4 = clock.perf_counter()
        return Result(out, (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t4 - t3) * 1e3,
                      self.backend_name, tuple(getattr(self.session, 'segment_devices', ())))

    def batched(self, n: int) -> 'Model':
        """Return this model on a new session of its backend running ``n`` frames a run.

        BackendError where the backend does not batch, or the model's graph
        cannot be re-made for it (:mod:`edge_infer.backends.libs.rebatch`).
        """
        if self.backend is None:
            raise BackendError(f'{self.backend_name}: not opened from a backend here')
        session = open_session(self.backend, self.path, self.spec.input_spec, batch=n)
        other = self.with_session(session)
        other.backend, other._batch_in = self.backend, None
        return other

    def prepare_batch(self, frames: Sequence[Frame]) -> Tuple[np.ndarray, list]:
        """Return (the batch session's input, each frame's transform); fewer frames padded."""
        assert self.session is not None
        n = self.session.batch
        if not 0 < len(frames) <= n:
            raise ValueError(f'{len(frames)} frames for a batch of {n}')
        transforms = []
        for i, frame in enumerate(frames):
            tensor, tf = self.preprocess(frame)     # a reused buffer: copied in at once
            if i == 0 and (self._batch_in is None or
                           self._batch_in.shape[1:] != tensor.shape[1:]):
                self._batch_in = np.empty((n,) + tensor.shape[1:], tensor.dtype)
            batch = self._batch_in
            assert batch is not None
            batch[i] = tensor[0]
            transforms.append(tf)
        batch_in = self._batch_in
        assert batch_in is not None
        batch_in[len(frames):] = batch_in[len(frames) - 1]
        return batch_in, transforms

    def infer_batch(self, frames: Sequence[Frame],
                    around_run: Optional[Callable[[], Callable[[], None]]] = None
                    ) -> List[Result]:
        """Preprocess each frame, run them together, decode each: one Result a frame.

        The session runs ``session.batch`` frames; fewer are padded with the
        last one (the run costs the same). Each Result's ``inference_ms`` is
        the whole run's, ``batch`` how many frames it carried.
        """
        clock, session = self.clock, self.session
        if session is None:
            raise BackendError(f'{self.backend_name}: the model is closed')
        t0 = clock.perf_counter()
        batch_in, transforms = self.prepare_batch(frames)
        t1 = clock.perf_counter()
        finish = around_run() if around_run is not None else None
        t2 = clock.perf_counter()
        try:
            outputs = session.run(batch_in)
            t3 = clock.perf_counter()
        finally:
            if finish is not None:
                finish()
        results = []
        pre_ms, run_ms = (t1 - t0) * 1e3 / len(frames), (t3 - t2) * 1e3
        devices = tuple(getattr(session, 'segment_devices', ()))
        for i, tf in enumerate(transforms):
            t4 = clock.perf_counter()
            out = self.decode([o[i:i + 1] for o in outputs], tf)
            results.append(Result(out, pre_ms, run_ms, (clock.perf_counter() - t4) * 1e3,
                                  self.backend_name, devices, len(frames)))
        return results

    def close(self) -> None:
        """Free the backend session."""
        if self.session is not None:
            self.session.close()
            self.session = None


def open_model(spec: ModelSpec, backend: Backend, models_dir: Optional[pathlib.Path] = None,
               **kw) -> Model:
    """Open ``spec`` from ``models_dir`` (default: the data home's models/)."""
    if models_dir is None:
        from ..paths import models_dir as default_dir
        models_dir = default_dir()
    return Model(spec, backend, models_dir, **kw)
