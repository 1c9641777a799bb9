# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The aarch64 environment of ``edge_infer arm-check``, made once and cached (host side).

Under ``$EDGE_INFER_HOME/arm`` (default ``.data/arm`` with run.sh):

- ``sysroot/``: Debian bookworm's arm64 ``python3.11`` with its dependency
  closure, plus ``libstdc++6`` and ``libgomp1`` that the wheels expect from
  the system. Resolved and fetched by the host's ``apt-get`` with a private
  state (own sources list, empty dpkg status, ``APT::Architecture=arm64``)
  and unpacked with ``dpkg-deb -x``: the host's dpkg database, sources and
  caches are never touched, and root is not needed. About 40 packages,
  16 MB fetched, 76 MB unpacked. ``sysroot/proc/cpuinfo`` is a fake
  Neoverse-N1 entry: qemu 7.2 shows the program the host's x86
  ``/proc/cpuinfo`` (its ``-L`` prefix applies to /proc too), and
  onnxruntime's cpuinfo parser segfaults on that at import.
- ``qemu/qemu-aarch64-static``: taken out of bookworm's amd64
  ``qemu-user-static`` (7.2) the same way (the rest of that 63 MB package
  is dropped).
- ``site/``: PyPI's aarch64 wheels for CPython 3.11 of what the ROS-free core
  imports (:data:`WHEELS`), fetched by the host's pip for the target
  platform (``--platform manylinux_2_xx_aarch64 --only-binary=:all:``) and
  installed with ``--target``. Versions are the host's: each distribution
  and every dependency under it is pinned to the version installed here
  (the requirements files stay the one place where versions are chosen);
  where such a pin has no aarch64 wheel the newest that has one is taken
  and the difference is reported.
