# Copyright 2026 edge_infer contributors. Apache-2.0.
"""One inference-thread budget per host, shared by every process (no ROS).

Each perception container profiles its models as if it were alone; two of
them on one 2-core board ran four inference threads between them and both
drifted off their profiles. The host's cores are therefore lent out as
*slots*, one lock file per core in one directory (``slot-0`` ...
``slot-<cores-1>``, default ``/dev/shm/edge_infer-cores``, or
``$EDGE_INFER_CORE_LEASE_DIR``). A process holds a slot by holding an
exclusive ``flock`` on its file: the kernel drops the lock when the process
exits, however it exits (SIGKILL and segfaults included), so a dead process
never keeps a core. A holder writes its pid into the file (for the log).

How many slots a process takes (:func:`take_threads`), all under one
host-wide ``take`` lock so that two processes starting together count the
same free slots one after the other:

- ``per_model`` T > 0 (the container's ``thread_budget``): T per model, as
  far as free slots go.
- ``per_model`` 0 (auto): up to half the free slots (rounded up), at least
  one per model, never more per model than a model can use
  (``max_per_model``): a process leaves room for the next one, whose start
  it cannot foresee. On a 2-core host the first process of one model takes
  one slot and the second the other: 2 inference threads in all.

A model always gets at least one thread: a process that finds fewer free
slots than it has models (a third process on a full 2-core host, or four
models on two cores) still runs, one thread per model, and its budget says
by how many threads it is *over budget*. When a process ends, its slots are
free for the next process to start; the processes still running keep the
threads per model they started with (their sessions were profiled and
opened with them).

The slots fix threads per model; :class:`FairShare` bounds how many frames
run at once, and follows processes as they come and go. Every container
joins as a *member* (``member-<pid>``: its model count, under an exclusive
``flock`` held for life) and lets at most its share of the cores run at
once (the compute gate's limit): cores x its models / the models of
every live member, at least one frame. Two launches of two models each on 2
cores run one frame at a time each, 2 inference threads in all; a launch
alone is not limited, and gets its cores back when the other one ends.
"""

from dataclasses import dataclass, field
import fcntl
import os
import pathlib
import tempfile
import threading
from typing import Dict, List, Optional

ENV_DIR = 'EDGE_INFER_CORE_LEASE_DIR'


def lease_dir() -> pathlib.Path:
    """Return the host's lease directory: $EDGE_INFER_CORE_LEASE_DIR, else under /dev/shm."""
    env = os.environ.get(ENV_DIR)
    if env:
        return pathlib.Path(env)
    base = pathlib.Path('/dev/shm')
    return (base if base.is_dir() else pathlib.Path(tempfile.gettempdir())) / 'edge_infer-cores'


def _open(path: pathlib.Path) -> int:
    try:    # no O_CREAT on another user's file: fs.protected_regular refuses it in /dev/shm
        return os.open(path, os.O_RDWR)
    except FileNotFoundError:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        os.fchmod(fd, 0o666)    # other users' processes share the host's cores too
    except OSError:
        pass
    return fd


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


