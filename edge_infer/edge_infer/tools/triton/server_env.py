# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The Triton server's own environment: a venv with the tritonserver that nvidia-pytriton bundles.

``$EDGE_INFER_HOME/triton/venv`` holds ``config/triton_server.txt``'s pins:
nvidia-pytriton 0.7.0 (a real ``tritonserver`` 2.51 binary, its libraries,
the Python backend and its stubs for Python 3.8-3.13; it pins numpy<2, so it
cannot live in the main environment), and ONNX Runtime and OpenVINO, which
run the models inside the server. Made once, re-made when that file or the
Python version changes (a stamp in the venv holds their hash), by ./run.sh's
set-up and by ``edge_infer serve`` on first use.

What the wheel holds, looked at: ``tritonserver/bin/tritonserver``,
``backends/python`` (libtriton_python.so and its utils), the stubs per Python
version, the local response cache. No ONNX Runtime, OpenVINO or TensorRT
backend: the models are served through the Python backend
(:mod:`.served_model`). :func:`prepare_backends` lays out a backend
directory with the stub of the venv's Python, as the server expects it.
"""

import ctypes.util
import hashlib
import os
import pathlib
import platform
import shutil
import subprocess
import sys
from typing import Callable, Dict, Optional

from ... import paths

Log = Callable[[str], None]
REQUIREMENTS = 'triton_server.txt'
STAMP = '.edge_infer_stamp'
STUB_VERSIONS = ('3.8', '3.9', '3.10', '3.11', '3.12', '3.13')


def home(data_home: Optional[pathlib.Path] = None) -> pathlib.Path:
    """Return the folder of the server's venv, backends and model repository."""
    return pathlib.Path(data_home or paths.data_home()) / 'triton'


def requirements() -> pathlib.Path:
    """Return the pinned requirements of the server's venv."""
    return paths.config_dir() / REQUIREMENTS


def wanted_stamp() -> str:
    """Return the hash the venv's stamp must hold: requirements, Python version, machine."""
    h = hashlib.sha256(requirements().read_bytes())
    h.update(f'{sys.version_info[:2]} {platform.machine()}'.encode())
    return h.hexdigest()


def unavailable_reason() -> str:
    """Return why the bundled server cannot run on this machine ('' when it can)."""
    machine = platform.machine()
    if machine not in ('x86_64', 'aarch64'):
        return f'nvidia-pytriton has wheels for x86_64 and aarch64 only (this is {machine})'
    libc, version = platform.libc_ver()
    try:
        too_old = tuple(int(p) for p in version.split('.')[:2]) < (2, 35)
    except ValueError:
        too_old = False
    if libc != 'glibc' or too_old:
        return f'nvidia-pytriton needs glibc >= 2.35 (manylinux_2_35; found {libc} {version})'
    ver = f'{sys.version_info[0]}.{sys.version_info[1]}'
    if ver not in STUB_VERSIONS:
        return f'the bundled Python backend has stubs for Python {", ".join(STUB_VERSIONS)}'
    if not ctypes.util.find_library(f'python{ver}'):
        return (f'the Python backend stub links libpython{ver}.so, which is not installed '
                f'(Debian/Ubuntu: apt-get install libpython{ver})')
    return ''


class ServerEnv:
    """Paths of a ready server environment."""

    def __init__(self, root: pathlib.Path):
        self.root = root
        self.venv = root / 'venv'
        self.python = self.venv / 'bin' / 'python'
        site = self.venv / 'lib' / f'python{sys.version_info[0]}.{sys.version_info[1]}' \
            / 'site-packages'
        self.dist = site / 'pytriton' / 'tritonserver'
        self.libs = site / 'nvidia_pytriton.libs'
        self.server = self.dist / 'bin' / 'tritonserver'
        self.backends = root / 'backends'

    def env(self) -> Dict[str, str]:
        """Return the environment the server runs in (its libraries; its venv's python first).

        The Python backend's stub takes the first ``python3`` on PATH for its
        module search path: the server's venv, never the main one (numpy 2).
        Variables of the main venv that would reach the stub are dropped.
        """
        env = {k: v for k, v in os.environ.items()
               if k not in ('PYTHONPATH', 'PYTHONHOME', 'VIRTUAL_ENV')
               and not k.startswith('_ROS_WHEELS')}
        env['LD_LIBRARY_PATH'] = ':'.join(p for p in (str(self.libs),
                                                      os.environ.get('LD_LIBRARY_PATH', ''))
                                          if p)
        env['PATH'] = f'{self.venv / "bin"}:{env.get("PATH", "/usr/bin:/bin")}'
        env['VIRTUAL_ENV'] = str(self.venv)
        return env


def ready(root: Optional[pathlib.Path] = None) -> Optional[ServerEnv]:
    """Return the environment when it is made and current, else None."""
    root = root or home()
    stamp = root / 'venv' / STAMP
    try:
        if stamp.read_text() != wanted_stamp():
            return None
    except OSError:
        return None
    env = ServerEnv(root)
    return env if env.server.is_file() and (env.backends / 'python').is_dir() else None


def ensure(root: Optional[pathlib.Path] = None, log: Log = print) -> ServerEnv:
    """Make the server's venv and backend folder where missing or stale; return its paths.

    RuntimeError (one line) where the bundled server cannot run here, or pip
    failed.
    """
    root = root or home()
    env = ready(root)
    if env is not None:
        return env
    why = unavailable_reason()
    if why:
        raise RuntimeError(f'no Triton server here: {why}')
    env = ServerEnv(root)
    log(f'[triton] making the server environment in {env.venv} ({requirements()})')
    if env.venv.exists():
        shutil.rmtree(env.venv)
    root.mkdir(parents=True, exist_ok=True)
    base = getattr(sys, '_base_executable', sys.executable)
    for cmd in ([base, '-m', 'venv', str(env.venv)],
                [str(env.python), '-m', 'pip', 'install', '-q', '-r', str(requirements())]):
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ['']
            raise RuntimeError(f'[triton] `{" ".join(cmd[:4])} ...` failed: {tail[0]}')
    prepare_backends(env)
    (env.venv / STAMP).write_text(wanted_stamp())
    log(f'[triton] server environment ready: {env.server}')
    return env


def prepare_backends(env: ServerEnv) -> None:
    """Lay out ``backends/python``: the wheel's Python backend and the stub of our Python."""
    ver = f'{sys.version_info[0]}.{sys.version_info[1]}'
    target = env.backends / 'python'
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for f in (env.dist / 'backends' / 'python').iterdir():
        if f.is_file():
            shutil.copy2(f, target / f.name)
    shutil.copy2(env.dist / 'python_backend_stubs' / ver / 'triton_python_backend_stub',
                 target / 'triton_python_backend_stub')


def main(argv=None) -> int:
    """Make the server's environment (the set-up step of ./run.sh); say why not where it cannot."""
    why = unavailable_reason()
    if why:
        print(f'[setup] Triton server environment skipped: {why}')
        return 0
    try:
        ensure()
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
