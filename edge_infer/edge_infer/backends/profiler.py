# Copyright 2026 edge_infer contributors. Apache-2.0.
"""One model's profile: every candidate measured, or read from the cache (no ROS).

:meth:`.manager.BackendManager.profile` runs it; the manager keeps the
candidates, the probes, the cache and the choice. This module is the
measuring itself: each candidate alone (load, accuracy check, timing), the
leaders side by side in interleaved rounds, the foreign load recorded, and
the quiet figures cached as the board's profile.
"""

import pathlib
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .measure.cache import entry_key
from .measure.load_probe import describe as describe_load, is_quiet, LoadProbe
from .measure.memory import keep_leaders, release_freed_memory
from .measure.profiling import (CandidateResult, describe, interleave, ProfileRun, Reference,
                                screen_candidate)
from .measure.progress import report_progress
from .measure.settle import dominated
from .precision.variants import add_variant_note
from ..checksums import sha256_kept
from ..core.backend import Session
from ..core.registry import ModelSpec


def profile(mgr, spec: ModelSpec, model_path: pathlib.Path, use_cache: bool = True,
            min_accuracy: float = 0.0, budget_s: Optional[float] = None,
            only: Optional[Sequence[str]] = None, cancel=None, persist: bool = True,
            progress: Optional[Callable[[dict], None]] = None, measure: bool = True,
            others: str = '', screen: float = 0.0) -> ProfileRun:
    """Measure every candidate of ``mgr`` on the model (``BackendManager.profile``).

    The stages, in order: the candidates (``only`` these; the others listed
    as ``others`` says), each one cached or measured alone, the leaders side
    by side in rounds, the quiet figures stored, the left-out ones listed.
    """
    p = _Profile(mgr, spec, pathlib.Path(model_path), use_cache, min_accuracy, cancel,
                 progress)
    cands = p.cands
    left_out = [b for b in cands if only and b.name not in set(only)] if others else []
    if only:
        cands = [b for b in cands if b.name in set(only)]
    if measure and mgr.apart is not None and any(p.to_measure(b) for b in cands):
        return mgr.apart.profile(
            spec, p.model_path, cancel=cancel, progress=progress, use_cache=use_cache,
            min_accuracy=min_accuracy, budget_s=budget_s,
            only=list(only) if only else None, persist=persist, others=others,
            screen=screen)
    mgr._cancel = cancel
    skip = dominated(mgr, spec, screen) if screen else {}
    probe = LoadProbe(also=mgr.own_pids).start()
    todo = sum(p.to_measure(b) for b in cands)
    try:
        for i, backend in enumerate(cands, 1):
            if p.cancelled():
                break
            p.one(backend, i, len(cands), todo, measure, skip.get(backend.name))
        p.rounds(len(cands), budget_s)
    finally:
        p.close()
    p.store(probe.stop(), persist)
    p.list_left_out(left_out, others)
    return p.run


