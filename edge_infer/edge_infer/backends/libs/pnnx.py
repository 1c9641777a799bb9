# Copyright 2026 edge_infer contributors. Apache-2.0.
"""ncnn's model files from ONNX: the ``pnnx`` converter, cached, and a first run apart (no ROS).

The ``pnnx`` binary bundled in the PyPI ``pnnx`` package (installed with
``--no-deps``: its console script imports torch, the binary needs only
libc/libstdc++) converts a model file once; the files are cached under
``<cache_dir>/ncnn/`` as ``<stem>.<12 hex of the source sha256>.pnnx<version>
.ncnn.param / .bin`` with a ``.ncnn.json`` sidecar recording both files'
sha256, checked on every reuse (a corrupted file is converted again, said once
in the log). The input becomes ``in0``, the outputs ``out0..`` in ONNX order.

ncnn crashes the process on some converted graphs (a segmentation fault in
``extract``, seen with NanoDet laid out as YOLOv8 by appended ONNX nodes), so
each converted file runs once in a separate process first
(:func:`first_run_verdict`); :mod:`.ncnn` opens only what passed.
"""

import fcntl
import importlib.util
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Callable, List, Optional, Sequence, Tuple

from ...checksums import sha256_file
from ...core.backend import BackendError, first_line

PNNX_PIN = '20261020'
INSTALL_PNNX = f'pip install --no-deps pnnx=={PNNX_PIN}'
CONVERT_TIMEOUT_S = 600
Log = Callable[[str], object]
# Conversions actually run (pnnx invocations) in this process: a cache hit runs none.
pnnx_runs = 0


def pnnx_binary() -> Optional[pathlib.Path]:
    """Return the pnnx converter binary of the PyPI ``pnnx`` package, or None.

    Found with ``importlib.util.find_spec`` (which does not run the
    package's ``__init__``: that one imports torch).
    """
    try:
        spec = importlib.util.find_spec('pnnx')
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        exe = pathlib.Path(folder) / 'pnnx'
        if exe.is_file():
            return exe
    return None


def pnnx_version() -> str:
    """Return the pnnx package version ('unknown' when only the binary is there)."""
    from importlib import metadata
    try:
        return metadata.version('pnnx')
    except metadata.PackageNotFoundError:
        return 'unknown'


def _useful_line(text: str) -> str:
    """Return pnnx's last line that says something (not progress, tables or timings)."""
    for line in reversed(text.splitlines()):
        line = re.sub(r'\x1b\[[0-9;]*m', '', line).strip()
        if not line or line.startswith('#') or line[0] in '│├└┌─┬┴┼' or \
                re.search(r'\.\.\.\s+[\d.]+ms$', line) or ' = ' in line or \
                line.startswith(('FLOPS', 'memory OPS', 'model inputshape')):
            continue
        return line
    return 'no message'


ISOLATE_FIRST_RUN = True     # False: a caller that isolates crashes itself (arm-check's worker)
FIRST_RUN = (
    'import sys\n'
    'import numpy as np\n'
    'import ncnn\n'
    'param, weights, shape, outputs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])\n'
    'net = ncnn.Net()\n'
    'net.opt.use_vulkan_compute = False\n'
    'net.opt.num_threads = 1\n'
    'assert net.load_param(param) == 0 and net.load_model(weights) == 0, "load"\n'
    'x = np.zeros([int(v) for v in shape.split(",")], np.float32)\n'
    'ex = net.create_extractor()\n'
    'ex.input("in0", ncnn.Mat(x))\n'
    'for k in range(outputs):\n'
    '    ex.extract(f"out{k}")\n')