@dataclass
class Budget:
    """What one process got: threads per model, and the slots it holds."""

    models: int
    per_model: int              # threads each model may use (at least 1 where models > 0)
    cores: int                  # slots on the host in all
    directory: str
    slots: List[int] = field(default_factory=list)     # slot indices this process holds
    others: Dict[int, str] = field(default_factory=dict)    # slot -> holder's pid, when taken
    _fds: List[int] = field(default_factory=list, repr=False)
    fair: Optional['FairShare'] = field(default=None, repr=False)

    @property
    def threads(self) -> int:
        """Return the inference threads this process runs (per model x models)."""
        return self.per_model * self.models

    @property
    def over(self) -> int:
        """Return by how many threads the process exceeds the slots it holds."""
        return max(0, self.threads - len(self.slots))

    def why(self) -> str:
        """Return the budget's reason in a few words (for the backend manager's lines)."""
        return (f'host budget: {len(self.slots)} of {self.cores} cores for {self.models} '
                f'model(s) in this process')

    def line(self) -> str:
        """Return the one log line that says what this process got."""
        plural = 's' if self.models != 1 else ''
        head = (f'inference thread budget: {self.per_model} per model x {self.models} '
                f'model{plural} = {self.threads} thread(s)')
        held = f" ({', '.join(map(str, self.slots))})" if self.slots else ''
        pids = ', '.join(sorted(set(self.others.values())))
        others = (f'{len(self.others)} held by other processes (pid {pids})' if self.others
                  else 'none held by other processes')
        where = (f'host lease in {self.directory}: holds {len(self.slots)} of {self.cores} '
                 f'slots{held}; {others}')
        if self.over:
            return (f'{head}, OVER the host budget by {self.over} ({where}; every model runs '
                    f'at least 1 thread)')
        return f'{head} ({where})'

    def release(self) -> None:
        """Give the slots back and leave the fair share (the kernel does the same at exit)."""
        if self.fair is not None:
            self.fair.stop()
            self.fair = None
        for fd in self._fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds, self.slots = [], []


