# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What a process holds: only the sessions that can still lead, the freed heap handed back.

Numbers behind both (bench/product/memory_parts.py, the four-model container):
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


def _malloc_trim():
    """Return glibc's malloc_trim; None: no glibc."""
    libc = _libc()
    return getattr(libc, 'malloc_trim', None) if libc is not None else None


@functools.lru_cache(maxsize=1)
def _libc():
    """Return glibc, found once (find_library runs ldconfig); None: not glibc."""
    import ctypes
    import ctypes.util
    try:
        libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6')
        libc.malloc_trim, libc.mallopt     # musl has neither
    except (OSError, AttributeError):
        return None
    return libc


M_ARENA_MAX = -8    # glibc's mallopt parameter


def cap_malloc_arenas(arenas: int = 2) -> bool:
    """Let this process's threads share ``arenas`` glibc malloc arenas; True if set.

    glibc gives threads that allocate at once arenas of their own (up to 8
    per core), and each keeps what its thread freed. The four-model
    container runs ~45 threads: with the bag playing its RSS was 520-540 MB
    with glibc's default, 480-515 with 2 arenas and 460-505 with 1
    (bench/product/footprint.py's container, 2 interleaved rounds). Call it before
    the threads start. A ``MALLOC_ARENA_MAX`` in the environment is the
    user's choice and is kept; False without glibc.
    """
    import os
    if os.environ.get('MALLOC_ARENA_MAX'):
        return False
    libc = _libc()
    if libc is None:
        return False
    return bool(libc.mallopt(M_ARENA_MAX, int(arenas)))


M_MMAP_THRESHOLD = -3      # glibc's mallopt parameter
MMAP_THRESHOLD = 1 << 20    # bytes: a block this large has pages of its own


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """Give malloc blocks of ``threshold`` bytes and more their own pages, handed back when freed.

    glibc starts at 128 KiB and raises the threshold to each mmapped block
    freed (up to 32 MiB): after the sessions' first large buffers were freed
    (a runner-up closed, a session compiled), blocks of up to that size came
    from the heap, where a block freed under a live one stays resident.
    Fixed at 1 MiB, the warm container held 395-416 MB instead of 434-436
    (bench/product/footprint.py, 2-core EPYC; footprint_mmap_20261128.md); filling a
    frame's float inputs (1.2 + 0.6 MB, mmapped each time) was no slower.
    A ``MALLOC_MMAP_THRESHOLD_`` in the environment is the user's and is
    kept; False without glibc.
    """
    import os
    if os.environ.get('MALLOC_MMAP_THRESHOLD_'):
        return False
    libc = _libc()
    return libc is not None and bool(libc.mallopt(M_MMAP_THRESHOLD, int(threshold)))
