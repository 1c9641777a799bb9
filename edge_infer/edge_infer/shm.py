# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Shared memory that dead processes left in /dev/shm: find it, remove it.

Fast DDS's files (below) and Triton's Python backend regions (at the end).

A Fast DDS participant unlinks its files when it is destroyed; one killed
with SIGKILL (the OOM killer, ``kill -9``, a launch's last resort) cannot, and
its files stay until reboot (a 67 MB segment survived ten later launches):

- a segment ``fastrtps_<16 hex>`` with its lock file ``fastrtps_<16 hex>_el``,
  which the owner holds locked (``flock``) for the segment's life;
- a port ``fastrtps_port<N>`` with ``fastrtps_port<N>_el`` or ``_sl`` and
  ``sem.fastrtps_port<N>_mutex``; every participant listening on the port
  holds the lock file locked.

A set whose lock file is gone (an *orphan* segment or port: after a kill -9
and a restart, some ports stay without their lock file; how is not known) is
stale when it is older than ``min_age_s`` and no live process has any of its
files open or mapped (test 3); :func:`clean` removes those too, :func:`stale`
lists them when asked.

A file set is *stale* only when all of these hold, so that another live
process's memory (another launch, a camera driver, ``ros2 topic echo``) is
never touched:

1. its lock file is older than ``min_age_s`` (a participant that is creating
   its files right now may not hold the lock yet);
2. the lock can be taken (``flock(LOCK_EX | LOCK_NB)``, released at once):
   the kernel drops a dead owner's lock, never a live one's. This is the test
   ``fastdds shm clean`` makes;
3. for a port (shared by its listeners), no process this user may inspect
   has any of its files open or mapped (``/proc/<pid>/fd`` and
   ``/proc/<pid>/maps``). A dead participant's segment goes even while a
   live subscriber still maps it: the subscriber keeps its mapping (the
   memory is freed when it lets go), and nothing opens a dead writer's
   segment by name again. Kept, it outlived the subscriber: a killed
   container's segment, mapped by a camera subscriber at the restart, stayed
   in /dev/shm after the subscriber ended (the robot stage's kill -9 test).

:func:`clean` is what the perception container runs before it joins the ROS
graph, so a restart after a crash removes what the crash left;
``edge_infer shm-clean`` runs it by hand or from the systemd unit's
``ExecStartPre`` (config/edge_infer.service).

**Triton's Python backend** (``edge_infer serve``'s server) keeps a 16 MB
region ``triton_python_backend_shm_region_<uuid>`` per model instance,
mapped by the server and its stub processes; a server that dies without its
own shutdown (``kill -9``, the OOM killer) leaves it, and nothing else
removes it (18 regions, 288 MB, after one test run and three Triton test
runs). A region is stale when it is older than ``min_age_s``, belongs to
this user, and no live process maps or holds it open. :func:`clean_triton`
removes those: ``edge_infer serve`` before it starts a server, and
``edge_infer shm-clean``; a stopped server's own regions go when it stops
(tools/triton/serve.py).
"""

import errno
import fcntl
import os
import pathlib
import re
import time
from typing import Callable, Dict, Iterable, List, Optional, Set

SHM_DIR = pathlib.Path('/dev/shm')
MIN_AGE_S = 2.0
_LOCK = re.compile(r'^(fastrtps_(?:[0-9a-f]{16}|port\d{1,5}))_(el|sl)$')
_BASE = re.compile(r'^fastrtps_(?:[0-9a-f]{16}|port\d{1,5})$')
TRITON_PREFIX = 'triton_python_backend_shm_region_'


def file_sets(shm_dir: pathlib.Path = SHM_DIR, orphans: bool = False
              ) -> Dict[pathlib.Path, List[pathlib.Path]]:
    """Return each Fast DDS lock file in ``shm_dir`` with every file of its set (lock first).

    ``orphans``: also each segment or port whose lock file is gone (67 ports,
    5.5 MB, had piled up here), its own key: ``[segment]`` or ``[port, mutex]``.
    """
    try:
        names = os.listdir(shm_dir)
    except OSError:
        return {}
    out = {}
    covered = set()
    for name in sorted(names):
        m = _LOCK.match(name)
        if m:
            base = m.group(1)
            files = [shm_dir / name, shm_dir / base]
            if 'port' in base:
                files.append(shm_dir / f'sem.{base}_mutex')
            out[shm_dir / name] = files
            covered.add(base)
    for name in sorted(names) if orphans else ():
        if _BASE.match(name) and name not in covered:
            out[shm_dir / name] = [shm_dir / name] + (
                [shm_dir / f'sem.{name}_mutex'] if 'port' in name else [])
    return out


def open_by_live_processes(proc: pathlib.Path = pathlib.Path('/proc'),
                           only: Optional[Iterable[str]] = None,
                           skip: Iterable[str] = ()) -> Set[str]:
    """Return the paths any process readable here has open or mapped.

    ``only``: these pids alone; ``skip``: not these.
    """
    used: Set[str] = set()
    try:
        pids = [p for p in os.listdir(proc) if p.isdigit()] if only is None else list(only)
    except OSError:
        return used
    pids = [p for p in pids if p not in set(skip)]
    for pid in pids:
        try:
            for fd in os.listdir(proc / pid / 'fd'):
                try:
                    used.add(os.readlink(proc / pid / 'fd' / fd))
                except OSError:
                    pass
            with open(proc / pid / 'maps') as maps:
                for line in maps:
                    if '/dev/shm/' in line or 'fastrtps' in line:
                        used.add(line.split(None, 5)[-1].strip())
        except OSError:     # gone meanwhile, or another user's
            pass
    return used


def segment_locks(pid: int, shm_dir: pathlib.Path = SHM_DIR) -> Set[str]:
    """Return the segment lock files (not the shared ports') process ``pid`` has open.

    A participant holds its own segment's lock file open for the segment's
    life; its subscribers only map the segment.
    """
    return {f for f in open_by_live_processes(only=[str(pid)])
            if _LOCK.match(os.path.basename(f)) and 'port' not in f
            and os.path.dirname(f) == str(shm_dir)}


def lock_is_free(path: pathlib.Path) -> bool:
    """Return whether no process holds a lock on ``path`` (taking it, then letting go)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    finally:
        os.close(fd)


def stale(shm_dir: pathlib.Path = SHM_DIR, min_age_s: float = MIN_AGE_S,
          used: Optional[Iterable[str]] = None, now: Optional[float] = None,
          orphans: bool = False) -> List[List[pathlib.Path]]:
    """Return the file sets no live process owns (see the module's three tests).

    ``used``: the paths live processes hold (read from /proc when not given);
    ``orphans``: sets whose lock file is gone too (:func:`clean` removes them).
    """
    now = time.time() if now is None else now
    out = []
    for lock, files in file_sets(shm_dir, orphans).items():
        try:
            age = now - lock.stat().st_mtime
        except OSError:
            continue
        if age >= min_age_s and lock_is_free(lock):
            out.append(files)

    def shared(files: List[pathlib.Path]) -> bool:     # a port, or an orphan: no lock to test
        return 'port' in files[0].name or not _LOCK.match(files[0].name)
    if any(shared(files) for files in out):     # /proc is read only for those
        used = set(open_by_live_processes() if used is None else used)
        out = [files for files in out
               if not shared(files) or not any(str(f) in used for f in files)]
    return out


def remove_own(shm_dir: pathlib.Path = SHM_DIR, pid: Optional[int] = None) -> int:
    """Remove the Fast DDS file sets that only this process (``pid``) holds; return how many.

    For a process that leaves with ``os._exit`` (nodes/stopping.py): its
    participants' files are unlinked by their destructors, which do not run
    then. A segment is this process's when it holds the segment's lock file
    open, as its owner does; readers only map the segment, and they keep
    their mapping when the name goes (as when the destructor unlinks it). A
    port another live process also holds (a shared port) stays.
    """
    me = str(os.getpid() if pid is None else pid)
    sets = file_sets(shm_dir)
    if not sets:
        return 0
    mine = open_by_live_processes(only=[me])
    others = open_by_live_processes(skip=[me])
    removed = 0
    for lock, files in sets.items():
        if not _LOCK.match(lock.name):      # an orphan: not this process's (its owner is gone)
            continue
        names = [str(f) for f in files]
        owned = 'port' not in lock.name and str(lock) in mine
        if owned or any(n in mine for n in names) and not any(n in others for n in names):
            for f in files:
                try:
                    f.unlink()
                except OSError:
                    pass
            removed += 1
    return removed


def clean(shm_dir: pathlib.Path = SHM_DIR, min_age_s: float = MIN_AGE_S,
          log: Optional[Callable[[str], None]] = None) -> Dict[str, int]:
    """Remove stale Fast DDS file sets; return counts; log one line when something went.

    Returns ``{'segments': n, 'ports': n, 'bytes': n}`` of what was removed.
    """
    counts = {'segments': 0, 'ports': 0, 'bytes': 0}
    for files in stale(shm_dir, min_age_s, orphans=True):
        for f in files:
            try:
                size = f.stat().st_size
                f.unlink()
            except OSError:
                continue
            counts['bytes'] += size
        counts['ports' if 'port' in files[0].name else 'segments'] += 1
    if log is not None and (counts['segments'] or counts['ports']):
        log('shared memory: removed what dead processes left in '
            f"{shm_dir}: {counts['segments']} segment(s), {counts['ports']} port(s), "
            f"{counts['bytes'] / 1e6:.1f} MB")
    return counts


def triton_regions(shm_dir: pathlib.Path = SHM_DIR) -> Set[pathlib.Path]:
    """Return the Triton Python backend regions in ``shm_dir`` (this user's or not)."""
    try:
        return {shm_dir / n for n in os.listdir(shm_dir) if n.startswith(TRITON_PREFIX)}
    except OSError:
        return set()


def stale_triton(shm_dir: pathlib.Path = SHM_DIR, min_age_s: float = MIN_AGE_S,
                 used: Optional[Iterable[str]] = None,
                 among: Optional[Iterable[pathlib.Path]] = None,
                 now: Optional[float] = None) -> List[pathlib.Path]:
    """Return this user's Triton regions that no live process maps or holds open.

    ``used``: the paths live processes hold (read from /proc when not given);
    ``among``: only these regions (a server's own); older than ``min_age_s``.
    """
    now = time.time() if now is None else now
    regions = triton_regions(shm_dir) if among is None else set(among)
    out = []
    for region in sorted(regions):
        try:
            st = region.stat()
        except OSError:
            continue
        if st.st_uid == os.getuid() and now - st.st_mtime >= min_age_s:
            out.append(region)
    if out:
        used = set(open_by_live_processes() if used is None else used)
        out = [r for r in out if str(r) not in used]
    return out


def clean_triton(shm_dir: pathlib.Path = SHM_DIR, min_age_s: float = MIN_AGE_S,
                 among: Optional[Iterable[pathlib.Path]] = None,
                 log: Optional[Callable[[str], None]] = None) -> Dict[str, int]:
    """Remove stale Triton regions (:func:`stale_triton`); return counts; log one line if any."""
    counts = {'regions': 0, 'bytes': 0}
    for region in stale_triton(shm_dir, min_age_s, among=among):
        try:
            size = region.stat().st_size
            region.unlink()
        except OSError:
            continue
        counts['regions'] += 1
        counts['bytes'] += size
    if log is not None and counts['regions']:
        log(f"shared memory: removed {counts['regions']} Triton Python backend region(s) "
            f"that dead servers left in {shm_dir}, {counts['bytes'] / 1e6:.1f} MB")
    return counts


def main(argv=None) -> int:
    """``edge_infer shm-clean [--min-age S] [--dir D]``: remove stale shared memory; exit 0.

    Stale Fast DDS files, and Triton Python backend regions.
    """
    import argparse
    ap = argparse.ArgumentParser(prog='edge_infer shm-clean', description=main.__doc__)
    ap.add_argument('--min-age', type=float, default=MIN_AGE_S,
                    help='leave lock files younger than this many seconds (default %(default)s)')
    ap.add_argument('--dir', type=pathlib.Path, default=SHM_DIR)
    args = ap.parse_args(argv)
    counts = clean(args.dir, args.min_age, log=print)
    triton = clean_triton(args.dir, args.min_age, log=print)
    if not (counts['segments'] or counts['ports'] or triton['regions']):
        print(f'shared memory: nothing stale in {args.dir}')
    return 0