- ``hostpy/``: links to host (x86_64) packages whose *binaries* the emulated
  Python runs as x86 subprocesses (``pnnx``, ncnn's model converter):
  starting an x86 program from the emulated process works, starting another
  aarch64 one does not (no binfmt_misc registration is made).
- ``stamps/<step>.json``: what each step was made from; a step runs again
  only when that changes (another pin, package list or format).

:func:`prepare` raises :class:`Unavailable` (one line: why) where this
cannot be had: not an x86_64 Linux host, no apt-get / dpkg-deb, no Debian
archive keyring, or the downloads fail.
"""

from dataclasses import dataclass, field
import hashlib
import importlib.metadata as metadata
import json
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence

Log = Callable[[str], object]

FORMAT = 1
SUITE = 'bookworm'
MIRROR = 'http://deb.debian.org/debian'
KEYRING = pathlib.Path('/usr/share/keyrings/debian-archive-keyring.gpg')
# arm64 packages of the sysroot (apt adds their dependencies).
SYSROOT_PACKAGES = ('python3.11', 'libstdc++6', 'libgomp1')
PYTHON = '3.11'
GLIBC = (2, 36)             # bookworm's: the newest manylinux tag the sysroot can load
QEMU_PACKAGE = 'qemu-user-static'
QEMU_MEMBER = './usr/bin/qemu-aarch64-static'
CPU = 'neoverse-n1'         # QEMU_CPU: ARMv8.2 with fp16 arithmetic, like a Jetson Orin's A78
# What the ROS-free core imports (backends, core, manager), as PyPI distributions.
WHEELS = ('numpy', 'pyyaml', 'opencv-python-headless', 'onnx', 'onnxruntime', 'openvino',
          'ncnn', 'psutil')
# Host packages whose x86 binaries the emulated Python runs as subprocesses.
HOST_PACKAGES = ('pnnx',)
REPO_REQUIREMENTS = pathlib.Path(__file__).resolve().parents[3] / 'requirements.txt'


class Unavailable(RuntimeError):
    """The aarch64 environment cannot be had on this machine (the message says why)."""


@dataclass
class Emulator:
    """A prepared aarch64 Python under qemu-user: how to run it."""

    root: pathlib.Path
    qemu: pathlib.Path
    sysroot: pathlib.Path
    site: pathlib.Path
    hostpy: pathlib.Path
    wheels: Dict[str, str] = field(default_factory=dict)    # distribution -> version
    host_pins: Dict[str, str] = field(default_factory=dict)
    debs: Dict[str, str] = field(default_factory=dict)      # package -> version
    qemu_version: str = ''

    @property
    def python(self) -> pathlib.Path:
        """Return the aarch64 interpreter (a host path inside the sysroot)."""
        return self.sysroot / 'usr' / 'bin' / f'python{PYTHON}'

    def command(self, args: Sequence[str]) -> List[str]:
        """Return the host command that runs ``python3.11 ARGS`` on aarch64."""
        return [str(self.qemu), '-L', str(self.sysroot), str(self.python), *map(str, args)]

    def env(self, pythonpath: Sequence[pathlib.Path], extra: Optional[dict] = None) -> dict:
        """Return the emulated process's environment (nothing of the host's venv or ROS)."""
        keep = ('PATH', 'HOME', 'TMPDIR', 'TERM', 'http_proxy', 'https_proxy', 'no_proxy')
        env = {k: os.environ[k] for k in keep if k in os.environ}
        env.update({
            'LANG': 'C.UTF-8', 'LC_ALL': 'C.UTF-8',
            'QEMU_CPU': CPU,
            'PYTHONPATH': os.pathsep.join(str(p) for p in
                                          [*pythonpath, self.site, self.hostpy]),
            'PYTHONNOUSERSITE': '1',
            'PYTHONUNBUFFERED': '1',
            # aarch64-run bytecode apart from the host's (and from the source tree)
            'PYTHONPYCACHEPREFIX': str(self.root / 'pycache'),
        })
        env.update(extra or {})
        return env


def arm_home() -> pathlib.Path:
    """Return where the aarch64 environment and the emulated runs live."""
    from .. import paths
    return paths.data_home() / 'arm'


# ------------------------------------------------------------------------ stamps
def _stamp_path(home: pathlib.Path, step: str) -> pathlib.Path:
    return home / 'stamps' / f'{step}.json'


def read_stamp(home: pathlib.Path, step: str) -> Optional[dict]:
    """Return the stamp of a step ({'want', 'made', 'at'}) or None."""
    try:
        return json.loads(_stamp_path(home, step).read_text())
    except (OSError, ValueError):
        return None


def _done(home: pathlib.Path, step: str, want: dict) -> Optional[dict]:
    """Return what the step made when its stamp matches ``want``, else None."""
    stamp = read_stamp(home, step)
    if stamp and stamp.get('want') == want:
        return stamp.get('made', {})
    return None


def _write_stamp(home: pathlib.Path, step: str, want: dict, made: dict) -> None:
    path = _stamp_path(home, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix('.tmp')
    tmp.write_text(json.dumps({'want': want, 'made': made, 'at': time.time()}, indent=1))
    tmp.replace(path)


# --------------------------------------------------------------------------- apt
class _Apt:
    """The host's apt-get with a private state: Debian arm64 (+ the host's arch) packages."""

    def __init__(self, home: pathlib.Path, mirror: str, log: Log):
        self.dir = home / 'apt'
        self.mirror = mirror
        self.log = log
        self.updated = False

    def options(self) -> List[str]:
        d = self.dir
        opts = {
            'Dir::State': d / 'state', 'Dir::State::status': d / 'state' / 'status',
            'Dir::Cache': d / 'cache', 'Dir::Etc::SourceList': d / 'sources.list',
            'Dir::Etc::SourceParts': d / 'empty', 'Dir::Etc::Preferences': d / 'preferences',
            'Dir::Etc::PreferencesParts': d / 'empty',
            'APT::Architecture': 'arm64', 'Debug::NoLocking': 'true',
            'APT::Install-Recommends': 'false', 'APT::Get::Assume-Yes': 'true',
        }
        out = []
        for k, v in opts.items():
            out += ['-o', f'{k}={v}']
        out += ['-o', 'APT::Architectures::=arm64', '-o', f'APT::Architectures::={_host_arch()}']
        if os.geteuid() == 0:       # root apt drops to _apt for downloads: our dirs are root's
            out += ['-o', 'APT::Sandbox::User=root']
        return out

    def run(self, args: Sequence[str], cwd: Optional[pathlib.Path] = None) -> str:
        cmd = ['apt-get', '-q', *self.options(), *args]
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                              env={**os.environ, 'DEBIAN_FRONTEND': 'noninteractive',
                                   'LC_ALL': 'C'})
        if proc.returncode != 0:
            err = [ln for ln in (proc.stderr + proc.stdout).splitlines()
                   if ln.startswith(('E:', 'Err:'))] or proc.stderr.strip().splitlines()[-1:]
            raise Unavailable(f'apt-get {args[0]} ({SUITE} arm64) failed: '
                              f'{"; ".join(err[:2]) or proc.returncode}')
        return proc.stdout

    def update(self) -> None:
        if self.updated:
            return
        d = self.dir
        for sub in ('state/lists/partial', 'cache/archives/partial', 'empty'):
            (d / sub).mkdir(parents=True, exist_ok=True)
        (d / 'state' / 'status').write_text('')
        (d / 'preferences').write_text('')
        (d / 'sources.list').write_text(
            f'deb [signed-by={KEYRING}] {self.mirror} {SUITE} main\n')
        t = time.monotonic()
        self.run(['update'])
        self.updated = True
        self.log(f'arm-check: apt index of Debian {SUITE} (arm64 + {_host_arch()}) in '
                 f'{time.monotonic() - t:.1f} s')

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _host_arch() -> str:
    return {'x86_64': 'amd64', 'aarch64': 'arm64'}.get(platform.machine(), platform.machine())


def check_host() -> None:
    """Raise :class:`Unavailable` when this host cannot prepare or run the emulation."""
    if sys.platform != 'linux' or platform.machine() != 'x86_64':
        raise Unavailable(f'arm-check emulates aarch64 on x86_64 Linux; this is '
                          f'{sys.platform} {platform.machine()}'
                          + (' (an Arm board: run edge_infer profile natively)'
                             if platform.machine() == 'aarch64' else ''))
    missing = [t for t in ('apt-get', 'dpkg-deb') if shutil.which(t) is None]
    if missing:
        raise Unavailable(f'no {" / ".join(missing)} on this machine: the aarch64 sysroot '
                          f'comes from Debian packages (a Debian/Ubuntu host is needed)')
    if not KEYRING.is_file():
        raise Unavailable(f'{KEYRING} missing: the Debian archive keyring checks the arm64 '
                          f'packages (apt-get install debian-archive-keyring)')


def _deb_field(deb: pathlib.Path, name: str) -> str:
    out = subprocess.run(['dpkg-deb', '-f', str(deb), name], capture_output=True, text=True)
    return out.stdout.strip()


# ----------------------------------------------------------------------- sysroot
CPUINFO_ENTRY = """processor\t: {n}
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm \
lrcpc dcpop asimddp ssbs
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x3
CPU part\t: 0xd0c
CPU revision\t: 1

