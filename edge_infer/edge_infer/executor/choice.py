# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The shared executor on the backend manager's measured choice (no ROS).

With ``executor_policy`` set, a model's segments run on the process-wide
shared executor. Which library and precision each segment may use comes
from the backend manager's profile of the whole model: its accepted
candidates (accuracy-checked against ONNX Runtime CPU fp32), best frame
cost first, that can run a segment (ONNX Runtime and OpenVINO on the CPU);
per device the executor then keeps the fastest measured one per segment.

The profile is read from the cache (``measure=False``): the executor does not
wait for a first profile. With nothing cached its segments run on ONNX
Runtime, and the reason says so (``edge_infer profile MODEL`` or one start
of the node without ``executor_policy`` fills the cache).

Online re-selection and drift do not run on the executor: it already places
every segment per frame by measured cost and backlog (``cost-model``), and
a switch of library would re-partition and re-measure every segment; a
failing device's jobs move to the other device instead of a fallback.
"""

import math
import pathlib
from typing import Callable, Tuple

from .backend import ExecutorBackend
from .core import SharedExecutor
from .segment_runners import libraries_of
from ..backends.measure.profiling import CandidateResult, ProfileRun
from ..core.registry import ModelSpec


def executor_choice(manager, spec: ModelSpec, model_path: pathlib.Path,
                    executor: SharedExecutor, instance: str,
                    log: Callable[[str], None] = print) -> Tuple[ExecutorBackend, ProfileRun]:
    """Return (the executor backend for ``spec``, the run that says what and why)."""
    cached = manager.profile(spec, pathlib.Path(model_path), measure=False)
    accepted = sorted((r for r in cached.results if r.status == 'ok' and
                       math.isfinite(r.p50_ms)), key=lambda r: r.frame_ms)
    libs = libraries_of(accepted, threads=executor.threads)
    backend = ExecutorBackend(executor, instance, libs)
    if accepted:
        basis = (f'segment libraries from the profile: {", ".join(x.name for x in libs)} '
                 f'(best accepted: {accepted[0].backend}, {accepted[0].frame_ms:.2f} ms per '
                 f'frame); each device keeps the fastest measured per segment')
    else:
        basis = ('no profile cached for this model: segments on ONNX Runtime (run '
                 '`edge_infer profile` once to give the executor the measured choice)')
    why = f'{backend.name}: shared executor, policy {executor.policy}; {basis}'
    log(why)
    run = ProfileRun(model=spec.name, chosen=backend.name, why=why,
                     from_cache=dict(cached.from_cache))
    run.results = list(cached.results) + [CandidateResult(
        backend.name, backend.library, backend.device, backend.precision,
        backend.tensor_passing, status='ok', chosen=True, reason=basis)]
    return backend, run
