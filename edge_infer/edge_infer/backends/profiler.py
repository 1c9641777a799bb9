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
    """Measure every candidate of ``mgr`` on the model (``BackendManager.profile``)."""
    model_path = pathlib.Path(model_path)
    sha = sha256_kept(model_path)
    floor = mgr.min_accuracy(spec, min_accuracy)
    cfg = mgr.config
    run = ProfileRun(model=spec.name)
    reference = None
    cands = mgr.candidates(spec, model_path)
    left_out = [b for b in cands if only and b.name not in set(only)] if others else []
    if only:
        cands = [b for b in cands if b.name in set(only)]
    if measure and mgr.apart is not None and any(
            mgr._to_measure(b, spec, sha, floor, use_cache) for b in cands):
        return mgr.apart.profile(
            spec, model_path, cancel=cancel, progress=progress, use_cache=use_cache,
            min_accuracy=min_accuracy, budget_s=budget_s,
            only=list(only) if only else None, persist=persist, others=others,
            screen=screen)
    t_start = time.monotonic()
    mgr._cancel = cancel
    skip = dominated(mgr, spec, screen) if screen else {}
    probe = LoadProbe(also=mgr.own_pids).start()
    best_ms = float('inf')     # fastest accepted p50 so far: slower ones are cut short
    screened: List[float] = []      # seconds each fresh candidate took (for the estimate)
    # candidates that will really be measured: not cached, within budget, present
    todo = sum(mgr._to_measure(b, spec, sha, floor, use_cache) for b in cands)
    fresh: Dict[str, Tuple[str, dict]] = {}     # name -> cache key and parts
    open_sessions: Dict[str, Session] = {}
    results: Dict[str, CandidateResult] = {}
    try:
        for i, backend in enumerate(cands, 1):
            if cancel is not None and cancel.is_set():
                break
            parts = mgr._profile_parts(spec, sha, floor, backend)
            key = entry_key(parts)
            over = mgr.over_budget(backend)
            if over:
                run.results.append(describe(backend, status='unavailable', reason=over))
                run.from_cache[backend.name] = False
                continue
            hit, provisional = mgr._cached(parts) if use_cache else (None, False)
            if hit is not None and provisional:
                run.notes.append(f'{backend.name}: cached figures were taken under '
                                 f'{describe_load(hit.get("conditions", {}))} '
                                 f'(provisional: no quiet profile yet)')
            if hit is not None and usable(hit):
                res = CandidateResult.from_dict(hit)
                run.from_cache[backend.name] = True
            elif not measure:
                ok, why = backend.available()
                res = describe(backend, status='unmeasured' if ok else 'unavailable',
                               reason='not profiled yet' if ok else why)
                run.from_cache[backend.name] = False
            elif backend.name in skip:  # dominated elsewhere on this board: cached as such
                run.from_cache[backend.name] = False
                res = describe(backend, status='screened', reason=skip[backend.name],
                               lasting=True)
                fresh[backend.name] = (key, parts)
                results[backend.name] = res
            else:   # only measurements are reused; unavailable / failed ones are tried again
                run.from_cache[backend.name] = False
                ok, why = mgr.probe(backend, use_cache)
                if not ok:
                    res = describe(backend, status='unavailable', reason=why)
                else:
                    if reference is None:
                        frames, what = mgr._frames_for()
                        reference = Reference(spec, model_path, frames, what)
                    report_progress(progress, mgr.log, cfg, spec.name, i, len(cands),
                                    backend.name, 'load, accuracy check, timing alone',
                                    time.monotonic() - t_start, screened,
                                    todo - len(screened))
                    t_cand = time.monotonic()
                    res, sess = screen_candidate(
                        backend, spec, model_path, reference,
                        budget_s=float(cfg['screen_s']), warmup=int(cfg['warmup']),
                        min_runs=int(cfg['min_runs']), meter=mgr.meter,
                        min_accuracy=floor,
                        cut_ms=float(cfg['cut_factor']) * best_ms,
                        cut_runs=int(cfg['cut_runs']),
                        judge_min_frames=int(cfg['judge_min_frames']),
                        judge_s=float(cfg['judge_s']))
                    screened.append(time.monotonic() - t_cand)
                    add_variant_note(backend, model_path, res)
                    if sess is not None:
                        open_sessions[backend.name] = sess
                    fresh[backend.name] = (key, parts)
                results[backend.name] = res
            if res.status == 'ok' and not res.cut_short:
                best_ms = min(best_ms, res.frame_ms)
            run.results.append(res)
            # hold only the sessions that can still lead (memory: every screened
            # session stayed open until the loop ended, 1.27 GB for nanodet's 20)
            if keep_leaders(open_sessions, results, best_ms, float(cfg['lead_factor']),
                            int(cfg['max_leaders'])):
                release_freed_memory(collect=False)     # closed: no cycle to collect
        # what is still open are the leaders (kept against the final best)
        leaders = sorted(open_sessions, key=lambda n: results[n].frame_ms)
        if len(leaders) >= 2 and reference is not None and not (
                cancel is not None and cancel.is_set()):
            budget = float(budget_s or cfg['budget_s']) * len(leaders)
            report_progress(progress, mgr.log, cfg, spec.name, len(cands), len(cands),
                            ', '.join(leaders), 'side by side in interleaved rounds',
                            time.monotonic() - t_start, [], 0, extra_s=budget)
            run.ranking = interleave(
                {n: open_sessions[n] for n in leaders}, results,
                reference.first_inputs(),
                budget_s=budget,
                runs_per_round=int(cfg['round_runs']), min_rounds=int(cfg['min_rounds']),
                confidence=float(cfg['confidence']), meter=mgr.meter, model=spec.name,
                cancel=cancel)
    finally:
        for sess in open_sessions.values():
            sess.close()
    run.conditions = probe.stop()
    quiet = is_quiet(run.conditions, float(cfg['quiet_foreign_cores']))
    for name, (key, parts) in fresh.items():
        res = results[name]
        res.conditions = dict(run.conditions)
        if persist and (res.status in ('ok', 'rejected') or res.lasting):
            if quiet or res.lasting:    # an unsupported operator does not depend on load
                mgr.cache.put(key, res.to_dict(), parts)
            else:       # kept apart: never shadows (or becomes) the quiet profile
                mgr.cache.put(entry_key({**parts, 'loaded': True}), res.to_dict(),
                              {**parts, 'loaded': True})
    if fresh:
        where = describe_load(run.conditions)
        mgr.log(f'[profile {spec.name}] {len(fresh)} candidate(s) measured in '
                f'{time.monotonic() - t_start:.1f} s ({where}), '
                f'{sum(run.from_cache.values())} from cache'
                + (f'; {run.ranking.describe()}' if run.ranking else ''))
        if not quiet and persist:
            note = (f'measured under {where} (> {cfg["quiet_foreign_cores"]:g} cores of '
                    "other work): NOT stored as the board's profile (kept as a "
                    f'provisional one until a quiet measurement exists)')
            run.notes.append(note)
            mgr.log(f'[profile {spec.name}] {note}')
    for b in left_out:      # still listed: the report names every candidate
        hit = (mgr._cached(mgr._profile_parts(spec, sha, floor, b))[0]
               if use_cache and not mgr.over_budget(b) else None)
        # measured before (it may have served provisionally): say so
        if hit is not None and usable(hit):
            run.results.append(CandidateResult.from_dict(hit))
            run.from_cache[b.name] = True
            continue
        ok, why = (False, mgr.over_budget(b)) if mgr.over_budget(b) else b.available()
        run.results.append(describe(b, status='unmeasured' if ok else 'unavailable',
                                    reason=others if ok else why))
    return run


def usable(hit: Optional[dict]) -> bool:
    """Return True for cached figures a profile reuses: measured ones and lasting failures."""
    return hit is not None and (hit.get('status') in ('ok', 'rejected')
                                or bool(hit.get('lasting')))
