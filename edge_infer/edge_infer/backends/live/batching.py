# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Several cameras' frames in one run, where this board's measurement says it pays (no ROS).

A node serving N cameras may run up to N frames at once on a batch-N
session of the chosen backend (:meth:`~edge_infer.core.model.Model.batched`).
Whether that pays is a property of the board, the runtime and the model:
on this 2-core EPYC OpenVINO ran NanoDet int8 12 % faster a frame at batch 4
and ONNX Runtime no faster (bench/results/<machine>/multi_camera*.md). So it
is measured, as every other choice here:

1. the batch-N session is opened on the serving backend (one that cannot
   batch, or a graph that cannot be re-made, says why);
2. each frame's outputs of the batch run must equal the batch-1 session's
   (within 1 % of the output's range), or the batch is refused;
3. interleaved rounds on real frames (the judging frames of the bundled
   video) time N frames one at a time against one run of N; medians;
4. it pays when a frame costs ``MARGIN`` less in the batch. A partial batch
   of k frames costs as much as a full one: it runs as a batch only from
   ``min_frames`` = ceil(N x batch / single) frames, else one at a time.

With ``auto`` the batch session is closed after the measurement and opened
again (in the background, :meth:`BatchPlan.reopen`) only when that many
frames first wait at once: a lightly loaded node holds no batch session
(NanoDet int8's at batch 4: about 40 MB here) and never waits for one.
``on`` keeps it open from the start.

The verdict is cached in the profile cache by board, backend, library
versions, model and N, so the next start opens nothing (``auto``) or only
the session (``on``). The batch
is measured on the backend serving at configure; a later switch (online,
drift, fallback, a provisional start settling) serves one frame at a time
until the next configure (:meth:`BatchPlan.serves`).
"""

from dataclasses import dataclass
import math
import statistics
import time
from typing import Any, List, Optional

import numpy as np

from ..measure.cache import entry_key
from ..measure.frames import calibration_frames
from ...checksums import sha256_kept
from ...core.backend import BackendError, first_line
from ...core.model import Model

MODES = ('auto', 'on', 'off')   # the node's ``batching``: measured, always, never
MARGIN = 0.10       # a frame must cost this much less in the batch
ROUNDS = 7          # interleaved rounds (after one warm-up)
TOLERANCE = 0.01    # of an output's largest magnitude: a batch frame's outputs vs batch 1's


@dataclass
class BatchPlan:
    """How a node's frames are run: ``size`` at once from ``min_frames`` (1: one at a time)."""

    size: int = 1
    why: str = 'one camera'         # one line: the figures, or why not
    backend: str = ''               # the backend the batch runs on
    model: Optional[Model] = None   # the batch-``size`` session
    single_ms: float = math.nan     # a frame's median cost, one at a time
    batch_ms: float = math.nan      # a frame's median cost in a full batch
    min_frames: int = 2             # a partial batch below this runs one at a time
    source: Optional[Model] = None  # the batch-1 model the batch session is opened from
    opening: bool = False           # the batch session is being opened in the background

    def wanted(self, backend: str, frames: int) -> bool:
        """Return True when ``frames`` waiting frames would run as one batch on ``backend``."""
        return self.size > 1 and backend == self.backend and \
            self.min_frames <= frames <= self.size

    def serves(self, backend: str, frames: int) -> bool:
        """Return True when ``frames`` waiting frames run as one batch on ``backend`` now."""
        return self.model is not None and self.wanted(backend, frames)

    def reopen(self) -> None:
        """Open the batch session (the first time the load calls for it; any thread)."""
        if self.model is None and self.source is not None:
            self.model = self.source.batched(self.size)
        self.opening = False

    def close(self) -> None:
        """Free the batch session (:meth:`reopen` opens it again)."""
        if self.model is not None:
            self.model.close()
        self.model = None


def _raw(model: Model, frames) -> List[np.ndarray]:
    """Return the frames' raw outputs from ``model``'s session (copies; one run)."""
    assert model.session is not None
    if model.session.batch == 1:
        tensor = model.preprocess(frames[0])[0]
    else:
        tensor = model.prepare_batch(frames)[0]
    return [np.array(o) for o in model.session.run(tensor)]


def _differs(single: Model, batch: Model, frames) -> str:
    """Return how the batch's outputs differ from one-at-a-time's ('' : they agree)."""
    together = _raw(batch, frames)
    for i, frame in enumerate(frames):
        for k, (a, b) in enumerate(zip(_raw(single, [frame]), together)):
            scale = max(1e-6, float(np.abs(a).max(initial=0.0)))
            worst = float(np.abs(a - b[i:i + 1]).max(initial=0.0)) if a.shape == \
                b[i:i + 1].shape else math.inf
            if worst > TOLERANCE * scale:
                return (f'frame {i} of the batch, output {k}: differs from batch 1 by '
                        f'{worst:.3g} (its range {scale:.3g})')
    return ''


def _time(single: Model, batch: Model, frames, rounds: int) -> tuple:
    """Return (single, batch) median ms a frame over interleaved rounds (one warm-up)."""
    one, many = [], []
    for r in range(rounds + 1):
        t0 = time.perf_counter()
        for frame in frames:
            single.infer(frame)
        t1 = time.perf_counter()
        batch.infer_batch(frames)
        t2 = time.perf_counter()
        if r:
            one.append((t1 - t0) * 1e3 / len(frames))
            many.append((t2 - t1) * 1e3 / len(frames))
    return statistics.median(one), statistics.median(many)


def cache_parts(manager: Any, model: Model, n: int) -> dict:
    """Return the profile-cache key parts of ``model``'s batch-``n`` verdict."""
    backend = model.backend
    assert backend is not None
    return {'kind': 'batch', 'board': getattr(manager, 'board', {}), 'backend': backend.name,
            'options': backend.options(), 'versions': backend.versions(),
            'model': model.spec.name, 'model_sha256': sha256_kept(model.path), 'batch': n}


def plan_batch(model: Model, n: int, mode: str, manager: Any = None,
               rounds: int = ROUNDS) -> BatchPlan:
    """Return how to run ``n`` cameras' frames on ``model`` (``mode``: :data:`MODES`).

    ``auto``: a batch where it is measured to pay; ``on``: a batch whenever
    the backend and the graph allow one (BackendError says why not);
    ``off`` or one camera: one frame at a time. ``manager``: its profile
    cache keeps the verdict (None: measured every time).
    """
    if mode == 'off' or n < 2:
        return BatchPlan(why='off (batching: off)' if mode == 'off' else 'one camera')
    cache = getattr(manager, 'cache', None)
    parts = cache_parts(manager, model, n) if cache is not None and model.backend else None
    hit = cache.get(entry_key(parts)) if cache is not None and parts is not None else None
    if hit is not None and not hit.get('ok', True) and mode == 'auto':
        return BatchPlan(why=f"{hit['why']} (cached)", backend=model.backend_name)
    batch: Optional[Model] = None   # auto with a cached verdict: opened when the load calls
    if hit is None or mode == 'on':
        try:
            batch = model.batched(n)
        except BackendError as exc:
            if mode == 'on':
                raise
            return BatchPlan(why=f'one frame at a time: {first_line(exc)}',
                             backend=model.backend_name)
    plan = BatchPlan(n, '', model.backend_name, batch)
    if hit is not None:
        plan.single_ms, plan.batch_ms = hit['single_ms'], hit['batch_ms']
    else:
        assert batch is not None    # opened above: nothing cached
        frames, _ = calibration_frames(n)
        frames = (frames * n)[:n]
        differs = _differs(model, batch, frames)
        if differs:
            plan.close()
            if cache is not None and parts is not None:
                cache.put(entry_key(parts), {'ok': False, 'why': differs}, parts)
            if mode == 'on':
                raise BackendError(f'{model.backend_name} at batch {n}: {differs}')
            return BatchPlan(why=f'one frame at a time: batch {n} {differs}',
                             backend=model.backend_name)
        plan.single_ms, plan.batch_ms = _time(model, batch, frames, rounds)
        if cache is not None and parts is not None:
            cache.put(entry_key(parts), {'ok': True, 'single_ms': plan.single_ms,
                                         'batch_ms': plan.batch_ms, 'rounds': rounds}, parts)
    pays = plan.batch_ms <= plan.single_ms * (1 - MARGIN)
    figures = (f'{plan.batch_ms:.2f} ms a frame at batch {n} vs {plan.single_ms:.2f} one at '
               f'a time on {model.backend_name}' + (' (cached)' if hit is not None else ''))
    if not pays and mode == 'auto':
        plan.close()
        return BatchPlan(why=f'one frame at a time: {figures}, not {MARGIN:.0%} less',
                         backend=model.backend_name, single_ms=plan.single_ms,
                         batch_ms=plan.batch_ms)
    plan.min_frames = 2 if mode == 'on' else \
        max(2, min(n, math.ceil(n * plan.batch_ms / plan.single_ms)))
    plan.why = f'batches of up to {n} (from {plan.min_frames} frames waiting): {figures}'
    plan.source = model
    if mode == 'auto':      # opened again when the load first calls for it
        plan.close()
    return plan
