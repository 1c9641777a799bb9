# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The runners-up's memory: looks take turns within a process's budget and end when answered."""

import gc
import os

from edge_infer.backends.live.rule import LiveSettings
from edge_infer.backends.live.runner_memory import RunnerMemory, STALE_ASKS
import pytest
from test_live_rule import _noisy, sim  # noqa: F401  (the simulated-clock fixture)


class Owner:
    """Stands for one model's run-time choice."""


def test_a_look_opens_within_the_budget_and_the_others_wait_in_turn():
    budget, a, b, c = RunnerMemory(), Owner(), Owner(), Owner()
    assert budget.acquire(a, None, 64.0)        # nothing open: one may always look
    budget.measured(a, 50.0)
    assert not budget.acquire(b, 30.0, 64.0)    # 50 + 30 > 64: waits, first in the queue
    assert not budget.acquire(c, 10.0, 64.0)    # would fit, but b asked first
    assert budget.waiting() == 2
    budget.release(a)
    assert not budget.acquire(c, 10.0, 64.0)    # still b's turn
    assert budget.acquire(b, 30.0, 64.0)
    assert budget.acquire(c, 10.0, 64.0)        # 30 + 10 fit
    assert budget.holders() == 2 and budget.held_mb() == 40.0
    assert budget.acquire(c, 10.0, 64.0)        # asking again while holding: still held


def test_an_unknown_size_waits_until_no_look_is_open_and_no_cap_never_waits():
    budget, a, b = RunnerMemory(), Owner(), Owner()
    assert budget.acquire(a, 5.0, 64.0)
    assert not budget.acquire(b, None, 64.0)    # its size is not known yet
    budget.release(a)
    assert budget.acquire(b, None, 64.0)
    assert budget.acquire(a, 500.0, 0.0)        # 0: no cap
    assert budget.denials == 1 and budget.grants == 3


def test_a_look_that_stopped_asking_or_an_owner_that_is_gone_frees_the_queue():
    budget, a, b, c = RunnerMemory(), Owner(), Owner(), Owner()
    assert budget.acquire(a, 10.0, 20.0)
    assert not budget.acquire(b, 15.0, 20.0)    # b waits first ...
    for _ in range(STALE_ASKS + 1):             # ... then its frames stop; c keeps asking
        assert not budget.acquire(c, 5.0, 20.0) or budget.holders() == 2
    assert budget.holders() == 2                # c got its turn past the silent b
    budget.forget(c)
    del a
    gc.collect()
    assert budget.holders() == 0                # a was never closed, but it is gone


def _two_models(sim, budget_mb):  # noqa: F811
    settings = LiveSettings(drift_threshold=0, runners_idle_s=20.0, runners_recheck_s=300.0,
                            runners_memory_mb=budget_mb)
    lives = []
    for k in range(2):
        cands = [(f'fake/{k}a', _noisy(5.0, 0.03, seed=60 + k), 1),
                 (f'fake/{k}b', _noisy(6.5, 0.03, seed=70 + k), 1),
                 (f'fake/{k}c', _noisy(8.0, 0.03, seed=80 + k), 1)]
        lives.append(sim.make(cands, [5.0, 6.5, 8.0], settings=settings))
    # one process: one manager's budget
    lives[1].selector.looks.memory = lives[0].selector.looks.memory
    return lives


def _serve_both(sim, lives, seconds):  # noqa: F811
    """Serve both models in turns of 0.1 s; return (time, open pools, runners open each)."""
    seen = []
    end = sim.clock.t + seconds
    while sim.clock.t < end:
        for live in lives:
            sim.serve(live, 0.1)
            for t in live.background.threads:
                t.join()
        seen.append((sim.clock.t, [len(live.selector.runners) for live in lives]))
    return seen


@pytest.mark.parametrize('budget_mb', [0.5, 0.0])
def test_two_models_look_in_turn_within_the_budget_and_close_once_answered(sim, budget_mb):  # noqa: F811,E501
    """Both start with a fresh choice to look at; the budget lets one look at a time."""
    lives = _two_models(sim, budget_mb)
    seen = _serve_both(sim, lives, 40.0)
    both = [t for t, n in seen if all(n)]
    looked = [[t for t, n in seen if n[k]] for k in range(2)]
    assert looked[0] and looked[1], 'each model looked at its runners-up'
    if budget_mb:
        assert not both, 'never both open at once'
        assert looked[1][0] > looked[0][-1], 'the second waited for the first'
        assert lives[0].selector.looks.memory.denials > 0
    else:
        assert both, 'no cap: both looked at once'
    # each look ended once answered (5+ pairs slower than the chosen one), well
    # before the 20 s of runners_idle_s, and nothing was switched
    for k, live in enumerate(lives):
        assert looked[k][-1] - looked[k][0] < 15.0, looked[k]
        assert len(live.selector.runners) == 0 and live.switches == []
        assert live.selector.hours.answered_at > live.selector.hours.since - 1e-9
    assert lives[0].selector.looks.memory.holders() == 0


