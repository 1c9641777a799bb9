# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A first result seconds after start: a provisional backend while the profile runs (no ROS).

Measuring every candidate on a first start (nothing cached) took 19-40 s per
model on a 2-core board, and the node served nothing meanwhile. Now a model
whose profile is incomplete starts on a **provisional** backend at once:

- the cache's choice among the candidates it already has figures for (a
  board that gained a library keeps its old choice meanwhile), else
- the first available candidate of ``start_order`` (config/backends.yaml)
  within the thread budget: ONNX Runtime on the CPU, the reference every
  candidate's accuracy is judged against (exact by definition), which loads
  in about 0.1 s.

The profile then runs in the background (:class:`.live.LiveChoice`) and the
measured choice takes over between two frames, with one log line and a
``BackendReport`` (trigger ``profiled``); every result names the backend
that ran it, so a subscriber sees the switch.

Our own frames must not slow the candidates being timed (the figures would
describe a busy board and be cached as the board's profile), nor the other
way round: :data:`.gate.GATE` keeps them apart.
"""

from typing import Optional, Tuple

from .profiling import describe, ProfileRun


def provisional(manager, spec, model_path, settings) -> Optional[Tuple[object, ProfileRun]]:
    """Return (backend, run) to serve on while the profile runs; None if it is complete.

    None too when no provisional candidate is usable: the caller then profiles
    before serving, as before. ``run`` holds the cached figures, an
    ``unmeasured`` entry for each candidate still to measure, and the reason.
    """
    run = manager.profile(spec, model_path, use_cache=True,
                          min_accuracy=settings.min_accuracy, measure=False)
    todo = [r.backend for r in run.results if r.status == 'unmeasured']
    if not todo:
        return None
    by_name = {b.name: b for b in manager.candidates(spec, model_path)}
    chosen, why = manager.select(run.results, spec, settings.objective,
                                 settings.max_latency_ms, settings.min_accuracy,
                                 settings.latency_percentile)
    later = f'{len(todo)} candidate(s) not measured yet, profiling in the background'
    if chosen is not None and chosen.backend in by_name:
        name, why = chosen.backend, f"the cached profile's choice ({why}); {later}"
    else:
        name = next((n for n in manager.config['start_order']
                     if n in by_name and not manager.over_budget(by_name[n]) and
                     by_name[n].available()[0]), None)
        if name is None:
            return None
        why = f'{name}: first usable of start_order (nothing cached yet); {later}'
    for r in run.results:
        r.chosen = r.backend == name
    if not any(r.chosen for r in run.results):
        run.results.append(describe(by_name[name], status='unmeasured', chosen=True,
                                    reason='not profiled yet'))
    run.chosen, run.why = name, why
    return by_name[name], run