def take_threads(models: int, per_model: int = 0, max_per_model: int = 0,
                 cores: Optional[int] = None,
                 directory: Optional[pathlib.Path] = None) -> Budget:
    """Lease this process's inference threads from the host's slots; see the module doc.

    ``models``: the models this process runs, each on its own session.
    ``per_model``: threads wanted per model (0 = auto). ``max_per_model``: the
    most threads a model's candidates use (0 = no limit). ``cores``: the
    host's slots (default os.cpu_count(); every process must use the same).
    The slots are held until :meth:`Budget.release` or the process's exit.
    """
    cores = int(cores or os.cpu_count() or 1)
    directory = pathlib.Path(directory) if directory else lease_dir()
    directory.mkdir(parents=True, exist_ok=True)
    try:
        directory.chmod(0o1777)
    except OSError:
        pass
    budget = Budget(models=models, per_model=1 if models else 0, cores=cores,
                    directory=str(directory))
    gate = _open(directory / 'take')
    try:
        fcntl.flock(gate, fcntl.LOCK_EX)    # one process counts and takes at a time
        free: List[tuple] = []
        for i in range(cores):
            fd = _open(directory / f'slot-{i}')
            if _try_lock(fd):
                free.append((i, fd))
            else:
                budget.others[i] = os.pread(fd, 32, 0).decode(errors='replace').strip() or '?'
                os.close(fd)
        if per_model > 0:
            want = per_model * models
        else:
            want = max(models, -(-len(free) // 2))
        got = min(len(free), want)
        if models:
            budget.per_model = max(1, got // models)
            if per_model <= 0 and max_per_model > 0:
                budget.per_model = min(budget.per_model, max_per_model)
        keep = min(got, budget.threads)
        for i, fd in free[:keep]:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f'{os.getpid()}\n'.encode(), 0)
            budget.slots.append(i)
            budget._fds.append(fd)
        for _, fd in free[keep:]:
            os.close(fd)        # closing the only descriptor drops its lock
    finally:
        os.close(gate)
    return budget


def max_threads_per_model(config: dict) -> int:
    """Return the most threads any candidate of a backend manager ``config`` runs a model on."""
    counts = [int(t) for key in ('ort_threads', 'openvino_threads', 'ncnn_threads')
              for t in (config.get(key) or ())]
    counts.append(int(config.get('variant_threads') or 0))
    return max(counts)


def apply_budget(manager, models: int, thread_budget: int, log, warn,
                 gate=None) -> Optional[Budget]:
    """Lease the container's threads and cap ``manager``'s candidates at them; one line.

    ``thread_budget``: the container's parameter (0 = auto, T > 0 = T per
    model, -1 = no cap and no lease, as if alone). Where the lease directory
    cannot be used, each model gets the cores divided by the models, as
    before the host lease, and the line says why.
    """
    if thread_budget < 0:
        log('inference thread budget: no cap (thread_budget -1: no host lease)')
        return None
    try:
        budget = take_threads(models, thread_budget, max_threads_per_model(manager.config))
    except OSError as exc:
        cores = os.cpu_count() or 1
        per_model = thread_budget or max(1, cores // max(1, models))
        why = f'{models} model(s) share {cores} cores in this process'
        manager.cap_threads(per_model, why)
        warn(f'inference thread budget: {per_model} per model ({why}); no host lease '
             f'({lease_dir()}: {exc})')
        return None
    manager.cap_threads(budget.per_model, budget.why())
    (warn if budget.over else log)(budget.line())
    try:
        budget.fair = FairShare(models, budget.per_model, gate=gate, log=log).start()
    except OSError as exc:
        warn(f'inference share: not followed ({lease_dir()}: {exc}); frames run unlimited')
    return budget


class FairShare:
    """How many of this process's frames may run at once, re-read while it runs (see module doc).

    ``gate``: what takes the limit (``set_limit``: the process's compute
    gate, its runtime's); ``period_s``: how often the members are counted again.
    """

    def __init__(self, models: int, per_model: int = 1, cores: Optional[int] = None,
                 directory: Optional[pathlib.Path] = None, gate=None, log=print,
                 period_s: float = 1.0):
        """Describe this process: its models and threads per model."""
        self.models, self.per_model = int(models), max(1, int(per_model))
        self.cores = int(cores or os.cpu_count() or 1)
        self.directory = pathlib.Path(directory) if directory else lease_dir()
        if gate is None:     # a process of its own: its own gate
            from .backends.measure.gate import ComputeGate
            gate = ComputeGate()
        self.gate, self.log, self.period_s = gate, log, float(period_s)
        self.limit = -1         # not computed yet; 0 = no limit
        self._fd: Optional[int] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> 'FairShare':
        """Join as a member, set the limit, and follow the others in a daemon thread."""
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.directory / f'joining-{os.getpid()}'
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o666)
        fcntl.flock(fd, fcntl.LOCK_EX)      # locked before others can see it
        os.pwrite(fd, f'{self.models}\n'.encode(), 0)
        os.replace(tmp, self.directory / f'member-{os.getpid()}')
        self._fd = fd
        self.refresh()
        self._thread = threading.Thread(target=self._run, name='fair-share', daemon=True)
        self._thread.start()
        return self

    def members(self) -> Dict[int, int]:
        """Return {pid: models} of the live members; remove the files of dead ones."""
        out: Dict[int, int] = {}
        for path in self.directory.glob('member-*'):
            try:
                pid = int(path.name.split('-', 1)[1])
            except ValueError:
                continue
            if pid == os.getpid():
                out[pid] = self.models
                continue
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue        # gone meanwhile
            try:
                if _try_lock(fd):       # nobody holds it: its process is gone
                    try:
                        path.unlink()
                    except OSError:
                        pass
                    continue
                text = os.pread(fd, 32, 0).decode(errors='replace').strip()
                out[pid] = int(text) if text.isdigit() else 1
            finally:
                os.close(fd)
        return out

    def refresh(self) -> int:
        """Count the members again, set the gate's limit; log a change; return the limit."""
        live = self.members()
        total = sum(live.values()) or self.models
        share = max(1, self.cores * self.models // max(1, total))
        frames = max(1, share // self.per_model)
        limit = 0 if frames >= self.models else frames
        if limit != self.limit:
            self.gate.set_limit(limit)
            where = (f'{share} of {self.cores} cores; {len(live)} process(es) with {total} '
                     f'model(s) on this host')
            self.log(f'inference share: at most {limit} of {self.models} model(s) at once '
                     f'({where})' if limit else f'inference share: no limit ({where})')
            self.limit = limit
        return limit

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            try:
                self.refresh()
            except OSError:
                pass        # the directory went away: keep the last limit

    def stop(self) -> None:
        """Leave: no limit in this process, the member file removed."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2 * self.period_s)
        if self._fd is not None:
            try:
                (self.directory / f'member-{os.getpid()}').unlink()
            except OSError:
                pass
            os.close(self._fd)
            self._fd = None
        self.gate.set_limit(0)
