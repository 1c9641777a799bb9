# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What is installed, learnt without importing it.

A library imported only to read its version or its build's provider list
stays in the serving process for good: onnxruntime 19 MB, onnx 11 MB, ncnn
3 MB on a 2-core Xeon (``bench/product/memory_parts.py``), in a container whose
cache already says OpenVINO serves every model. So versions come from the
package metadata (``importlib.metadata``), and what only an import can tell
(ONNX Runtime's provider list) is kept in the cache folder under a key made
of the distribution, its version and its native library's size and time.
Where the library is not imported here yet, that import happens in a
throwaway interpreter (:func:`asked_apart`): a first start, whose
candidates are measured in a child process, leaves none of them in the
serving process either.
"""

from importlib import metadata
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import threading
from typing import Any, Callable, Dict, Optional, Tuple

_lock = threading.Lock()
_memo: Dict[str, object] = {}
_asking: Dict[str, threading.Lock] = {}     # one lock per question being asked
_versions: Dict[Tuple[str, ...], Tuple[str, str]] = {}     # dist_version's answers


def dist_version(*names: str) -> Tuple[str, str]:
    """Return (distribution, version) of the first of ``names`` installed, else ('', '').

    Read once per process (until :func:`forget`): a cold start asked 1,209
    times for the same few, 0.36 s of a 2-core EPYC's start; a name not
    installed costs a scan of every site folder.
    """
    with _lock:
        if names in _versions:
            return _versions[names]
    found: Tuple[str, str] = ('', '')
    for name in names:
        try:
            found = (name, metadata.version(name))
            break
        except metadata.PackageNotFoundError:
            continue
    with _lock:
        _versions[names] = found
    return found


def native_stamp(module: str, pattern: str) -> str:
    """Return '<size>:<mtime>' of the first file matching ``pattern`` in ``module``'s folder.

    Found without importing the module (``find_spec`` of a top-level
    package runs none of its code); '' when it is not there.
    """
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return ''
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        for path in sorted(pathlib.Path(folder).glob(pattern)):
            try:
                st = path.stat()
            except OSError:
                continue
            return f'{st.st_size}:{int(st.st_mtime)}'
    return ''


def kept(cache_file: Optional[pathlib.Path], key: dict, compute: Callable[[], Any]) -> Any:
    """Return ``compute()`` (JSON-ready), kept in memory and in ``cache_file`` while ``key`` holds.

    An empty answer is not kept in the file (the next start asks again);
    a read-only cache folder only costs the import at each start.
    """
    tag = json.dumps([str(cache_file), key], sort_keys=True)
    with _lock:
        if tag in _memo:
            return json.loads(str(_memo[tag]))
        asking = _asking.setdefault(tag, threading.Lock())
    with asking:    # asked once: nodes configured at once each started the same interpreters
        return _kept_once(tag, cache_file, key, compute)


def _kept_once(tag: str, cache_file: Optional[pathlib.Path], key: dict,
               compute: Callable[[], Any]) -> Any:
    """Return :func:`kept`'s value with the question's own lock held."""
    with _lock:
        if tag in _memo:
            return json.loads(str(_memo[tag]))
    value: Any = None
    if cache_file is not None:
        try:
            saved = json.loads(cache_file.read_text())
            if saved.get('key') == key and 'value' in saved:
                value = saved['value']
        except (OSError, ValueError, AttributeError):
            pass
    if value is None:
        value = compute()
        if cache_file is not None and value:
            try:
                cache_file.parent.mkdir(parents=True, exist_ok=True)
                tmp = cache_file.with_suffix(f'.tmp{os.getpid()}')
                tmp.write_text(json.dumps({'key': key, 'value': value}, indent=1))
                tmp.replace(cache_file)
            except OSError:
                pass
    with _lock:
        _memo[tag] = json.dumps(value)
    return value


def asked_apart(module: str, code: str, *args: str, timeout: float = 60.0) -> Any:
    """Return the JSON that ``code`` prints last, run in a throwaway interpreter.

    For what only importing ``module`` can tell, asked by a process that
    does not import it; None where ``module`` is imported here already or
    the interpreter failed (the caller then imports it itself).
    """
    if module in sys.modules:
        return None
    try:
        out = subprocess.run([sys.executable, '-c', code, *args], capture_output=True,
                             text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        return json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 \
            else None
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def forget() -> None:
    """Drop what this process kept in memory (tests; a library installed while running)."""
    with _lock:
        _memo.clear()
        _versions.clear()
