# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Profile cache: probe and profile results keyed by everything that changes them.

Key of a profile entry: board fingerprint (CPU model and count, GPU name,
power mode, cpufreq governor), the model file's sha256, the backend's name,
options and library versions, and the cache format version. Each (model,
candidate) is its own entry, so a change re-profiles only what it touches:
a new onnxruntime re-profiles the ORT candidates, a new model file only that
model. Probe entries use the same key without the model.

One JSON file, written atomically; a corrupt file is set aside (renamed
``.corrupt``) and rebuilt, never trusted. A cache that cannot be written (a
read-only or full filesystem) is said in one line per cause and kept in
memory: the node serves on, a half-written file never replaces the cache,
and the next write tries again. Several processes may write it (a
measuring child, :mod:`.apart`, beside its serving process; two containers
on one board): a write takes a lock file and merges into what is on disk,
and :meth:`ProfileCache.refresh` reads it again once another process wrote.
"""

import contextlib
import glob
import hashlib
import json
import os
import pathlib
import threading
import time
from typing import Dict, List, Optional, Tuple

FORMAT = 1


def _read(path: str) -> str:
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            return f.read().strip()
    except OSError:
        return ''


def board_fingerprint(root: str = '/') -> Dict[str, str]:
    """Return what identifies this board's inference performance."""
    r = pathlib.Path(root)
    cpu = ''
    for line in _read(str(r / 'proc/cpuinfo')).splitlines():
        key, _, value = line.partition(':')
        if key.strip() in ('model name', 'Hardware', 'Model') and value.strip():
            cpu = value.strip()
            break
    dt_model = _read(str(r / 'proc/device-tree/model')).rstrip('\x00')
    gpus = []
    for info in sorted(glob.glob(str(r / 'proc/driver/nvidia/gpus/*/information'))):
        for line in _read(info).splitlines():
            if line.startswith('Model:'):
                gpus.append(line.split(':', 1)[1].strip())
    if not gpus and (r / 'sys/devices/platform/gpu.0').exists():
        gpus.append('tegra gpu.0')
    mali = glob.glob(str(r / 'sys/class/misc/mali*'))
    if mali:
        gpus.append('mali')
    power_mode = _read(str(r / 'var/lib/nvpmodel/status'))
    governor = _read(str(r / 'sys/devices/system/cpu/cpu0/cpufreq/scaling_governor'))
    return {'cpu': cpu, 'board': dt_model, 'cpus': str(os.cpu_count() or 0),
            'gpu': ', '.join(gpus), 'power_mode': power_mode, 'governor': governor}


def entry_key(parts: dict) -> str:
    """Return the stable hash of a key's parts."""
    blob = json.dumps({'format': FORMAT, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


class ProfileCache:
    """A JSON file of entries; thread-safe within a process, atomic on disk."""

    def __init__(self, path: pathlib.Path, log=print):
        self.path = pathlib.Path(path)
        self._lock = threading.Lock()
        self._log = log
        self._data: Optional[Dict[str, dict]] = None
        self._seen: Optional[tuple] = None      # the file's stat when last read or written
        self._unwritable = ''                   # why the last write failed ('' = it did not)

    def _stat(self) -> Optional[tuple]:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return st.st_ino, st.st_mtime_ns, st.st_size

    def refresh(self) -> None:
        """Read the file again where another process wrote it since."""
        with self._lock:
            if self._data is not None and self._stat() != self._seen:
                self._data = None

    @contextlib.contextmanager
    def _file_lock(self):
        """Hold the cache's lock file (writers of other processes wait)."""
        try:
            import fcntl
        except ImportError:     # not POSIX: one process per cache
            yield
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + '.lock'), 'a') as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _load(self) -> Dict[str, dict]:
        if self._data is None:
            self._data = {}
            self._seen = self._stat()
            if self.path.is_file():
                try:
                    data = json.loads(self.path.read_text())
                    if not isinstance(data, dict) or data.get('format') != FORMAT:
                        raise ValueError(f'format {data.get("format")!r} != {FORMAT}')
                    self._data = dict(data.get('entries', {}))
                except (ValueError, OSError) as exc:
                    bad = self.path.with_suffix('.corrupt')
                    try:
                        self.path.replace(bad)
                        where = f'moved to {bad.name}'
                    except OSError as why:
                        where = f'cannot be set aside ({why.strerror}): not read again'
                    self._log(f'profile cache {self.path} unreadable ({exc}); {where}, '
                              f'profiling again')
        return self._data

    def get(self, key: str) -> Optional[dict]:
        """Return the stored value for ``key`` or None."""
        with self._lock:
            entry = self._load().get(key)
            return None if entry is None else entry.get('value')

    def put(self, key: str, value: dict, parts: Optional[dict] = None) -> None:
        """Store ``value`` under ``key`` (with the key's parts, for people reading the file)."""
        entry = {'value': value, 'parts': parts or {}, 'stored': time.time()}
        with self._lock:
            self._load()[key] = entry       # in memory, whatever the disk says
            tmp = self.path.with_name(f'{self.path.name}.{os.getpid()}.tmp')
            try:
                with self._file_lock():
                    if self._stat() != self._seen:     # another process wrote: merge
                        mine, self._data = self._data or {}, None
                        for k, v in mine.items():       # (with what never reached the disk)
                            self._load().setdefault(k, v)
                    data = self._load()
                    data[key] = entry
                    tmp.write_text(json.dumps({'format': FORMAT, 'entries': data}, indent=1,
                                              default=str))
                    tmp.replace(self.path)
                    self._seen = self._stat()
            except OSError as exc:
                self._write_failed(exc, tmp)
                return
            if self._unwritable:
                self._log(f'profile cache {self.path} written again')
                self._unwritable = ''

    def _write_failed(self, exc: OSError, tmp: pathlib.Path) -> None:
        """Leave no part-written file; say why once per cause (the entries stay in memory)."""
        with contextlib.suppress(OSError):
            tmp.unlink()
        why = exc.strerror or str(exc)
        if why != self._unwritable:
            self._log(f'profile cache {self.path} not written: {why}; the node serves on, '
                      f'its measurements are kept in memory until the cache can be '
                      f'written (each later measurement tries again)')
        self._unwritable = why

    def entries(self) -> List[Tuple[dict, dict]]:
        """Return every entry as (its key's parts, its value)."""
        with self._lock:
            return [(e.get('parts', {}), e.get('value', {})) for e in self._load().values()]

    def __len__(self) -> int:
        with self._lock:
            return len(self._load())
