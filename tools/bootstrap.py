# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Set up edge_infer inside an existing virtual environment, step by step.

Run by ``run.sh`` with the venv's python. Each step is skipped when a stamp
file records that it was done with the same inputs (a hash of the files the
step reads), so a second run takes seconds:

1. pip install the pinned requirements (and requirements-nodeps.txt with
   --no-deps); check for a Vulkan loader + device (Mesa's lavapipe from apt
   when run as root; otherwise the missing packages are named and the ncnn
   Vulkan candidates say why they are unavailable);
2. rewrite the ROS wheels' CMake exports that name the wheel build host's
   include paths (CMake refuses paths that do not exist);
3. build and install edge_infer_msgs with cmake into the venv, and
   vision_msgs (tools/vision_msgs: 4.1.1's definitions) when no vision_msgs
   is importable (never where one is: a robot's own must not be shadowed);
4. install the edge_infer Python package (editable); make the Triton
   server's own venv ($EDGE_INFER_HOME/triton/venv, config/triton_server.txt;
   skipped with the reason where the bundled server cannot run);
5. fetch and convert the trained models, fetch real footage, record the bag.
"""

import argparse
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import time

VENV = pathlib.Path(sys.prefix)
STAMPS = VENV / '.edge_infer_stamps'


def _hash_paths(*paths: pathlib.Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        files = sorted(f for f in p.rglob('*') if f.is_file()) if p.is_dir() else [p]
        for f in files:
            h.update(str(f.relative_to(p.parent)).encode())
            h.update(f.read_bytes())
    h.update(sys.version.encode())
    return h.hexdigest()


def _step(name: str, key: str, func) -> None:
    stamp = STAMPS / name
    if stamp.exists() and stamp.read_text() == key:
        return
    t0 = time.monotonic()
    print(f'[setup] {name} ...', flush=True)
    try:
        func()
    except subprocess.CalledProcessError as exc:
        cmd = ' '.join(str(c) for c in exc.cmd)
        raise SystemExit(f'[setup] {name} FAILED: `{cmd}` exited with {exc.returncode} '
                         f'(its output is above)') from None
    STAMPS.mkdir(parents=True, exist_ok=True)
    stamp.write_text(key)
    print(f'[setup] {name} done in {time.monotonic() - t0:.1f} s', flush=True)


def _run(cmd: list, **kw) -> None:
    subprocess.run(cmd, check=True, **kw)


def pip_install(root: pathlib.Path) -> None:
    """Install the pinned requirements."""
    _run([sys.executable, '-m', 'pip', 'install', '-q', '-r', str(root / 'requirements.txt')])


def pip_install_nodeps(root: pathlib.Path) -> None:
    """Install the pinned packages whose declared dependencies are not needed (pnnx)."""
    _run([sys.executable, '-m', 'pip', 'install', '-q', '--no-deps', '-r',
          str(root / 'requirements-nodeps.txt')])


VULKAN_PACKAGES = ('libvulkan1', 'mesa-vulkan-drivers')


def vulkan_ready() -> str:
    """Return '' when a Vulkan loader and at least one ICD are installed, else what is missing."""
    import ctypes.util
    missing = []
    if not ctypes.util.find_library('vulkan'):
        missing.append('the Vulkan loader (libvulkan1)')
    icds = [f for d in ('/usr/share/vulkan/icd.d', '/etc/vulkan/icd.d')
            for f in pathlib.Path(d).glob('*.json')]
    if not icds:
        missing.append('a Vulkan driver (mesa-vulkan-drivers gives lavapipe, a CPU device)')
    return ', '.join(missing)


def ensure_vulkan() -> None:
    """Install Mesa's lavapipe and the Vulkan loader with apt-get when root; else say so."""
    missing = vulkan_ready()
    if not missing:
        return
    if os.geteuid() == 0 and shutil.which('apt-get'):
        print(f'[setup] installing {" ".join(VULKAN_PACKAGES)} (missing: {missing})', flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
        ok = subprocess.run(['apt-get', 'install', '-y', '-qq', *VULKAN_PACKAGES], env=env,
                            stdout=subprocess.DEVNULL).returncode == 0
        if not ok:      # a stale package list: refresh once and try again
            subprocess.run(['apt-get', 'update', '-qq'], env=env, stdout=subprocess.DEVNULL)
            ok = subprocess.run(['apt-get', 'install', '-y', '-qq', *VULKAN_PACKAGES], env=env,
                                stdout=subprocess.DEVNULL).returncode == 0
        if ok and not vulkan_ready():
            return
    print(f'[setup] no Vulkan here ({missing}): the ncnn Vulkan candidates will report '
          f'unavailable. To test GPU code paths on a machine without a GPU: '
          f'sudo apt-get install {" ".join(VULKAN_PACKAGES)}', flush=True)


def fix_cmake_exports() -> None:
    """Point the wheels' CMake exports at this machine's Python and numpy headers."""
    import numpy

    py_inc = sysconfig.get_paths()['include']
    np_inc = numpy.get_include()
    fixed = 0
    for f in (VENV / 'share').glob('*/cmake/export_*__rosidl_generator_pyExport.cmake'):
        text = f.read_text()
        start = text.find('INTERFACE_INCLUDE_DIRECTORIES "')
        if start < 0:
            continue
        start += len('INTERFACE_INCLUDE_DIRECTORIES "')
        end = text.index('"', start)
        new = f'{py_inc};{np_inc}'
        if text[start:end] != new:
            f.write_text(text[:start] + new + text[end:])
            fixed += 1
    print(f'[setup] rewrote include paths in {fixed} CMake export files')


def build_msgs(src: pathlib.Path) -> None:
    """Build an interface package (edge_infer_msgs, vision_msgs) with cmake into the venv."""
    build = VENV / 'build' / src.name
    env = dict(os.environ, AMENT_PREFIX_PATH=str(VENV),
               CMAKE_PREFIX_PATH=str(VENV), PATH=f'{VENV / "bin"}:{os.environ["PATH"]}')
    _run(['cmake', '-S', str(src), '-B', str(build),
          f'-DCMAKE_INSTALL_PREFIX={VENV}', '-DBUILD_TESTING=OFF',
          f'-DPython3_EXECUTABLE={sys.executable}', '-DCMAKE_BUILD_TYPE=Release'],
         env=env, stdout=subprocess.DEVNULL)
    _run(['cmake', '--build', str(build), '-j', str(os.cpu_count() or 2)],
         env=env, stdout=subprocess.DEVNULL)
    _run(['cmake', '--install', str(build)], env=env, stdout=subprocess.DEVNULL)


def vision_msgs_wanted() -> bool:
    """Return True unless a vision_msgs other than our own build is importable.

    Asked in a fresh interpreter started in / : this script's folder holds the
    sources (tools/vision_msgs), which would pass for a namespace package here.
    """
    code = ('import importlib.util as u; s = u.find_spec("vision_msgs"); '
            'print("" if s is None else " ".join(list(s.submodule_search_locations or []) '
            '+ [s.origin or ""]))')
    where = subprocess.run([sys.executable, '-c', code], cwd='/', capture_output=True,
                           text=True).stdout.strip()
    return not where or str(VENV) in where     # ours: rebuilt when its sources change


def install_package(root: pathlib.Path) -> None:
    """Install edge_infer in editable mode (its own deps come from requirements.txt)."""
    _run([sys.executable, '-m', 'pip', 'install', '-q', '--no-deps', '--no-build-isolation',
          '-e', str(root / 'edge_infer')])


def triton_server(home: pathlib.Path) -> None:
    """Make the Triton server's own venv (nvidia-pytriton pins numpy<2): `edge_infer serve`."""
    _run([sys.executable, '-m', 'edge_infer.tools.triton.server_env'],
         env=dict(os.environ, EDGE_INFER_HOME=str(home)))


def fetch_data(root: pathlib.Path, home: pathlib.Path) -> None:
    """Convert the models, fetch footage and record the demo bag (each step caches)."""
    _run([sys.executable, '-m', 'edge_infer.data', 'prepare', '--home', str(home)])


def main() -> int:
    """Run every set-up step that is not done yet."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--root', type=pathlib.Path, required=True)
    args = ap.parse_args()
    root = args.root.resolve()
    home = pathlib.Path(os.environ.get('EDGE_INFER_HOME', root / '.data'))
    t0 = time.monotonic()
    _step('pip', _hash_paths(root / 'requirements.txt'), lambda: pip_install(root))
    _step('pip-nodeps', _hash_paths(root / 'requirements-nodeps.txt'),
          lambda: pip_install_nodeps(root))
    ensure_vulkan()     # cheap check every time: a removed driver shows at once
    _step('cmake-exports', _hash_paths(root / 'requirements.txt'), fix_cmake_exports)
    _step('msgs', _hash_paths(root / 'requirements.txt', root / 'edge_infer_msgs'),
          lambda: build_msgs(root / 'edge_infer_msgs'))
    if vision_msgs_wanted():
        vision = root / 'tools' / 'vision_msgs'
        _step('vision_msgs', _hash_paths(root / 'requirements.txt', vision),
              lambda: build_msgs(vision))
    _step('package', _hash_paths(root / 'edge_infer' / 'setup.py'),
          lambda: install_package(root))
    triton = root / 'edge_infer' / 'config' / 'triton_server.txt'
    _step('triton-server', _hash_paths(triton), lambda: triton_server(home))
    # Data steps check their own outputs by checksum: always cheap to call.
    try:
        fetch_data(root, home)
    except subprocess.CalledProcessError as exc:
        raise SystemExit(f'[setup] data FAILED (exit {exc.returncode}); see the line above')
    print(f'[setup] ready ({time.monotonic() - t0:.1f} s)', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
