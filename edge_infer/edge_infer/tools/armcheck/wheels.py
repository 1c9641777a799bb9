# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The Arm environment's Python packages: aarch64 wheels pinned like the host's, host links.

The wheels the ROS-free core imports (:data:`WHEELS`) are fetched by the
host's pip for the target platform, at the versions installed here (or
pinned in requirements.txt); x86 packages whose binaries the emulated Python
runs as subprocesses (pnnx) are linked from the host.
"""

import importlib.metadata as metadata
import pathlib
import re
import shutil
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence

from .steps import done, FORMAT, Unavailable, write_stamp

Log = Callable[[str], object]

PYTHON = '3.11'
GLIBC = (2, 36)             # bookworm's: the newest manylinux tag the sysroot can load
# What the ROS-free core imports (backends, core, manager), as PyPI distributions.
WHEELS = ('numpy', 'pyyaml', 'opencv-python-headless', 'onnx', 'onnxruntime', 'openvino',
          'ncnn', 'psutil')
# Host packages whose x86 binaries the emulated Python runs as subprocesses.
HOST_PACKAGES = ('pnnx',)
REPO_REQUIREMENTS = pathlib.Path(__file__).resolve().parents[4] / 'requirements.txt'


def _norm(name: str) -> str:
    return re.sub(r'[-_.]+', '-', name).lower()


def _requirement_pins(path: pathlib.Path = REPO_REQUIREMENTS) -> Dict[str, str]:
    """Return {distribution: version} of the ``name==version`` lines of a requirements file."""
    pins: Dict[str, str] = {}
    try:
        text = path.read_text()
    except OSError:
        return pins
    for line in text.splitlines():
        m = re.match(r'\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;#]+)', line)
        if m:
            pins[_norm(m.group(1))] = m.group(2)
    return pins


def _installed(name: str) -> Optional[metadata.Distribution]:
    try:
        return metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None


def host_pins(names: Sequence[str] = WHEELS) -> Dict[str, str]:
    """Return the host's versions of ``names`` (installed here, else requirements.txt)."""
    req = _requirement_pins()
    out = {}
    for name in names:
        dist = _installed(name)
        out[_norm(name)] = dist.version if dist else req.get(_norm(name), '')
    return out


def host_dependency_pins(names: Sequence[str] = WHEELS) -> Dict[str, str]:
    """Return the host's installed versions of every dependency under ``names`` (constraints)."""
    out: Dict[str, str] = {}
    todo = list(names)
    seen = set()
    while todo:
        name = _norm(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        dist = _installed(name)
        if dist is None:
            continue
        out[name] = dist.version
        for req in dist.requires or []:
            if 'extra ==' in req:
                continue
            m = re.match(r'\s*([A-Za-z0-9][A-Za-z0-9._-]*)', req)
            if m:
                todo.append(m.group(1))
    return out


def platform_tags(glibc=GLIBC) -> List[str]:
    """Return the aarch64 wheel platform tags the sysroot's glibc can load."""
    return ['manylinux2014_aarch64'] + [f'manylinux_2_{m}_aarch64'
                                        for m in range(17, glibc[1] + 1)]


def _pip(args: Sequence[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'pip', '--disable-pip-version-check',
                           '--no-input', *args], capture_output=True, text=True)


def _pip_error(proc: subprocess.CompletedProcess) -> str:
    lines = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines()
             if ln.strip().startswith('ERROR')]
    return lines[0] if lines else (proc.stderr.strip().splitlines() or ['?'])[-1]


def site_versions(site: pathlib.Path) -> Dict[str, str]:
    """Return {distribution: version} of what is installed in ``site``."""
    out = {}
    for info in site.glob('*.dist-info'):
        name, _, version = info.name[:-len('.dist-info')].partition('-')
        out[_norm(name)] = version
    return out


def make_site(home: pathlib.Path, log: Log) -> dict:
    pins = host_pins()
    constraints = host_dependency_pins()
    want = {'format': FORMAT, 'python': PYTHON, 'platforms': platform_tags(), 'pins': pins,
            'constraints': constraints}
    made = done(home, 'wheels', want)
    site = home / 'site'
    if made is not None and site.is_dir():
        return made
    t = time.monotonic()
    tmp = home / 'site.tmp'
    cfile = home / 'constraints.txt'
    cfile.parent.mkdir(parents=True, exist_ok=True)
    cfile.write_text(''.join(f'{k}=={v}\n' for k, v in sorted(constraints.items())
                             if k not in pins))
    base = ['install', '-q', '--target', str(tmp), '--only-binary=:all:',
            '--python-version', PYTHON, '--implementation', 'cp',
            '--abi', f'cp{PYTHON.replace(".", "")}']
    for tag in platform_tags():
        base += ['--platform', tag]
    reqs = [f'{k}=={v}' if v else k for k, v in pins.items()]
    attempts = [('host versions of the wheels and their dependencies',
                 [*base, '-c', str(cfile), *reqs]),
                ('host versions of the wheels, dependencies as pip resolves them',
                 [*base, *reqs]),
                ('newest aarch64 wheels (no host version has one)', [*base, *pins])]
    errors = []
    for what, args in attempts:
        shutil.rmtree(tmp, ignore_errors=True)
        proc = _pip(args)
        if proc.returncode == 0:
            break
        errors.append(_pip_error(proc))
        log(f'arm-check: pip ({what}) failed: {errors[-1]}')
    else:
        raise Unavailable(f'aarch64 wheels could not be fetched: {errors[-1]}')
    shutil.rmtree(site, ignore_errors=True)
    tmp.replace(site)
    versions = site_versions(site)
    differ = {k: f'{v} (host {pins[k]})' for k, v in versions.items()
              if k in pins and pins[k] and v != pins[k]}
    made = {'versions': versions, 'how': what, 'differ': differ}
    write_stamp(home, 'wheels', want, made)
    size = sum(f.stat().st_size for f in site.rglob('*') if f.is_file())
    log(f'arm-check: {len(versions)} aarch64 wheels for CPython {PYTHON} ({what}; '
        f'{size / 1e6:.0f} MB installed) in {time.monotonic() - t:.1f} s'
        + (f'; differing from the host: {differ}' if differ else ''))
    return made


def make_hostpy(home: pathlib.Path, log: Log) -> dict:
    """Link host packages whose x86 binaries the emulated Python runs (pnnx)."""
    links = {}
    for name in HOST_PACKAGES:
        dist = _installed(name)
        if dist is None:
            continue
        base = pathlib.Path(str(dist.locate_file('')))
        if (base / name).is_dir():
            links[name] = str(base / name)
        info = next((f.parts[0] for f in dist.files or [] if f.parts and
                     f.parts[0].endswith('.dist-info')), None)
        if info and (base / info).is_dir():       # for importlib.metadata.version()
            links[info] = str(base / info)
    want = {'format': FORMAT, 'links': links}
    hostpy = home / 'hostpy'
    made = done(home, 'hostpy', want)
    if made is not None and all((hostpy / k).exists() for k in links):
        return made
    shutil.rmtree(hostpy, ignore_errors=True)
    hostpy.mkdir(parents=True)
    for k, target in links.items():
        (hostpy / k).symlink_to(target)
    made = {'links': links}
    write_stamp(home, 'hostpy', want, made)
    if not any(k in links for k in HOST_PACKAGES):
        log('arm-check: no host pnnx: the ncnn candidates will say their converter is missing')
    return made
