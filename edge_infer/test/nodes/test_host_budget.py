# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The host-wide inference thread budget (edge_infer.host_budget): leases across processes."""

import os
import re
import signal
import subprocess
import sys
import time

from edge_infer.host_budget import (apply_budget, FairShare, lease_dir, max_threads_per_model,
                                    take_threads)
import pytest
import yaml

# a process that takes a lease, prints its slots, then holds it until stdin closes
HOLDER = """
import sys
from edge_infer.host_budget import take_threads
b = take_threads(int(sys.argv[2]), cores=int(sys.argv[3]), directory=sys.argv[1])
print(b.per_model, ','.join(map(str, b.slots)), flush=True)
sys.stdin.read()
"""


def _holder(directory, models, cores):
    """Start a process holding a lease; return (process, per_model, slots)."""
    p = subprocess.Popen([sys.executable, '-c', HOLDER, str(directory), str(models),
                          str(cores)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    per_model, slots = p.stdout.readline().split(' ')
    return p, int(per_model), [int(s) for s in slots.split(',') if s.strip()]


@pytest.fixture
def holders():
    procs = []
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def test_two_processes_share_two_cores_and_a_third_runs_over_budget(tmp_path, holders):
    a, a_per, a_slots = _holder(tmp_path, 1, 2)
    holders.append(a)
    b, b_per, b_slots = _holder(tmp_path, 1, 2)
    holders.append(b)
    # one model each: one slot each, two threads on the host in all
    assert (a_per, b_per) == (1, 1)
    assert len(a_slots) == len(b_slots) == 1 and set(a_slots) != set(b_slots)
    third = take_threads(1, cores=2, directory=tmp_path)
    try:        # no slot left: it still runs one thread, and says it is over budget
        assert third.slots == [] and third.per_model == 1 and third.over == 1
        assert set(third.others.values()) == {str(a.pid), str(b.pid)}
        line = third.line()
        assert 'OVER the host budget by 1' in line and str(a.pid) in line, line
    finally:
        third.release()


def test_sigkill_releases_the_slots(tmp_path, holders):
    a, _, a_slots = _holder(tmp_path, 2, 2)     # two models: both slots
    holders.append(a)
    assert len(a_slots) == 2
    blocked = take_threads(1, cores=2, directory=tmp_path)
    assert blocked.slots == []
    blocked.release()
    os.kill(a.pid, signal.SIGKILL)
    a.wait()
    deadline = time.monotonic() + 10
    while True:     # the kernel drops the locks with the process
        b = take_threads(1, cores=2, directory=tmp_path)
        got, over = list(b.slots), b.over
        b.release()
        if got or time.monotonic() > deadline:
            break
    assert got and over == 0


def test_a_process_leaving_frees_its_slot_for_the_next(tmp_path, holders):
    a, _, a_slots = _holder(tmp_path, 1, 2)
    holders.append(a)
    mine = take_threads(1, cores=2, directory=tmp_path)
    assert mine.slots and set(mine.slots) != set(a_slots)
    a.stdin.close()     # a ends normally
    a.wait()
    late = take_threads(1, cores=2, directory=tmp_path)
    try:        # the one that stayed keeps its slot; the newcomer gets the freed one
        assert late.slots == a_slots and late.over == 0
    finally:
        late.release()
        mine.release()


def test_auto_leaves_room_and_every_model_gets_a_thread(tmp_path):
    cores = 8
    first = take_threads(2, cores=cores, directory=tmp_path)      # half the free slots
    assert first.per_model * 2 == len(first.slots) == cores // 2 and first.over == 0
    second = take_threads(2, max_per_model=1, cores=cores, directory=tmp_path)
    assert second.per_model == 1 and len(second.slots) == 2       # capped by what it can use
    crowd = take_threads(cores, cores=cores, directory=tmp_path)  # more models than slots
    assert crowd.per_model == 1 and len(crowd.slots) == cores - 6
    assert crowd.over == 6 and 'OVER' in crowd.line()
    for b in (first, second, crowd):
        b.release()
    asked = take_threads(1, per_model=3, cores=cores, directory=tmp_path)   # thread_budget 3
    assert asked.per_model == 3 and len(asked.slots) == 3
    asked.release()
    none = take_threads(0, cores=cores, directory=tmp_path)
    assert none.slots == [] and none.threads == 0 and none.over == 0


def test_lease_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv('EDGE_INFER_CORE_LEASE_DIR', str(tmp_path / 'x'))
    assert lease_dir() == tmp_path / 'x'
    monkeypatch.delenv('EDGE_INFER_CORE_LEASE_DIR')
    assert lease_dir().name == 'edge_infer-cores'


class _Manager:
    """The part of the backend manager apply_budget uses."""

    def __init__(self):
        self.config = {'ort_threads': [1, 2], 'openvino_threads': [1], 'variant_threads': 2}
        self.caps = []

    def cap_threads(self, threads, why=''):
        self.caps.append((threads, why))


def test_apply_budget_caps_the_manager_and_says_it_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv('EDGE_INFER_CORE_LEASE_DIR', str(tmp_path))
    mgr, lines = _Manager(), []
    budget = apply_budget(mgr, 1, 0, lines.append, lines.append)
    try:
        assert len(lines) == 2 and lines[0].startswith('inference thread budget: ')
        assert lines[1].startswith('inference share: no limit (')     # alone on the host
        assert mgr.caps == [(budget.per_model, budget.why())] and budget.slots
        assert budget.per_model <= max_threads_per_model(mgr.config)
        assert (tmp_path / f'member-{os.getpid()}').exists()
    finally:
        budget.release()
    assert not (tmp_path / f'member-{os.getpid()}').exists()
    mgr, lines = _Manager(), []     # -1: as if alone, no cap and no lease
    assert apply_budget(mgr, 1, -1, lines.append, lines.append) is None
    assert mgr.caps == [] and 'no cap' in lines[0]
    monkeypatch.setenv('EDGE_INFER_CORE_LEASE_DIR', str(tmp_path / 'slot-0'))  # a file
    mgr, warned = _Manager(), []
    assert apply_budget(mgr, 2, 0, lines.append, warned.append) is None
    assert mgr.caps and mgr.caps[0][0] >= 1 and 'no host lease' in warned[0]


def _container(ros, tmp_path, namespace):
    from edge_infer import procs
    pfile = tmp_path / f'{namespace}.yaml'
    pfile.write_text(yaml.safe_dump({'/**/perception_container': {'ros__parameters': {
        'nodes': ['detector'], 'telemetry': '', 'autostart': False}}}))
    log = tmp_path / f'{namespace}.log'
    return procs.start_container(ros.env, pfile, ['-r', f'__ns:=/{namespace}'], log), log


def _budget_line(log, proc, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        for line in log.read_text(errors='replace').splitlines():
            if 'inference thread budget:' in line:
                return line
        time.sleep(0.1)
    raise AssertionError(f'no budget line:\n{log.read_text(errors="replace")[-2000:]}')


def test_two_containers_share_the_host_cores(ros, tmp_path, monkeypatch):
    """Two processes of one model each hold distinct slots, no more than the host has."""
    from edge_infer import procs
    lease = tmp_path / 'lease'
    monkeypatch.setitem(ros.env, 'EDGE_INFER_CORE_LEASE_DIR', str(lease))
    started = [_container(ros, tmp_path, ns) for ns in ('r1', 'r2')]
    try:
        lines = [_budget_line(log, proc) for proc, log in started]
        threads = [int(re.search(r'= (\d+) thread', line).group(1)) for line in lines]
        slots = [re.search(r'holds (\d+) of (\d+) slots( \([\d, ]+\))?', line).groups()
                 for line in lines]
        cores = int(slots[0][1])
        held = [s.strip(' ()').split(', ') for _, _, s in slots if s]
        assert sum(threads) <= max(cores, 2), lines     # one thread per model at least
        assert len({x for h in held for x in h}) == sum(len(h) for h in held), lines
        if cores >= 2:
            assert all(t >= 1 for t in threads) and 'OVER' not in ''.join(lines), lines
    finally:
        for proc, _ in started:
            procs.stop(proc)


# a process that joins the fair share with N models, then stays until stdin closes
MEMBER = """
import sys
from edge_infer.host_budget import FairShare

class Gate:
    def set_limit(self, n):
        pass

FairShare(int(sys.argv[2]), cores=int(sys.argv[3]), directory=sys.argv[1], gate=Gate(),
          log=lambda s: None, period_s=60).start()
print('joined', flush=True)
sys.stdin.read()
"""


class _Gate:
    """Records the limits FairShare sets."""

    def __init__(self):
        self.limits = []

    def set_limit(self, n):
        self.limits.append(n)


def _member(directory, models, cores):
    p = subprocess.Popen([sys.executable, '-c', MEMBER, str(directory), str(models),
                          str(cores)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == 'joined'
    return p


def test_fair_share_follows_the_processes_on_the_host(tmp_path, holders):
    gate, lines = _Gate(), []
    mine = FairShare(2, cores=2, directory=tmp_path, gate=gate, log=lines.append,
                     period_s=60).start()
    try:
        assert mine.limit == 0 and gate.limits == [0]       # alone: two models, two cores
        other = _member(tmp_path, 2, 2)                     # a second launch of two models
        holders.append(other)
        assert mine.refresh() == 1 and gate.limits[-1] == 1     # one frame at a time each
        assert 'at most 1 of 2 model(s) at once (1 of 2 cores; 2 process(es) with 4' \
            in lines[-1], lines
        os.kill(other.pid, signal.SIGKILL)                  # it crashes: its cores come back
        other.wait()
        assert mine.refresh() == 0 and gate.limits[-1] == 0
        assert not (tmp_path / f'member-{other.pid}').exists()     # its file removed
        assert mine.refresh() == 0 and len(gate.limits) == 3       # a change is said once
    finally:
        mine.stop()
    assert not list(tmp_path.glob('member-*'))


def test_the_gate_runs_at_most_its_limit_at_once():
    import threading
    from edge_infer.backends.measure.gate import ComputeGate
    gate = ComputeGate()
    gate.set_limit(1)
    inside, most, lock = [0], [0], threading.Lock()
    release = threading.Event()

    def frame():
        with gate.shared():
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            release.wait(5)
            with lock:
                inside[0] -= 1
    threads = [threading.Thread(target=frame) for _ in range(3)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 5
    while inside[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    release.set()
    for t in threads:
        t.join(5)
    assert most[0] == 1 and not any(t.is_alive() for t in threads)
    gate.set_limit(0)
    with gate.shared(), gate.shared():          # no limit: holders side by side
        pass
