# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Fallback: a backend that raises is replaced by the next best measured one (no ROS).

The frame is then run again on it (:meth:`.choice.LiveChoice.infer`): no
frame is lost. An open runner-up takes over without a load.
"""

from ...core.backend import first_line


def fall_back(live, exc: Exception) -> bool:
    """Replace a backend that raised by the next best measured one; False if none left."""
    failed = live.run.chosen if live.run else live.backend_name
    live._failed.add(failed)
    if live.run is None or not live._can_fall_back:
        return False
    live._drop_runner(failed)
    left = [r for r in live.run.results if r.backend not in live._failed]
    chosen, why = live.manager.select(left, live.spec, live.settings.objective,
                                      live.settings.max_latency_ms,
                                      live.settings.min_accuracy,
                                      live.settings.latency_percentile)
    first = f'{type(exc).__name__}: {first_line(exc)}'
    if chosen is None:
        live.warn(f'backend {failed} failed ({first}) and no other candidate is usable: '
                  f'{why}')
        return False
    sess = live.runners.take(chosen.backend)  # open as a runner-up: no load on this frame
    if sess is not None:
        new = live.model.with_session(sess)
    else:
        backend = {b.name: b for b in live.manager.candidates(
            live.spec, live.model_path)}[chosen.backend]
        new = live._open_model(backend)
    old, live.model = live.model, new
    try:
        old.close()
    except Exception:  # the failed session may not close cleanly either
        pass
    live._switched(failed, chosen.backend, 'fallback', f'backend {failed} failed ({first})')
    return True