class _Profile:
    """One profile's state while its stages run: the run, the fresh results, the sessions."""

    def __init__(self, mgr, spec: ModelSpec, model_path: pathlib.Path, use_cache: bool,
                 min_accuracy: float, cancel, progress) -> None:
        self.mgr, self.spec, self.model_path = mgr, spec, model_path
        self.use_cache, self.cancel, self.progress = use_cache, cancel, progress
        self.sha = sha256_kept(model_path)
        self.floor = mgr.min_accuracy(spec, min_accuracy)
        self.cands = mgr.candidates(spec, model_path)
        self.run = ProfileRun(model=spec.name)
        self.reference: Optional[Reference] = None
        self.best_ms = float('inf')   # fastest accepted p50 so far: slower ones are cut short
        self.screened: List[float] = []     # seconds each fresh candidate took (the estimate)
        self.fresh: Dict[str, Tuple[str, dict]] = {}    # name -> cache key and parts
        self.sessions: Dict[str, Session] = {}
        self.results: Dict[str, CandidateResult] = {}
        self.t_start = time.monotonic()

    def cancelled(self) -> bool:
        """Return True once the caller cancelled the profile."""
        return self.cancel is not None and self.cancel.is_set()

    def to_measure(self, backend) -> bool:
        """Return True when ``backend`` would be measured (not cached, within budget, present)."""
        return self.mgr._to_measure(backend, self.spec, self.sha, self.floor, self.use_cache)

    def cached(self, backend) -> Optional[dict]:
        """Return the cache's figures for ``backend`` that a profile reuses, else None."""
        parts = self.mgr._profile_parts(self.spec, self.sha, self.floor, backend)
        hit, loaded = self.mgr._cached(parts) if self.use_cache else (None, False)
        if hit is not None and loaded:
            self.run.notes.append(f'{backend.name}: cached figures were taken under '
                                  f'{describe_load(hit.get("conditions", {}))} '
                                  f'(a loaded entry: no quiet profile yet)')
        return hit if hit is not None and usable(hit) else None

    def one(self, backend, i: int, n: int, todo: int, measure: bool,
            screened: Optional[str]) -> None:
        """Stage 1 for one candidate: over budget, cached, unmeasured, screened or measured."""
        parts = self.mgr._profile_parts(self.spec, self.sha, self.floor, backend)
        over = self.mgr.over_budget(backend)
        self.run.from_cache[backend.name] = False
        if over:
            self.run.results.append(describe(backend, status='unavailable', reason=over))
            return
        hit = self.cached(backend)
        if hit is not None:
            res = CandidateResult.from_dict(hit)
            self.run.from_cache[backend.name] = True
        elif not measure:
            ok, why = backend.available()
            res = describe(backend, status='unmeasured' if ok else 'unavailable',
                           reason='not profiled yet' if ok else why)
        elif screened is not None:  # dominated elsewhere on this board: cached as such
            res = describe(backend, status='screened', reason=screened, lasting=True)
            self.fresh[backend.name] = (entry_key(parts), parts)
            self.results[backend.name] = res
        else:   # only measurements are reused; unavailable / failed ones are tried again
            res = self.measure(backend, i, n, todo)
            self.fresh[backend.name] = (entry_key(parts), parts)
            self.results[backend.name] = res
        if res.status == 'ok' and not res.cut_short:
            self.best_ms = min(self.best_ms, res.frame_ms)
        self.run.results.append(res)
        # hold only the sessions that can still lead (memory: every screened
        # session stayed open until the loop ended, 1.27 GB for nanodet's 20)
        if keep_leaders(self.sessions, self.results, self.best_ms,
                        float(self.mgr.config['lead_factor']),
                        int(self.mgr.config['max_leaders'])):
            release_freed_memory(collect=False)     # closed: no cycle to collect

    def measure(self, backend, i: int, n: int, todo: int) -> CandidateResult:
        """Load, check and time ``backend`` alone; keep its session open as a possible leader."""
        mgr, cfg = self.mgr, self.mgr.config
        ok, why = mgr.probe(backend, self.use_cache)
        if not ok:
            return describe(backend, status='unavailable', reason=why)
        if self.reference is None:
            frames, what = mgr._frames_for()
            self.reference = Reference(self.spec, self.model_path, frames, what)
        report_progress(self.progress, mgr.log, cfg, self.spec.name, i, n, backend.name,
                        'load, accuracy check, timing alone',
                        time.monotonic() - self.t_start, self.screened,
                        todo - len(self.screened))
        t_cand = time.monotonic()
        res, sess = screen_candidate(
            backend, self.spec, self.model_path, self.reference,
            budget_s=float(cfg['screen_s']), warmup=int(cfg['warmup']),
            min_runs=int(cfg['min_runs']), meter=mgr.meter, min_accuracy=self.floor,
            cut_ms=float(cfg['cut_factor']) * self.best_ms, cut_runs=int(cfg['cut_runs']),
            judge_min_frames=int(cfg['judge_min_frames']), judge_s=float(cfg['judge_s']),
            gate=mgr.runtime.gate)
        self.screened.append(time.monotonic() - t_cand)
        add_variant_note(backend, self.model_path, res)
        if sess is not None:
            self.sessions[backend.name] = sess
        return res

    def rounds(self, n: int, budget_s: Optional[float]) -> None:
        """Stage 2: the leaders still open, side by side in interleaved rounds."""
        leaders = sorted(self.sessions, key=lambda name: self.results[name].frame_ms)
        if len(leaders) < 2 or self.reference is None or self.cancelled():
            return
        cfg = self.mgr.config
        budget = float(budget_s or cfg['budget_s']) * len(leaders)
        report_progress(self.progress, self.mgr.log, cfg, self.spec.name, n, n,
                        ', '.join(leaders), 'side by side in interleaved rounds',
                        time.monotonic() - self.t_start, [], 0, extra_s=budget)
        self.run.ranking = interleave(
            {name: self.sessions[name] for name in leaders}, self.results,
            self.reference.first_inputs(), budget_s=budget,
            runs_per_round=int(cfg['round_runs']), min_rounds=int(cfg['min_rounds']),
            confidence=float(cfg['confidence']), meter=self.mgr.meter, model=self.spec.name,
            cancel=self.cancel, gate=self.mgr.runtime.gate)

    def close(self) -> None:
        """Close every session still open."""
        for sess in self.sessions.values():
            sess.close()
        self.sessions.clear()

    def store(self, conditions: dict, persist: bool) -> None:
        """Stage 3: the fresh figures cached, quiet ones as the board's profile; one line."""
        mgr, cfg, run = self.mgr, self.mgr.config, self.run
        run.conditions = conditions
        quiet = is_quiet(conditions, float(cfg['quiet_foreign_cores']))
        for name, (key, parts) in self.fresh.items():
            res = self.results[name]
            res.conditions = dict(conditions)
            if persist and (res.status in ('ok', 'rejected') or res.lasting):
                if quiet or res.lasting:    # an unsupported operator does not depend on load
                    mgr.cache.put(key, res.to_dict(), parts)
                else:       # kept apart: never shadows (or becomes) the quiet profile
                    mgr.cache.put(entry_key({**parts, 'loaded': True}), res.to_dict(),
                                  {**parts, 'loaded': True})
        if not self.fresh:
            return
        where = describe_load(conditions)
        mgr.log(f'[profile {self.spec.name}] {len(self.fresh)} candidate(s) measured in '
                f'{time.monotonic() - self.t_start:.1f} s ({where}), '
                f'{sum(run.from_cache.values())} from cache'
                + (f'; {run.ranking.describe()}' if run.ranking else ''))
        if not quiet and persist:
            note = (f'measured under {where} (> {cfg["quiet_foreign_cores"]:g} cores of '
                    "other work): NOT stored as the board's profile (kept as a "
                    f'loaded entry until a quiet measurement exists)')
            run.notes.append(note)
            mgr.log(f'[profile {self.spec.name}] {note}')

    def list_left_out(self, left_out, others: str) -> None:
        """Stage 4: the candidates left out, still listed (the report names every one)."""
        for b in left_out:
            over = self.mgr.over_budget(b)
            # measured before (it may have served provisionally): say so
            hit = None if over else self.cached(b)
            if hit is not None:
                self.run.results.append(CandidateResult.from_dict(hit))
                self.run.from_cache[b.name] = True
                continue
            ok, why = (False, over) if over else b.available()
            self.run.results.append(describe(b, status='unmeasured' if ok else 'unavailable',
                                             reason=others if ok else why))


def usable(hit: Optional[dict]) -> bool:
    """Return True for cached figures a profile reuses: measured ones and lasting failures."""
    return hit is not None and (hit.get('status') in ('ok', 'rejected')
                                or bool(hit.get('lasting')))
