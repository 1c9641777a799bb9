# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What a process holds: only the sessions that can still lead, the freed heap handed back.

Numbers behind both (bench/memory_parts.py, the four-model container):
a profile that kept every screened session open until its end peaked at
1270 MB for NanoDet's 20 candidates (646 MB holding only the possible
leaders), and glibc keeps freed pages in its arenas until told otherwise.
"""

import functools
from typing import Any, Dict

from .profiling import CandidateResult


def keep_leaders(sessions: Dict[str, Any], results: Dict[str, CandidateResult],
                 best_ms: float, lead_factor: float, max_leaders: int) -> bool:
    """Close the open sessions that can no longer lead; return True if any was closed.

    A candidate leads when accepted, not cut short, within ``lead_factor`` of
    the best so far (which only falls) and among the ``max_leaders`` best.
    """
    def can_lead(name: str) -> bool:
        r = results.get(name)
        return r is not None and r.status == 'ok' and not r.cut_short and \
            r.frame_ms <= lead_factor * best_ms
    keep = sorted((n for n in sessions if can_lead(n)),
                  key=lambda n: results[n].frame_ms)[:max_leaders]
    closed = False
    for name in [n for n in sessions if n not in keep]:
        sessions.pop(name).close()
        closed = True
    return closed


def release_freed_memory(collect: bool = True) -> bool:
    """Hand memory freed by a profile run back to the OS (glibc ``malloc_trim``).

    Profiling loads every candidate's session; once they are closed, glibc keeps
    the freed pages in its arenas, so a node's RSS stayed ~75 MB (nanodet)
    above its steady state after each (re-)evaluation. Returns False where
    there is no glibc (musl, macOS): nothing to do there.
    """
    import gc
    if collect:     # objects in reference cycles may hold sessions still
        gc.collect()
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


@functools.lru_cache(maxsize=1)
def _malloc_trim():
    """Return glibc's malloc_trim, found once (find_library runs ldconfig); None: no glibc."""
    import ctypes
    import ctypes.util
    try:
        return ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6').malloc_trim
    except (OSError, AttributeError):
        return None