def first_run_verdict(files: 'NcnnModelFiles', input_shape: Sequence[int],
                      outputs: int) -> str:
    """Run a converted model once in a separate process; return '' or why it must not run here.

    ncnn crashes the process on some converted graphs (a segmentation fault
    in ``extract``, seen with NanoDet laid out as YOLOv8 by appended ONNX
    nodes: a user's own model could do the same), and in a node that would
    kill the container mid-profile. The verdict is kept beside the converted
    files (``<param>.firstrun``), so the check runs once per converted file.
    """
    if not ISOLATE_FIRST_RUN:
        return ''
    stamp = files.param.with_name(files.param.name + '.firstrun')
    if stamp.is_file():
        verdict = stamp.read_text()
        return '' if verdict == 'ok' else verdict
    shape = ','.join(str(int(v)) for v in list(input_shape)[1:])      # batch dropped
    try:
        proc = subprocess.run([sys.executable, '-c', FIRST_RUN, os.fspath(files.param),
                               os.fspath(files.bin), shape, str(int(outputs))],
                              capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return 'ncnn did not finish one run of the converted model within 300 s'
    if proc.returncode == 0:
        verdict = 'ok'
    elif proc.returncode < 0:
        sig = signal.Signals(-proc.returncode).name
        verdict = (f'ncnn crashed ({sig}) running the converted {files.param.name} once in a '
                   f'separate process: left out (in the node it would have killed the '
                   f'process)')
    else:
        verdict = (f'ncnn failed running the converted {files.param.name} once: '
                   f'{_useful_line(proc.stdout + proc.stderr)}')
    tmp = stamp.with_name(f'{stamp.name}.{os.getpid()}')
    tmp.write_text(verdict)
    os.replace(tmp, stamp)      # two processes checking at once: one whole verdict wins
    return '' if verdict == 'ok' else verdict


def param_graph(param: pathlib.Path) -> Tuple[List[str], set]:
    """Return (layer types, blob names) of an ncnn .param file."""
    lines = param.read_text(errors='replace').splitlines()
    if not lines or lines[0].strip() != '7767517':
        raise BackendError(f'{param.name} is not an ncnn param file (magic {lines[:1]})')
    types: List[str] = []
    blobs: set = set()
    for line in lines[2:]:
        parts = line.split()
        if len(parts) < 4:
            continue
        n_in, n_out = int(parts[2]), int(parts[3])
        types.append(parts[0])
        blobs.update(parts[4:4 + n_in + n_out])
    return types, blobs


class NcnnModelFiles:
    """A converted model: the .param / .bin pair and its sidecar, keyed by source and pnnx."""

    def __init__(self, src: pathlib.Path, cache_dir: pathlib.Path, source_sha256: str,
                 pnnx: str):
        self.src = src
        self.source_sha256 = source_sha256
        base = pathlib.Path(cache_dir) / 'ncnn' / \
            f'{src.stem}.{source_sha256[:12]}.pnnx{pnnx}.ncnn'
        self.param = base.with_name(base.name + '.param')
        self.bin = base.with_name(base.name + '.bin')
        self.sidecar = base.with_name(base.name + '.json')
        self.lock = base.with_name(base.name + '.lock')

    def problem(self) -> str:
        """Return why the cached pair cannot be used ('' when its checksums match)."""
        if not self.sidecar.is_file():
            return 'missing'
        try:
            rec = json.loads(self.sidecar.read_text())
            want = {self.param: rec['param_sha256'], self.bin: rec['bin_sha256']}
            if rec['source_sha256'] != self.source_sha256:
                return f'{self.sidecar.name} records another source'
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return f'{self.sidecar.name} unreadable ({first_line(exc)})'
        for path, sha in want.items():
            if not path.is_file():
                return f'{path.name} missing'
            if sha256_file(path) != sha:
                return f'{path.name} does not match its recorded sha256'
        return ''


def convert(src: pathlib.Path, cache_dir: pathlib.Path, input_shape: Sequence[int],
            log: Log = print, who: str = 'ncnn') -> NcnnModelFiles:
    """Return the ncnn files of ONNX model ``src``, converting with pnnx when not cached.

    :param input_shape: the model's static input shape (batch first).
    :param log: gets one line when a conversion runs (and why, when a cached
        pair failed its checksum); nothing on a cache hit.
    :raises BackendError: no pnnx binary, or pnnx failed (with its last
        useful line).
    """
    global pnnx_runs
    exe = pnnx_binary()
    if exe is None:
        raise BackendError(f'{who}: pnnx converter binary not found: {INSTALL_PNNX}')
    src = pathlib.Path(src)
    files = NcnnModelFiles(src, cache_dir, sha256_file(src), pnnx_version())
    files.param.parent.mkdir(parents=True, exist_ok=True)
    with open(files.lock, 'a+') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)    # one conversion at a time per model file
        why = files.problem()
        if not why:
            return files
        if why != 'missing':
            log(f'{who}: cached conversion of {src.name} unusable ({why}); converting again')
        tmp = pathlib.Path(tempfile.mkdtemp(prefix=files.param.name + '.',
                                            suffix='.tmp', dir=files.param.parent))
        try:
            model = tmp / 'model.onnx'
            try:
                os.symlink(src.resolve(), model)
            except OSError:     # no symlinks on this file system
                shutil.copyfile(src, model)
            cmd = [os.fspath(exe), model.name,
                   f"inputshape=[{','.join(str(int(d)) for d in input_shape)}]", 'fp16=0',
                   'ncnnparam=model.ncnn.param', 'ncnnbin=model.ncnn.bin']
            t0 = time.perf_counter()
            pnnx_runs += 1
            try:
                proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True,
                                      errors='replace', timeout=CONVERT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise BackendError(f'{who}: pnnx took over {CONVERT_TIMEOUT_S} s converting '
                                   f'{src.name}') from None
            except OSError as exc:
                raise BackendError(f'{who}: cannot run pnnx ({exe}): {first_line(exc)}') \
                    from None
            out_param, out_bin = tmp / 'model.ncnn.param', tmp / 'model.ncnn.bin'
            if proc.returncode != 0 or not out_param.is_file() or not out_bin.is_file():
                how = (f'killed by signal {-proc.returncode}' if proc.returncode < 0 else
                       f'exit {proc.returncode}')
                raise BackendError(f'{who}: pnnx could not convert {src.name} ({how}): '
                                   f'{_useful_line(proc.stdout + proc.stderr)}')
            record = {'source': src.name, 'source_sha256': files.source_sha256,
                      'pnnx': pnnx_version(), 'inputshape': list(input_shape),
                      'param_sha256': sha256_file(out_param),
                      'bin_sha256': sha256_file(out_bin)}
            sidecar = tmp / 'model.ncnn.json'
            sidecar.write_text(json.dumps(record, indent=1))
            # the sidecar last: its checksums vouch for the pair only once both are in place
            os.replace(out_bin, files.bin)
            os.replace(out_param, files.param)
            os.replace(sidecar, files.sidecar)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    log(f'{who}: converted {src.name} with pnnx {pnnx_version()} in '
        f'{time.perf_counter() - t0:.1f} s -> {files.param.name}')
    return files


# ------------------------------------------------------------------------ session
