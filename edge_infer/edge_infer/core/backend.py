# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Inference backends behind one small interface.

A :class:`Backend` names a library and device and opens a :class:`Session` per
model file; a session runs one input tensor and returns the outputs in the
model's output order. The libraries (ONNX Runtime, OpenVINO, ncnn, OpenCV
DNN, numpy-BLAS, the shared executor) live in ``backends/`` and ``executor/``;
the backend manager probes, measures and chooses among them.

Most sessions take the model's own float input; a backend whose
``input_kind`` is ``'u8'`` takes the resized uint8 frame and does the rest of
the preprocessing inside its compiled graph (see core/preprocess.py). It is
opened with the model's input spec: use :func:`open_session`.
"""

import pathlib
from typing import Dict, List, Tuple

import numpy as np


class BackendError(RuntimeError):
    """A backend cannot load or run a model; the message says why."""


class UnsupportedModel(BackendError):
    """The library cannot run this model at all: an operator or a shape it lacks.

    The same file on the same library version fails the same way, so a
    profile keeps this verdict in its cache instead of loading the library
    again at every start to learn it.
    """


def first_line(exc: BaseException) -> str:
    """Return the first line of an exception's message (its type when empty)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class Session:
    """An opened model on one backend."""

    backend_name: str = ''
    input_kind: str = 'float'       # what run() takes: core.preprocess.INPUT_KINDS
    batch: int = 1                  # frames per run (the input's leading dimension)
    input_name: str = ''
    output_names: List[str] = []

    def run(self, tensor: np.ndarray) -> List[np.ndarray]:
        """Run one input tensor; outputs may be reused buffers (consume before next run)."""
        raise NotImplementedError

    def close(self) -> None:
        """Free the session's memory."""


class Backend:
    """A library + device that can open sessions: one candidate of the backend manager.

    Attributes describe the candidate for reports and the profile cache:
    ``name`` is unique among candidates (e.g. ``onnxruntime/cpu/t2``,
    ``opencv-dnn/opencl-fp16``, ``numpy-blas/cpu``); ``library`` the
    inference library; ``device`` where the work runs (``cpu``, ``gpu:0``,
    ``opencl:<device name>``); ``precision`` the arithmetic (``fp32``,
    ``fp16``, ``int8``); ``tensor_passing`` how inputs and outputs cross into
    the library (``zero-copy io-binding``, ``copy``, ...).
    """

    name: str = ''
    library: str = ''
    device: str = 'cpu'
    precision: str = 'fp32'
    tensor_passing: str = 'copy'
    input_kind: str = 'float'       # the kind its sessions take (core.preprocess.INPUT_KINDS)
    batches: bool = False   # open_session takes ``batch`` (backends/libs/rebatch.py)

    def options(self) -> Dict[str, object]:
        """Return every setting that changes speed or results (part of the cache key)."""
        return {}

    def versions(self) -> Dict[str, str]:
        """Return the versions of the libraries this backend runs on (part of the cache key)."""
        return {}

    def available(self) -> Tuple[bool, str]:
        """Cheap check that the library and device exist: (ok, what was found or why not).

        The backend manager trusts nothing more than this without running a
        probe model on the backend and comparing it with the CPU reference.
        """
        return True, 'no check'

    def open_session(self, model_path: pathlib.Path, strict: bool = False,
                     input_spec=None) -> Session:
        """Open ``model_path`` in a session of this backend and return it, ready to run.

        ``strict``: no silent fallback to another device or provider; what
        the backend names must run the whole model, or opening fails (the
        probe uses it). ``input_spec``: the model's
        :class:`~edge_infer.core.preprocess.InputSpec`, needed by backends
        whose ``input_kind`` is ``'u8'`` (the normalisation goes into their
        graph); the others ignore it.
        """
        raise NotImplementedError


def open_session(backend: Backend, model_path: pathlib.Path, input_spec=None,
                 batch: int = 1) -> Session:
    """Open ``model_path`` on ``backend`` with the model's input spec.

    A ``'u8'`` backend cannot open it without the spec: BackendError says so.
    ``batch`` > 1: a session running that many frames at once, from a backend
    that ``batches``; BackendError from the others.
    """
    kind = input_kind(backend)
    if kind != 'float' and input_spec is None:
        raise BackendError(f'{backend.name} takes {kind} frames: it needs the '
                           "model's input spec to open the model")
    if batch == 1:
        return backend.open_session(model_path, input_spec=input_spec)
    if not getattr(backend, 'batches', False):
        raise BackendError(f'{backend.name} runs one frame at a time here (ONNX Runtime and '
                           f'OpenVINO sessions run batches)')
    session = backend.open_session(model_path, input_spec=input_spec,   # type: ignore[call-arg]
                                   batch=batch)
    session.batch = batch
    return session


def input_kind(obj) -> str:
    """Return what a backend's or session's ``run`` takes ('float' unless it says otherwise)."""
    return getattr(obj, 'input_kind', 'float')
