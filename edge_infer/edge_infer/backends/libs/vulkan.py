# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The Vulkan devices ncnn sees, kept on disk between starts.

Creating ncnn's Vulkan instance loads every installed Vulkan driver. In the
four-model container on a 2-core Xeon, Mesa's lavapipe brought libLLVM
(44 MB resident) and the radeon and intel drivers (6 MB) into a process
that served every model on OpenVINO. Listing the candidates needs only the
devices' names, so the list is kept in the cache folder
(``vulkan_devices.json``). It is keyed by what decides it: the ncnn version,
the Vulkan loader's variables, the driver manifests (ICD files, with the
size and time of each and of the library it names) and the device nodes.
When any of them changes, the instance is created again, so a new driver
shows at the next start. A Vulkan candidate that is loaded (a profile, a
runner-up) creates the instance then.
"""

import glob
import hashlib
import json
import os
import pathlib
import re
import sys
import tempfile
import threading
from typing import Callable, Dict, List, Optional, Tuple

from . import installed

Device = Tuple[int, str, str]       # (index, full name, short name)

# "[0 llvmpipe (LLVM ...)]  queueC=0..." : what ncnn prints per device on fd 2
NCNN_DEVICE_LINE = re.compile(r'^\[\d+ [^\]]*\]')
ICD_DIRS = ('/usr/share/vulkan/icd.d', '/usr/local/share/vulkan/icd.d', '/etc/vulkan/icd.d',
            '/etc/xdg/vulkan/icd.d')
LOADER_VARS = ('VK_ICD_FILENAMES', 'VK_DRIVER_FILES', 'VK_ADD_DRIVER_FILES', 'XDG_DATA_DIRS',
               'XDG_CONFIG_DIRS')

_lock = threading.Lock()
_asking = threading.Lock()      # held while one thread asks ncnn
_state: Dict[str, object] = {}


def use_cache(path: Optional[pathlib.Path]) -> None:
    """Keep the device list in ``path`` (None: create the instance at every start)."""
    with _lock:
        _state['cache_file'] = path


def probe_output() -> str:
    """Return what ncnn printed about the Vulkan devices when its instance was created."""
    with _lock:
        return str(_state.get('probe_output', ''))


def instance_created() -> bool:
    """Return whether this process created ncnn's Vulkan instance (loaded the drivers)."""
    with _lock:
        return bool(_state.get('instance'))


def short_gpu_name(full: str) -> str:
    """Return a short, stable device name: 'llvmpipe (LLVM 15.0.6, 256 bits)' -> 'llvmpipe'."""
    name = re.sub(r'\s*\(.*$', '', full).strip()
    name = re.sub(r'[^A-Za-z0-9._+-]+', '-', name).strip('-')
    return name or 'gpu'


def manifests() -> List[str]:
    """Return the driver manifest files (ICD JSON) the Vulkan loader would read."""
    dirs = list(ICD_DIRS) + [os.path.expanduser('~/.local/share/vulkan/icd.d')]
    for base in os.environ.get('XDG_DATA_DIRS', '').split(':') + \
            os.environ.get('XDG_CONFIG_DIRS', '').split(':'):
        if base:
            dirs.append(os.path.join(base, 'vulkan', 'icd.d'))
    files = sorted({f for d in dirs for f in glob.glob(os.path.join(d, '*.json'))})
    return files + [f for v in ('VK_ICD_FILENAMES', 'VK_DRIVER_FILES', 'VK_ADD_DRIVER_FILES')
                    for f in os.environ.get(v, '').split(':') if f]


def fingerprint(ncnn_version: str) -> str:
    """Return a key of everything that decides which Vulkan devices ncnn sees."""
    parts: List[str] = [ncnn_version]
    parts += [f'{v}={os.environ.get(v, "")}' for v in LOADER_VARS]
    for f in manifests():
        parts.append(_stat(f))
        try:
            lib = json.loads(pathlib.Path(f).read_text())['ICD']['library_path']
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if os.path.isabs(lib):
            parts.append(_stat(lib))
    for pattern in ('/dev/dri/*', '/dev/nvidia*', '/dev/mali*', '/dev/kgsl*'):
        parts += sorted(glob.glob(pattern))
    return hashlib.sha256('\n'.join(parts).encode()).hexdigest()[:16]


