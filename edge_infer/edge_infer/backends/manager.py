# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The backend manager: every candidate probed, each model measured on each, one chosen.

    manager = BackendManager(cache_dir, config=load_config())
    backend, run = manager.choose(spec, model_path, objective='latency')
    session = open_session(backend, model_path, spec.input_spec)

Steps (each logged):
1. candidates: ONNX Runtime providers (CPU once per thread setting), OpenCV
   DNN targets, the numpy BLAS path, fp16 / int8 variants of the model on
   ONNX Runtime CPU, OpenVINO CPU (f32 and the device's native precision) and
   ncnn (CPU fp32 / fp16, Vulkan) (config/backends.yaml says which);
2. probe: a candidate is available only if a small probe model ran on it and
   matched ONNX Runtime CPU (:func:`profiling.probe_backend`); results cached;
3. profile, per model: accuracy against the CPU fp32 reference on real
   frames, warm-up, timed runs within a time budget (a candidate clearly
   slower than the best so far is cut short after a few runs), energy per
   inference when a power meter is given; results cached per (model, candidate);
4. select by objective under constraints (:mod:`selection`).

A warm start reads steps 2-3 from the cache and loads only the chosen
session.
"""

import os
import pathlib
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from .config import DEFAULTS, load_config
from .measure.cache import board_fingerprint, entry_key, ProfileCache
from .measure.memory import release_freed_memory
from .measure.profiling import calibration_frames, probe_backend, ProfileRun
from .measure.selection import OBJECTIVES, select
from .profiler import usable as _usable
from .runtime import Runtime
from ..core.backend import Backend, BackendError
from ..core.registry import ModelSpec

Log = Callable[[str], None]

# Part of every profile's cache key: bump when the accuracy check changes, so
# candidates accepted by an older check are measured again (v2: a detector frame that
# loses all its objects counts; v3: frames over the whole video; v4: a classifier's
# top-1 flip between tied classes agrees; v5: the video's second half + photos; v6: 24
# frames, a classifier on its clear frames, intervals; v7: the authors' preprocessing).
ACCURACY_CHECK_VERSION = 7
# What a cached profile's figures cover: the run, with the CPU preprocessing
# of the candidate's input kind beside it (CandidateResult.frame_ms).
FIGURES = 'run+preprocess_ms'


class BackendManager:
    """Probes candidates, profiles models on them, chooses, caches (thread-safe).

    ``thread_budget`` (threads one model may use, 0 = no cap) and
    ``thread_budget_why``: see :meth:`cap_threads`.
    """

    def __init__(self, cache_dir: Optional[pathlib.Path] = None, config: Optional[dict] = None,
                 log: Log = print, meter=None, root: str = '/',
                 runtime: Optional[Runtime] = None):
        from .. import paths
        self.cache_dir = pathlib.Path(cache_dir) if cache_dir else paths.data_home() / 'cache'
        self.config: Dict[str, Any] = dict(DEFAULTS)
        self.config.update(config or {})
        self.log = log
        self.meter = meter
        self.board = board_fingerprint(root)
        self.cache = ProfileCache(self.cache_dir / 'backend_profiles.json', log=log)
        self._lock = threading.RLock()
        self._frames = None
        self.thread_budget = 0
        self.thread_budget_why = ''
        self._cancel = None         # the running profile's cancel event (int8 quantizers)
        # what the process's models share (the gate, the settle queues, the
        # runner-up budget): the host's runtime, else one of its own
        self.runtime = runtime or Runtime()
        self.apart: Optional[Any] = None    # a MeasuringChild: measurements run there
        self.own_pids: Tuple[int, ...] = ()     # in a measuring child: the serving process

    def measure_apart(self) -> None:
        """Measure in a child process from now on (:mod:`.measure.apart`; the nodes do)."""
        from .measure.apart import MeasuringChild
        self.apart = self.apart or MeasuringChild(self, self.config['measure_apart_idle_s'])

    @property
    def settle_queue(self):
        """Return the runtime's settle queue: models settling first, completions after."""
        return self.runtime.settle_queue

    @property
    def completion_queue(self):
        """Return the runtime's completion queue: the lightest model first."""
        return self.runtime.completion_queue

    def profiling(self) -> bool:
        """Return True while a model of this process settles or completes its profile."""
        return bool(self.settle_queue.settling() or self.completion_queue.settling())

    def cap_threads(self, threads: int, why: str = '') -> None:
        """Cap the threads one model may use (0 = no cap): the container sets it.

        Profiling runs one model alone, so on a 2-core board every model would
        pick a 2-thread session; run together they then fight for the cores
        (measured in the demo: both models drifted 1.5-2.2x off their profile).
        With N models in one process the container caps each at cores // N
        (ONNX Runtime candidates above the cap are left out, OpenCV's pool is set
        to the cap; numpy's OpenBLAS pool is not capped: it is fixed at import).
        OpenCV's pool is process-wide: a budget serves one manager per process
        (:func:`shared_manager`).
        """
        capped_before = self.thread_budget > 0
        self.thread_budget = max(0, int(threads))
        self.thread_budget_why = why
        if threads <= 0 and capped_before:
            import cv2
            cv2.setNumThreads(-1)       # OpenCV's default pool again
        if threads > 0:
            # cap OpenCV's pool too, so the OpenCV DNN candidate is profiled
            # and run with the same share as the others
            import cv2
            cv2.setNumThreads(int(threads))

    # ---------------------------------------------------------------- candidates
    def candidates(self, spec: Optional[ModelSpec] = None,
                   model_path: Optional[pathlib.Path] = None) -> List[Backend]:
        """Return every configured candidate (variants only when a model is given)."""
        from .candidates import configured_candidates, remote_candidates, variant_candidates
        cfg = self.config
        out = configured_candidates(cfg, self.cache_dir, self.log)
        if spec is not None and model_path is not None:
            floor = self.min_accuracy(spec)
            frames = (int(cfg['int8_calibration_frames']), int(cfg['int8_validation_frames']))

            def settings() -> tuple:
                return spec, floor, frames, self._cancel
            out += variant_candidates(cfg, self.cache_dir, self.thread_budget, settings,
                                      self.log, model_path)
            out += remote_candidates(cfg, spec.name, model_path)
        excluded = set(cfg['exclude'] or ())
        return [b for b in out if b.name not in excluded]

    def over_budget(self, backend: Backend) -> str:
        """Return why a candidate exceeds the process's thread budget ('' if it does not)."""
        cap = self.thread_budget
        base = getattr(backend, 'base', backend)
        threads = getattr(base, 'intra_op_threads', 0) or getattr(base, 'threads', 0)
        if cap and threads > cap:
            return (f'needs {threads} threads; thread budget {cap} per model'
                    + (f' ({self.thread_budget_why})' if self.thread_budget_why else ''))
        return ''

    def _cached(self, parts: dict) -> Tuple[Optional[dict], bool]:
        """Return a candidate's cached figures and whether they are a ``loaded`` entry.

        The quiet profile first; else the figures taken under load, kept apart
        (the ``loaded`` entry: not the board's profile).
        """
        hit = self.cache.get(entry_key(parts))
        if hit is not None:
            return hit, False
        hit = self.cache.get(entry_key({**parts, 'loaded': True}))
        return hit, hit is not None

    def _versions_key(self, backend: Backend) -> dict:
        return {'board': self.board, 'backend': backend.name, 'options': backend.options(),
                'versions': backend.versions()}

    # --------------------------------------------------------------------- probe
    def probe(self, backend: Backend, use_cache: bool = True) -> Tuple[bool, str]:
        """Return (available, reason) for one candidate (cached by board and versions)."""
        ok, found = backend.available()     # cheap, never cached: a new driver shows at once
        if not ok or getattr(backend, 'remote', False):     # a server: asked, never cached
            return ok, found
        parts = {'kind': 'probe', 'found': found, **self._versions_key(backend)}
        key = entry_key(parts)
        if use_cache:
            hit = self.cache.get(key)
            if hit is not None:
                return bool(hit['ok']), hit['reason'] + ' (cached)'
        # A variant converts the model itself: its base runs the probe, and the
        # conversion is judged by the accuracy check against fp32 when profiling.
        target = getattr(backend, 'base', backend)
        ok, reason = probe_backend(target, self.cache_dir)
        if target is not backend:
            reason = f'{reason} (probe on {target.name}; the variant is judged by accuracy)'
        if ok:      # failures are not cached: the next start tries again
            self.cache.put(key, {'ok': ok, 'reason': reason}, parts)
        return ok, reason

    def probe_all(self, use_cache: bool = True) -> List[Tuple[Backend, bool, str]]:
        """Probe every model-independent candidate."""
        return [(b, *self.probe(b, use_cache)) for b in self.candidates()]

    # ------------------------------------------------------------------- profile
    def _frames_for(self):
        if self._frames is None:
            self._frames = calibration_frames(int(self.config['calibration_frames']),
                                              log=self.log)
        return self._frames

    def select(self, results, spec: ModelSpec, objective: str = 'latency',
               max_latency_ms: float = 0.0, min_accuracy: float = 0.0,
               latency_percentile: int = 0):
        """Return (chosen result or None, why) under the manager's tail guard."""
        return select(results, objective, max_latency_ms, self.min_accuracy(spec, min_accuracy),
                      latency_percentile=int(latency_percentile or
                                             self.config['latency_percentile']),
                      tail_guard=float(self.config['tail_guard']))

    def min_accuracy(self, spec: ModelSpec, override: float = 0.0) -> float:
        """Return the accuracy floor for the model's task (an override > 0 wins)."""
        if override and override > 0:
            return float(override)
        floors = self.config['min_accuracy']
        return float(floors.get(spec.task, 0.9) if isinstance(floors, dict) else floors)

    def profile(self, spec: ModelSpec, model_path: pathlib.Path, use_cache: bool = True,
                min_accuracy: float = 0.0, budget_s: Optional[float] = None,
                only: Optional[Sequence[str]] = None, cancel=None,
                persist: bool = True, progress: Optional[Callable[[dict], None]] = None,
                measure: bool = True, others: str = '', screen: float = 0.0) -> ProfileRun:
        """Measure every candidate on the model (cached entries reused); return the run.

        Two passes: each candidate alone (load, accuracy, ``screen_s`` of timed
        runs, cut short when clearly slower than the best so far), then the
        leaders (accepted, within ``lead_factor`` of the best) side by side in
        interleaved rounds until the ranking is settled or ``budget_s`` per
        leader is spent (:func:`profiling.interleave`). The foreign CPU load
        during the whole run is recorded (:mod:`load`). The board's profile
        (the cache) only ever receives quiet measurements: figures taken under
        more than ``quiet_foreign_cores`` of foreign load go to a separate
        ``loaded`` entry, read only while no quiet one exists (and said so),
        and a run with ``persist`` False (run-time re-evaluations) is never
        written at all.
        ``cancel`` (a threading.Event): stop between candidates / rounds.
        ``measure`` False: only what the cache holds; a candidate without
        figures is listed as ``unmeasured`` (nothing is loaded or run: for a
        provisional choice, :mod:`.live.startup`). ``others``: list the candidates
        ``only`` left out as ``unmeasured`` for this reason (or ``unavailable``).
        ``progress``: called with a dict (model, step, total, what, doing,
        elapsed_s, left_s) before each measurement; by default one log line.
        ``screen`` (a factor, 0: off): a candidate not yet measured whose time
        on this board's other models is at least this many times their best
        is not measured but cached as ``screened`` (:func:`.measure.settle.dominated`).
        """
        from .profiler import profile
        return profile(self, spec, model_path, use_cache=use_cache, min_accuracy=min_accuracy,
                       budget_s=budget_s, only=only, cancel=cancel, persist=persist,
                       progress=progress, measure=measure, others=others, screen=screen)

    def _to_measure(self, b: Backend, spec: ModelSpec, sha: str, floor: float,
                    use_cache: bool) -> bool:
        """Return True when a profile would measure ``b``.

        Within the thread budget, without usable cached figures, and available:
        asked last, so ``available()`` runs only for the uncached ones.
        """
        if self.over_budget(b):
            return False
        if use_cache and _usable(self._cached(self._profile_parts(spec, sha, floor, b))[0]):
            return False
        return b.available()[0]

    def _profile_parts(self, spec: ModelSpec, sha: str, floor: float, backend) -> dict:
        """Return what keys a profile entry: model file, check, board, backend, versions."""
        return {'kind': 'profile', 'model': spec.name, 'model_sha256': sha,
                'accuracy_check': ACCURACY_CHECK_VERSION, 'min_accuracy': floor,
                'preprocess': [spec.input_spec, spec.preprocess],   # both paths judged
                'metered': self.meter is not None, 'figures': FIGURES,
                **self._versions_key(backend)}

    # -------------------------------------------------------------------- choose
    def choose(self, spec: ModelSpec, model_path: pathlib.Path, objective: str = 'latency',
               max_latency_ms: float = 0.0, min_accuracy: float = 0.0,
               force: str = '', use_cache: bool = True,
               latency_percentile: int = 0,
               progress: Optional[Callable[[dict], None]] = None,
               cancel=None,
               only: Union[None, Sequence[str], Callable[[], Optional[Sequence[str]]]] = None,
               screen: float = 0.0) -> Tuple[Backend, ProfileRun]:
        """Profile (or read the cache) and return the chosen backend with the run.

        ``cancel`` (a threading.Event): a background profile stops at its next
        check and BackendError says so. ``only``: measure and choose among
        these candidates (a settle phase, :mod:`.measure.settle`), or a function that
        returns them, called when this model's turn comes. ``screen``: see
        :meth:`profile`.
        """
        if objective not in OBJECTIVES:
            raise ValueError(f"objective '{objective}': use one of {', '.join(OBJECTIVES)}")
        # one model measured at a time; a background profile waiting for another
        # model's can be cancelled while it waits (a shutdown of two detectors
        # waited for the other's whole profile: 20 s, and the container was killed)
        while not self._lock.acquire(timeout=0.1):
            if cancel is not None and cancel.is_set():
                raise BackendError(f"model '{spec.name}': profile cancelled")
        try:
            if callable(only):      # decided once this model's turn came (a prior may exist now)
                only = only()
            run = self.profile(spec, model_path, use_cache=use_cache, min_accuracy=min_accuracy,
                               only=[force] if force else only, progress=progress,
                               cancel=cancel, screen=0.0 if force else screen,
                               others='' if force else 'measured after the likely ones')
            if force and any(r.backend == force and r.status == 'screened'
                             for r in run.results):     # a completion's guess, not a measurement
                run = self.profile(spec, model_path, use_cache=False, min_accuracy=min_accuracy,
                                   only=[force], progress=progress, cancel=cancel)
        finally:
            self._lock.release()
        if cancel is not None and cancel.is_set():
            raise BackendError(f"model '{spec.name}': profile cancelled")
        if not all(run.from_cache.get(r.backend, False) for r in run.results
                   if r.status == 'ok'):
            release_freed_memory()
        by_name = {b.name: b for b in self.candidates(spec, model_path)}
        if force:
            res = next((r for r in run.results if r.backend == force), None)
            if res is None:
                by_name = {b.name: b for b in self.candidates(spec, model_path)}
                raise BackendError(f"backend '{force}' is not a candidate "
                                   f"(candidates: {', '.join(sorted(by_name))})")
            if res.status != 'ok':
                raise BackendError(f"backend '{force}' is {res.status}: {res.reason}")
            chosen, why = res, f'{force}: forced by parameter'
        else:
            chosen, why = self.select(run.results, spec, objective, max_latency_ms,
                                      min_accuracy, latency_percentile)
            if chosen is None:
                raise BackendError(f"model '{spec.name}': {why}")
            if run.ranking is not None and run.ranking.runner_up:
                why += f'; {run.ranking.describe()}'
            why += ''.join(f'; {n}' for n in run.notes)
        for r in run.results:
            r.chosen = r is chosen
        run.chosen, run.why = chosen.backend, why
        return by_name[chosen.backend], run


def default_cache_dir() -> pathlib.Path:
    """Return the cache directory ($EDGE_INFER_HOME/cache)."""
    from .. import paths
    return pathlib.Path(os.environ.get('EDGE_INFER_CACHE', paths.data_home() / 'cache'))


def shared_manager(runtime: Runtime, cache_dir: Optional[pathlib.Path] = None, meter=None,
                   log: Log = print) -> BackendManager:
    """Return ``runtime``'s manager for ``cache_dir`` (one per directory, config from file)."""
    cache_dir = pathlib.Path(cache_dir) if cache_dir else default_cache_dir()
    with runtime.managers_lock:
        mgr = runtime.managers.get(str(cache_dir))
        if mgr is None:
            mgr = BackendManager(cache_dir, config=load_config(), log=log, meter=meter,
                                 runtime=runtime)
            if mgr.config['measure_apart']:
                mgr.measure_apart()     # the serving process keeps only what it serves
            runtime.managers[str(cache_dir)] = mgr
        elif meter is not None and mgr.meter is None:
            mgr.meter = meter
        return mgr
