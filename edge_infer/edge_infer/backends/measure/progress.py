# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A profile's progress: one event per step, with the time left estimated (no ROS)."""

from typing import Callable, List, Optional


def report_progress(progress: Optional[Callable[[dict], None]], log: Callable[[str], None],
                    config: dict, model: str, step: int, total: int, what: str, doing: str,
                    elapsed_s: float, screened: List[float], remaining: int,
                    extra_s: float = 0.0) -> None:
    """Report one step: to ``progress`` if given, else one line to ``log``.

    The time left is estimated from the candidates measured so far (their
    mean time x the ones still to measure; cached or unavailable ones take
    none) plus the side-by-side budget still to come (``config``: the
    manager's budget_s and max_leaders).
    """
    per = sum(screened) / len(screened) if screened else 1.5
    rounds = float(config['budget_s']) * min(int(config['max_leaders']), max(2, total // 4))
    left = extra_s if extra_s else per * max(0, remaining) + rounds
    event = {'model': model, 'step': step, 'total': total, 'what': what,
             'doing': doing, 'elapsed_s': elapsed_s, 'left_s': left}
    if progress is not None:
        progress(event)
    else:
        log(f'[profile {model}] {step}/{total} {what}: {doing} (about {left:.0f} s left)')