ARENAS = r"""
import ctypes, os, sys, tempfile, threading
from edge_infer.backends.measure.memory import cap_malloc_arenas
capped = cap_malloc_arenas(1) if sys.argv[1] == 'cap' else False
libc = ctypes.CDLL('libc.so.6')
libc.malloc.restype = ctypes.c_void_p
libc.fopen.restype = ctypes.c_void_p
go, done = threading.Barrier(5), threading.Barrier(5)
def work():
    go.wait()                   # all allocate at once: glibc would give each its own arena
    kept = [libc.malloc(4096) for _ in range(200)]
    done.wait()
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads:
    t.start()
go.wait(); done.wait()
path = os.path.join(tempfile.mkdtemp(), 'info')
f = libc.fopen(path.encode(), b'w')
libc.malloc_info(0, ctypes.c_void_p(f)); libc.fclose(ctypes.c_void_p(f))
print(capped, open(path).read().count('<heap nr='))
"""


def _glibc_child(script, arg, unset, **extra):
    """Run ``script`` in a child without the variable ``unset`` (plus ``extra``): its 2 words."""
    import subprocess
    import sys
    from edge_infer.backends.measure.memory import _libc
    if _libc() is None:
        pytest.skip('not glibc: malloc arenas and thresholds are glibc features')
    env = {k: v for k, v in os.environ.items() if k != unset}
    out = subprocess.run([sys.executable, '-c', script, arg], env={**env, **extra},
                         capture_output=True, text=True, timeout=60, check=True)
    done, figure = out.stdout.split()
    return done == 'True', float(figure)


def test_the_container_caps_malloc_arenas_unless_the_user_set_them():
    """Threads that allocate at once share the capped arenas (glibc's malloc_info counts)."""
    def heaps(arg, **extra):
        return _glibc_child(ARENAS, arg, 'MALLOC_ARENA_MAX', **extra)
    assert heaps('cap') == (True, 1)
    free = heaps('free')
    assert not free[0] and free[1] > 1, free
    assert heaps('cap', MALLOC_ARENA_MAX='3')[0] is False     # the user's choice is kept


MMAP = r"""
import ctypes, sys
import psutil
from edge_infer.backends.measure.memory import fix_mmap_threshold
fixed = fix_mmap_threshold() if sys.argv[1] == 'fix' else False
libc = ctypes.CDLL('libc.so.6')
libc.malloc.restype = ctypes.c_void_p
size = 4 << 20
libc.free(ctypes.c_void_p(libc.malloc(size)))  # glibc's own threshold rises to this size
base = psutil.Process().memory_info().rss
big = []
for _ in range(17):
    big.append(libc.malloc(size))
    ctypes.memset(big[-1], 1, size)
for block in big[:-1]:                          # the last one stays: a heap cannot shrink past it
    libc.free(ctypes.c_void_p(block))
base += size
print(fixed, (psutil.Process().memory_info().rss - base) / size)
"""


def test_the_container_hands_large_freed_blocks_back_unless_the_user_set_it():
    """Freed 4 MiB blocks stay resident under glibc's rising threshold, not under the fixed one."""
    def kept(arg, **extra):
        return _glibc_child(MMAP, arg, 'MALLOC_MMAP_THRESHOLD_', **extra)
    fixed, dynamic = kept('fix'), kept('glibc')
    assert fixed[0] and not dynamic[0]
    assert fixed[1] < 1 < dynamic[1], (fixed, dynamic)     # blocks still resident
    assert kept('fix', MALLOC_MMAP_THRESHOLD_='4194304')[0] is False    # the user's is kept


def test_a_drift_with_no_runner_up_to_look_at_is_still_accepted(sim):  # noqa: F811
    """A look that opens nothing is over at once: the drift level is accepted, not left firing."""
    t0 = sim.clock.t
    only = ('fake/a', _noisy(5.0, 0.02, seed=91, load=lambda t: t >= t0 + 5.0, loaded_ms=10.0), 1)
    settings = LiveSettings(drift_threshold=1.5, runners_idle_s=10.0, runners_recheck_s=120.0)
    live = sim.make([only], [5.0], settings=settings)
    lines = []
    live.log = live.warn = lines.append
    for _ in range(40):
        sim.serve(live, 1.0)
        for t in live.background.threads:
            t.join()
    assert len(live.selector.runners) == 0 and live.switches == []
    assert live.selector.drift.expected_ms == pytest.approx(10.0, rel=0.1), lines
    assert any('expected now' in line for line in lines), lines
