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
  imports (:data:`.wheels.WHEELS`), fetched by the host's pip for the target
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
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence

from .steps import done, FORMAT, Unavailable, write_stamp
from .wheels import host_pins, make_hostpy, make_site, PYTHON

Log = Callable[[str], object]

SUITE = 'bookworm'
MIRROR = 'http://deb.debian.org/debian'
KEYRING = pathlib.Path('/usr/share/keyrings/debian-archive-keyring.gpg')
# arm64 packages of the sysroot (apt adds their dependencies).
SYSROOT_PACKAGES = ('python3.11', 'libstdc++6', 'libgomp1')
QEMU_PACKAGE = 'qemu-user-static'
QEMU_MEMBER = './usr/bin/qemu-aarch64-static'
CPU = 'neoverse-n1'         # QEMU_CPU: ARMv8.2 with fp16 arithmetic, like a Jetson Orin's A78


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
    from ... import paths
    return paths.data_home() / 'arm'


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
    made = done(home, 'sysroot', want)
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
    write_stamp(home, 'sysroot', want, made)
    log(f'arm-check: arm64 sysroot from {len(debs)} Debian packages ({size / 1e6:.0f} MB; '
        f'python3.11 {versions.get("python3.11", "?")}, libc6 {versions.get("libc6", "?")}) '
        f'in {time.monotonic() - t:.1f} s')
    return made


def _make_qemu(home: pathlib.Path, apt: _Apt, log: Log) -> dict:
    want = {'format': FORMAT, 'suite': SUITE, 'mirror': apt.mirror, 'package': QEMU_PACKAGE}
    made = done(home, 'qemu', want)
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
    write_stamp(home, 'qemu', want, made)
    log(f'arm-check: qemu-aarch64-static {version} (Debian {SUITE}) in '
        f'{time.monotonic() - t:.1f} s')
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
            wheels['made'] = make_site(home, log)
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
    make_hostpy(home, log)
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