"""


def fake_cpuinfo(cores: int) -> str:
    """Return an aarch64 /proc/cpuinfo (Neoverse-N1, as QEMU_CPU says) for ``cores`` cores."""
    return ''.join(CPUINFO_ENTRY.format(n=i) for i in range(max(1, cores)))


def _write_cpuinfo(sysroot: pathlib.Path) -> None:
    path = sysroot / 'proc' / 'cpuinfo'
    text = fake_cpuinfo(os.cpu_count() or 1)
    if not path.is_file() or path.read_text() != text:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)


def _make_sysroot(home: pathlib.Path, apt: _Apt, log: Log) -> dict:
    want = {'format': FORMAT, 'suite': SUITE, 'mirror': apt.mirror,
            'packages': list(SYSROOT_PACKAGES)}
    made = _done(home, 'sysroot', want)
    sysroot = home / 'sysroot'
    if made is not None and (sysroot / 'usr' / 'bin' / f'python{PYTHON}').is_file():
        _write_cpuinfo(sysroot)     # as many cores as this host has now
        return made
    apt.update()
    t = time.monotonic()
    archives = apt.dir / 'cache' / 'archives'
    for old in archives.glob('*.deb'):
        old.unlink()
    apt.run(['install', '--download-only', *SYSROOT_PACKAGES])
    debs = sorted(archives.glob('*.deb'))
    if not debs:
        raise Unavailable(f'apt-get fetched no arm64 packages for {", ".join(SYSROOT_PACKAGES)}')
    tmp = home / 'sysroot.tmp'
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    versions = {}
    size = 0
    for deb in debs:
        subprocess.run(['dpkg-deb', '-x', str(deb), str(tmp)], check=True)
        versions[_deb_field(deb, 'Package')] = _deb_field(deb, 'Version')
        size += deb.stat().st_size
        deb.unlink()
    _write_cpuinfo(tmp)
    shutil.rmtree(sysroot, ignore_errors=True)
    tmp.replace(sysroot)
    made = {'debs': versions, 'fetched_mb': round(size / 1e6, 1)}
    _write_stamp(home, 'sysroot', want, made)
    log(f'arm-check: arm64 sysroot from {len(debs)} Debian packages ({size / 1e6:.0f} MB; '
        f'python3.11 {versions.get("python3.11", "?")}, libc6 {versions.get("libc6", "?")}) '
        f'in {time.monotonic() - t:.1f} s')
    return made


def _make_qemu(home: pathlib.Path, apt: _Apt, log: Log) -> dict:
    want = {'format': FORMAT, 'suite': SUITE, 'mirror': apt.mirror, 'package': QEMU_PACKAGE}
    made = _done(home, 'qemu', want)
    exe = home / 'qemu' / 'qemu-aarch64-static'
    if made is not None and exe.is_file():
        return made
    apt.update()
    t = time.monotonic()
    where = apt.dir / 'download'
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    apt.run(['download', f'{QEMU_PACKAGE}:{_host_arch()}'], cwd=where)
    debs = list(where.glob('*.deb'))
    if not debs:
        raise Unavailable(f'apt-get download {QEMU_PACKAGE} fetched nothing')
    version = _deb_field(debs[0], 'Version')
    exe.parent.mkdir(parents=True, exist_ok=True)
    tmp = exe.with_suffix('.tmp')
    # only the aarch64 emulator out of the package (63 MB for every target)
    tar = subprocess.Popen(['dpkg-deb', '--fsys-tarfile', str(debs[0])], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)   # closed early: a broken pipe is fine
    found = False
    assert tar.stdout is not None           # stdout=PIPE
    with tarfile.open(fileobj=tar.stdout, mode='r|') as tf:
        for member in tf:
            if member.name == QEMU_MEMBER:
                src = tf.extractfile(member)
                assert src is not None          # a file member (QEMU_MEMBER is the binary)
                with open(tmp, 'wb') as f:
                    shutil.copyfileobj(src, f)
                found = True
                break
    tar.stdout.close()
    tar.wait()
    shutil.rmtree(where, ignore_errors=True)
    if not found:
        raise Unavailable(f'{QEMU_PACKAGE} {version} has no {QEMU_MEMBER}')
    tmp.chmod(0o755)
    tmp.replace(exe)
    made = {'version': version}
    _write_stamp(home, 'qemu', want, made)
    log(f'arm-check: qemu-aarch64-static {version} (Debian {SUITE}) in '
        f'{time.monotonic() - t:.1f} s')
    return made


# ------------------------------------------------------------------------ wheels
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


def _make_site(home: pathlib.Path, log: Log) -> dict:
    pins = host_pins()
    constraints = host_dependency_pins()
    want = {'format': FORMAT, 'python': PYTHON, 'platforms': platform_tags(), 'pins': pins,
            'constraints': constraints}
    made = _done(home, 'wheels', want)
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
    _write_stamp(home, 'wheels', want, made)
    size = sum(f.stat().st_size for f in site.rglob('*') if f.is_file())
    log(f'arm-check: {len(versions)} aarch64 wheels for CPython {PYTHON} ({what}; '
        f'{size / 1e6:.0f} MB installed) in {time.monotonic() - t:.1f} s'
        + (f'; differing from the host: {differ}' if differ else ''))
    return made


def _make_hostpy(home: pathlib.Path, log: Log) -> dict:
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
    made = _done(home, 'hostpy', want)
    if made is not None and all((hostpy / k).exists() for k in links):
        return made
    shutil.rmtree(hostpy, ignore_errors=True)
    hostpy.mkdir(parents=True)
    for k, target in links.items():
        (hostpy / k).symlink_to(target)
    made = {'links': links}
    _write_stamp(home, 'hostpy', want, made)
    if not any(k in links for k in HOST_PACKAGES):
        log('arm-check: no host pnnx: the ncnn candidates will say their converter is missing')
    return made


# ------------------------------------------------------------------------- entry
def prepare(home: Optional[pathlib.Path] = None, log: Log = print,
            mirror: str = MIRROR) -> Emulator:
    """Make (or find, by stamp) the aarch64 environment; return how to run it.

    :raises Unavailable: with a one-line reason where it cannot be had here.
    """
    check_host()
    home = pathlib.Path(home) if home else arm_home()
    home.mkdir(parents=True, exist_ok=True)
    apt = _Apt(home, mirror, log)
    t = time.monotonic()
    # the wheels (pip) are fetched while apt fetches the Debian packages
    wheels: dict = {}

    def fetch_wheels():
        try:
            wheels['made'] = _make_site(home, log)
        except BaseException as exc:  # re-raised in the caller's thread below
            wheels['error'] = exc
    pip = threading.Thread(target=fetch_wheels, name='arm-check-wheels', daemon=True)
    pip.start()
    try:
        debs = _make_sysroot(home, apt, log)
        qemu = _make_qemu(home, apt, log)
    finally:
        if apt.updated:
            apt.cleanup()       # the index and .debs are not needed once unpacked
        pip.join()
    if 'error' in wheels:
        raise wheels['error']
    site = wheels['made']
    _make_hostpy(home, log)
    spent = time.monotonic() - t
    if spent > 1.0:
        log(f'arm-check: aarch64 environment ready in {spent:.0f} s ({home})')
    return Emulator(root=home, qemu=home / 'qemu' / 'qemu-aarch64-static',
                    sysroot=home / 'sysroot', site=home / 'site', hostpy=home / 'hostpy',
                    wheels=site.get('versions', {}), host_pins=host_pins(),
                    debs=debs.get('debs', {}), qemu_version=qemu.get('version', ''))


def environment_digest(emu: Emulator) -> str:
    """Return a short hash of what the emulated environment is made of (for reports)."""
    blob = json.dumps({'wheels': emu.wheels, 'debs': emu.debs, 'qemu': emu.qemu_version},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]