def _stat(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return f'{path} -'
    return f'{path} {st.st_size} {st.st_mtime_ns}'


def devices(get_ncnn: Callable[[], object], version: str) -> List[Device]:
    """Return (index, full name, short name) of every Vulkan device ncnn sees.

    From memory, else from the cache file when its key matches, else by
    creating ncnn's Vulkan instance (about 0.25 s on lavapipe; the lines
    ncnn prints about the devices are kept, not shown: :func:`probe_output`).
    [] without ncnn, without Vulkan in the ncnn build, or without a device.
    """
    return [tuple(d[:3]) for d in _known(get_ncnn, version)['devices']]  # type: ignore


def default_index(get_ncnn: Callable[[], object], version: str) -> Optional[int]:
    """Return the index of ncnn's default Vulkan device (None: no device)."""
    return _known(get_ncnn, version).get('default')   # type: ignore[return-value]


def driver(get_ncnn: Callable[[], object], version: str, index: Optional[int]) -> str:
    """Return device ``index``'s driver and API versions ('' if unknown)."""
    for d in _known(get_ncnn, version)['devices']:   # type: ignore[attr-defined]
        if d[0] == index:
            return str(d[3])
    return ''


def _known(get_ncnn: Callable[[], object], version: str) -> Dict[str, object]:
    with _lock:
        kept = _state.get('known')
    if kept is not None:
        return kept     # type: ignore[return-value]
    with _asking:       # asked once: nodes configured at once each started an interpreter
        with _lock:
            kept = _state.get('known')
            cache_file = _state.get('cache_file')
        if kept is not None:
            return kept     # type: ignore[return-value]
        return _ask(get_ncnn, version, cache_file)


def _ask(get_ncnn: Callable[[], object], version: str, cache_file) -> Dict[str, object]:
    """Return what ncnn says of its Vulkan devices: the cache file, else an interpreter."""
    key = fingerprint(version)
    # "no device" is not kept while a driver manifest exists: a driver that
    # failed to load (seen: the NVIDIA driver without libglvnd, which the key
    # does not cover) may load at the next start once its library is there
    keep_empty = not manifests()
    if cache_file is not None:
        try:
            saved = json.loads(pathlib.Path(str(cache_file)).read_text())
            if saved.get('key') == key and (saved.get('devices') or keep_empty):
                with _lock:
                    _state['known'] = saved
                return saved
        except (OSError, ValueError, AttributeError):
            pass
    apart = installed.asked_apart('ncnn', ASK_APART)
    if isinstance(apart, dict):     # ncnn, its Vulkan driver and LLVM stay out of this process
        known = {'key': key, 'devices': apart.get('devices', []),
                 'default': apart.get('default')}
        with _lock:
            _state['probe_output'] = str(apart.get('printed', ''))
    else:
        known = {'key': key, 'devices': _ask_ncnn(get_ncnn), 'default': None}
    found: List[list] = known['devices']    # type: ignore[assignment]
    if found and known['default'] is None:
        try:
            known['default'] = int(get_ncnn().get_default_gpu_index())     # type: ignore
        except Exception:  # an ncnn without it: the first device
            known['default'] = found[0][0]
    if cache_file is not None and (found or keep_empty):
        try:
            path = pathlib.Path(str(cache_file))
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix('.tmp')
            tmp.write_text(json.dumps(known, indent=1))
            tmp.replace(path)
        except OSError:
            pass    # a read-only cache: the instance is created at each start
    with _lock:
        _state['known'] = known
    return known


# The device list asked in a throwaway interpreter (installed.asked_apart)
ASK_APART = (
    'import json, ncnn\n'
    'from edge_infer.backends.libs import vulkan\n'
    'found = vulkan._ask_ncnn(lambda: ncnn)\n'
    'default = int(ncnn.get_default_gpu_index()) if found else None\n'
    'print(json.dumps({"devices": found, "default": default,\n'
    '                  "printed": vulkan.probe_output()}))')


def _ask_ncnn(get_ncnn: Callable[[], object]) -> List[list]:
    out: List[list] = []
    try:
        ncnn = get_ncnn()
    except ImportError:
        return out
    if not hasattr(ncnn, 'get_gpu_count'):
        return out
    count = int(_without_device_lines(ncnn.get_gpu_count))     # type: ignore
    with _lock:
        _state['instance'] = True
    shorts: List[str] = []
    for i in range(count):
        info = ncnn.get_gpu_info(i)     # type: ignore[attr-defined]
        full = str(info.device_name())
        short = short_gpu_name(full)
        if short in shorts:
            short = f'{short}-{i}'
        shorts.append(short)
        try:
            drv = f'driver {info.driver_version()}, api {info.api_version()}'
        except Exception:  # an ncnn build without them
            drv = ''
        out.append([i, full, short, drv])
    return out


def _without_device_lines(call: Callable[[], object]) -> object:
    """Return ``call()``; the device lines ncnn's C++ code prints on stderr meanwhile go.

    Creating the Vulkan instance prints four lines per device
    (``[0 llvmpipe (LLVM 15.0.6, 256 bits)]  queueC=0[1] ...``) straight to
    file descriptor 2, which ``ros2 launch`` shows among the package's own
    lines. They are kept in :func:`probe_output`; anything else written
    to stderr meanwhile (another thread's log line) is passed on.
    """
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):     # no stderr to redirect
        return call()
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            return call()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            lines = sink.read().decode(errors='replace').splitlines(keepends=True)
            ours = [ln for ln in lines if NCNN_DEVICE_LINE.match(ln)]
            with _lock:
                _state['probe_output'] = ''.join(ours)
            others = ''.join(ln for ln in lines if not NCNN_DEVICE_LINE.match(ln))
            if others:
                os.write(2, others.encode())
