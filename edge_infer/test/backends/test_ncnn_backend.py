# Copyright 2026 edge_infer contributors. Apache-2.0.
"""ncnn candidates run for real: CPU fp32/fp16 and Vulkan (Mesa lavapipe here) against ORT.

Tolerance: fp32 outputs must be within 1e-4 x max(1, max |ORT output|) of
ONNX Runtime CPU (observed: <= 3e-6 relative on both models, CPU and
Vulkan; ncnn sums in another order than ORT).
"""

import json
import os
import pathlib
import subprocess
import sys
import time

from edge_infer import paths
from edge_infer.backends.libs import ncnn as ncnn_backend
from edge_infer.backends.libs import pnnx, vulkan
from edge_infer.backends.libs.ncnn import ncnn_candidates, NcnnBackend
from edge_infer.backends.libs.ort import OrtBackend
from edge_infer.backends.measure.profiling import calibration_frames, probe_backend, probe_model
from edge_infer.core.backend import BackendError
from edge_infer.core.preprocess import Preprocessor
from edge_infer.core.registry import load_registry
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
import pytest

try:
    import ncnn
except ImportError:
    ncnn = None

# Marks, not a module-level skip: under launch_testing's pytest plugin (colcon
# test on a robot) a module-level skip ends the collection of the whole folder.
pytestmark = [
    pytest.mark.skipif(ncnn is None, reason=f'ncnn not installed ({ncnn_backend.INSTALL_NCNN})'),
    pytest.mark.skipif(ncnn is not None and ncnn_backend.pnnx_binary() is None,
                       reason=f'pnnx binary missing ({ncnn_backend.INSTALL_PNNX})'),
]

TOL = 1e-4


def _close(out, ref, tol=TOL):
    assert out.shape == ref.shape and out.dtype == np.float32
    np.testing.assert_allclose(out, ref, rtol=0, atol=tol * max(1.0, float(np.abs(ref).max())))


def _has_gpu() -> bool:
    return bool(ncnn_backend.vulkan_devices())


def _save(path: pathlib.Path, nodes, in_shape, outputs, inits=(), domains=()):
    graph = helper.make_graph(nodes, path.stem,
                              [helper.make_tensor_value_info('x', TensorProto.FLOAT, in_shape)],
                              outputs, list(inits))
    ops = [helper.make_opsetid('', 13)] + [helper.make_opsetid(d, 1) for d in domains]
    model = helper.make_model(graph, opset_imports=ops)
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope='module')
def cache(tmp_path_factory):
    """Return one conversion cache for the tests that only run models."""
    return tmp_path_factory.mktemp('ncnn_cache')


@pytest.fixture(scope='module')
def real_inputs(data_home):
    """Return {model: (path, preprocessed real frames, ORT CPU fp32 outputs per frame)}."""
    frames, what = calibration_frames(3)
    assert 'real frames' in what
    registry = load_registry(paths.config_dir() / 'models.yaml')
    out = {}
    for name in ('mobilenet_v2', 'nanodet'):
        spec = registry[name]
        path = data_home / 'models' / spec.file
        pre = Preprocessor(spec.input_spec)
        xs = [np.array(pre(f)[0], copy=True) for f in frames]
        ort = OrtBackend(intra_op_threads=1).open_session(path)
        outs = [[np.array(o, copy=True) for o in ort.run(x)] for x in xs]
        ort.close()
        out[name] = (path, xs, outs)
    return out


@pytest.fixture(scope='module')
def hidden_vulkan(tmp_path_factory):
    """Run a child process with lavapipe hidden and ncnn imported before edge_infer's module.

    Returns what it reported (JSON): the Vulkan device count, every
    candidate's name and availability, the OpenMP wait policy and the error
    of loading on Vulkan.
    """
    cache = tmp_path_factory.mktemp('hidden')
    code = (
        'import json, os, pathlib, sys\n'
        'os.environ.pop("OMP_WAIT_POLICY", None)\n'
        'import ncnn\n'
        'from edge_infer.backends.libs import ncnn as nb\n'
        'from edge_infer.core.backend import BackendError\n'
        'cache = pathlib.Path(sys.argv[1])\n'
        'cands = nb.ncnn_candidates(cache)\n'
        'out = {"gpus": ncnn.get_gpu_count(), "policy": nb.omp_wait_policy(),\n'
        '       "cands": [(b.name, b.device, *b.available()) for b in cands]}\n'
        'try:\n'
        '    cands[-2].open_session(pathlib.Path(sys.argv[2]))\n'
        'except BackendError as exc:\n'
        '    out["load"] = str(exc)\n'
        'print("JSON " + json.dumps(out))\n')
    env = dict(os.environ, VK_ICD_FILENAMES='/nonexistent', VK_DRIVER_FILES='/nonexistent')
    env.pop('OMP_WAIT_POLICY', None)
    proc = subprocess.run([sys.executable, '-c', code, str(cache), str(probe_model(cache))],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(s for s in proc.stdout.splitlines() if s.startswith('JSON '))
    return json.loads(line[5:])


# ------------------------------------------------------------------ description
def test_candidates_are_named_by_device_threads_and_precision(tmp_path):
    cands = ncnn_candidates(tmp_path, threads=(1, 2))
    names = [b.name for b in cands]
    assert names[:3] == ['ncnn/cpu/t1', 'ncnn/cpu/t2', 'ncnn/cpu/t2/fp16']
    gpus = ncnn_backend.vulkan_devices()
    if gpus:
        short = gpus[0][2]
        assert names[3:5] == [f'ncnn/vulkan:{short}', f'ncnn/vulkan:{short}/fp16']
        assert cands[3].device == f'vulkan:{short}' and '(' not in short and ' ' not in short
    else:
        assert names[3:] == ['ncnn/vulkan', 'ncnn/vulkan/fp16']
    assert [b.precision for b in cands[:3]] == ['fp32', 'fp32', 'fp16']
    assert all(b.library == 'ncnn' and 'without a copy' in b.tensor_passing for b in cands)
    assert 'uploaded to the Vulkan device' in cands[3].tensor_passing
    opts = cands[1].options()
    assert opts['num_threads'] == 2 and not opts['use_vulkan_compute']
    assert not (opts['use_fp16_packed'] or opts['use_fp16_storage'] or
                opts['use_fp16_arithmetic'])
    assert cands[2].options()['use_fp16_storage'] and cands[2].options()['use_fp16_arithmetic']
    # set by the module before ncnn loaded (PASSIVE unless the environment said otherwise),
    # and reported as what libgomp really read
    if not ncnn_backend._NCNN_PRELOADED:
        assert opts['OMP_WAIT_POLICY'] == os.environ['OMP_WAIT_POLICY'].upper()
    assert cands[0].versions() == {'ncnn': ncnn.__version__,
                                   'pnnx': ncnn_backend.pnnx_version()}
    assert ncnn_candidates(tmp_path, threads=(1,), fp16=False, vulkan=False)[0].name == \
        'ncnn/cpu/t1'
    with pytest.raises(ValueError, match='opencl'):
        NcnnBackend('opencl')


def test_short_gpu_names_drop_the_driver_details():
    assert vulkan.short_gpu_name('llvmpipe (LLVM 15.0.6, 256 bits)') == 'llvmpipe'
    assert vulkan.short_gpu_name('NVIDIA Tegra Orin (nvgpu)') == 'NVIDIA-Tegra-Orin'
    assert vulkan.short_gpu_name('Mali-G610') == 'Mali-G610'


# ----------------------------------------------------------------------- CPU fp32
def test_cpu_fp32_passes_the_probe_and_matches_onnx_runtime(cache):
    backend = NcnnBackend('cpu', 1, cache_dir=cache)
    ok, why = probe_backend(backend, cache)
    assert ok, why
    path = probe_model(cache)
    x = np.random.default_rng(5).standard_normal((1, 3, 32, 32)).astype(np.float32)
    ref = OrtBackend(intra_op_threads=1).open_session(path).run(x)[0].copy()
    sess = backend.open_session(path)
    assert sess.input_name == 'x' and sess.output_names == ['y']
    _close(sess.run(x)[0], ref)
    with pytest.raises(BackendError, match=r'input shape \(1, 3, 16, 16\), the model takes'):
        sess.run(np.zeros((1, 3, 16, 16), np.float32))
    sess.close()


@pytest.mark.parametrize('model,threads', [('mobilenet_v2', 1), ('nanodet', 2)])
def test_cpu_fp32_matches_onnx_runtime_on_real_frames(cache, real_inputs, model, threads):
    path, xs, refs = real_inputs[model]
    sess = NcnnBackend('cpu', threads, cache_dir=cache).open_session(path)
    onnx_names = [o.name for o in onnx.load(str(path), load_external_data=False).graph.output]
    assert sess.output_names == onnx_names
    buf = np.empty_like(xs[0])      # one input buffer refilled per frame, as the node does
    first = None
    for x, ref in zip(xs, refs):
        np.copyto(buf, x)
        outs = sess.run(buf)
        assert len(outs) == len(ref)
        for out, r in zip(outs, ref):       # ONNX order and shapes, batch dim restored
            _close(out, r)
        first = first or list(outs)
        assert all(a is b for a, b in zip(outs, first))    # arrays allocated once
    # a temporary the caller drops at once: the session keeps it alive while ncnn reads it
    outs = sess.run(xs[0].copy())
    for out, r in zip(outs, refs[0]):
        _close(out, r)
    sess.close()


def test_input_with_unaligned_channels_runs_correctly_on_cpu_and_vulkan(tmp_path):
    """A 7x5 input: its channels are not a multiple of 16 bytes (Vulkan read garbage)."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((5, 3, 3, 3)).astype(np.float32), 'w')
    path = _save(tmp_path / 'odd.onnx',
                 [helper.make_node('Conv', ['x', 'w'], ['y'], pads=[1, 1, 1, 1])],
                 [1, 3, 7, 5], [helper.make_tensor_value_info('y', TensorProto.FLOAT,
                                                              [1, 5, 7, 5])], [w])
    xs = [rng.standard_normal((1, 3, 7, 5)).astype(np.float32) for _ in range(2)]
    ort = OrtBackend().open_session(path)
    refs = [ort.run(x)[0].copy() for x in xs]
    for device in ['cpu'] + (['vulkan'] if _has_gpu() else []):
        sess = NcnnBackend(device, 1, cache_dir=tmp_path).open_session(path)
        for x, ref in zip(xs, refs):
            _close(sess.run(x)[0], ref)
        sess.close()


# ------------------------------------------------------------------------- Vulkan
@pytest.mark.skipif(not _has_gpu(), reason='ncnn.get_gpu_count() == 0: no Vulkan device '
                    '(install mesa-vulkan-drivers libvulkan1 for lavapipe)')
def test_vulkan_passes_the_probe_and_matches_onnx_runtime_on_real_frames(cache, real_inputs):
    backend = next(b for b in ncnn_candidates(cache, fp16=False) if b.device != 'cpu')
    ok, why = backend.available()
    assert ok and f'Vulkan device {backend.gpu_index}' in why
    ok, why = probe_backend(backend, cache)
    assert ok, why
    path, xs, refs = real_inputs['mobilenet_v2']
    t0 = time.perf_counter()
    sess = backend.open_session(path)
    load_s = time.perf_counter() - t0
    times = []
    for x, ref in zip(xs, refs):
        t0 = time.perf_counter()
        out = sess.run(x)[0]
        times.append(time.perf_counter() - t0)
        _close(out, ref[0])
    sess.close()
    ort = OrtBackend(intra_op_threads=1).open_session(path)
    ort.run(xs[0])
    t0 = time.perf_counter()
    ort.run(xs[0])
    ort_s = time.perf_counter() - t0
    print(f'{backend.name}: load {load_s:.2f} s, first run {times[0]:.2f} s (shaders), then '
          f'{min(times[1:]) * 1e3:.0f} ms; ORT CPU t1 {ort_s * 1e3:.1f} ms')


@pytest.mark.skipif(not _has_gpu(), reason='ncnn.get_gpu_count() == 0: no Vulkan device')
def test_the_vulkan_probe_keeps_ncnn_device_lines_off_stderr():
    """The four lines per device ncnn prints on fd 2 at its first GPU call: not on stderr."""
    if not _has_gpu():
        pytest.skip(f'no Vulkan device ({ncnn_backend.INSTALL_VULKAN})')
    code = ('import sys\n'
            'from edge_infer.backends.libs import ncnn as nb\n'
            'print("devices", len(nb.vulkan_devices()))\n'
            'from edge_infer.backends.libs import vulkan\n'
            'print("kept", len(vulkan.probe_output().splitlines()))\n'
            'print("our own line", file=sys.stderr)\n')
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert 'devices' in proc.stdout and 'devices 0' not in proc.stdout
    kept = int(proc.stdout.split('kept ')[1].split()[0])
    assert kept >= 1 and not any(vulkan.NCNN_DEVICE_LINE.match(line)
                                 for line in proc.stderr.splitlines()), proc.stderr
    assert 'our own line' in proc.stderr


def test_vulkan_fp16_runs_the_probe_close_to_fp32(cache):
    backend = next(b for b in ncnn_candidates(cache) if b.device != 'cpu' and
                   b.precision == 'fp16')
    ok, why = probe_backend(backend, cache)     # fp16 tolerance: 2e-2 of the output scale
    assert ok, why


# --------------------------------------------------------------------------- fp16
def test_cpu_fp16_runs_and_differs_from_fp32_by_a_small_amount(cache, real_inputs):
    """The fp16 candidate is a real precision variant: not equal, not far (the guard judges)."""
    path, xs, refs = real_inputs['mobilenet_v2']
    sess = NcnnBackend('cpu', 2, 'fp16', cache_dir=cache).open_session(path)
    for x, ref in zip(xs, refs):
        out = sess.run(x)[0]
        diff = float(np.abs(out - ref[0]).max())
        scale = float(np.abs(ref[0]).max())
        assert 1e-5 * scale < diff < 5e-2 * scale, (diff, scale)
    sess.close()


# --------------------------------------------------------------------- conversion
def test_conversion_is_cached_and_a_corrupted_file_is_converted_again(tmp_path):
    path = probe_model(tmp_path)
    x = np.random.default_rng(2).standard_normal((1, 3, 32, 32)).astype(np.float32)
    ref = OrtBackend().open_session(path).run(x)[0].copy()
    lines = []
    backend = NcnnBackend('cpu', 1, cache_dir=tmp_path, log=lines.append)
    runs = pnnx.pnnx_runs
    _close(backend.open_session(path).run(x)[0], ref)
    assert pnnx.pnnx_runs == runs + 1 and len(lines) == 1 and 'converted' in lines[0]
    folder = tmp_path / 'ncnn'
    param, binf, sidecar = (next(folder.glob(f'*.ncnn.{ext}'))
                            for ext in ('param', 'bin', 'json'))
    assert param.name.startswith(f'{path.stem}.') and \
        param.name.endswith(f'.pnnx{ncnn_backend.pnnx_version()}.ncnn.param')
    assert not list(folder.glob('*.tmp'))       # no leftovers of the conversion
    rec = json.loads(sidecar.read_text())
    from edge_infer.checksums import sha256_file
    assert rec['bin_sha256'] == sha256_file(binf) and rec['param_sha256'] == sha256_file(param)
    assert rec['source_sha256'] == sha256_file(path)
    mtimes = [p.stat().st_mtime_ns for p in (param, binf, sidecar)]
    # a second backend (another process would do the same): no pnnx, same files
    again = NcnnBackend('cpu', 2, cache_dir=tmp_path, log=lines.append).open_session(path)
    _close(again.run(x)[0], ref)
    assert pnnx.pnnx_runs == runs + 1 and len(lines) == 1
    assert [p.stat().st_mtime_ns for p in (param, binf, sidecar)] == mtimes
    # a flipped byte in the weights: detected, said once, converted again
    data = bytearray(binf.read_bytes())
    data[len(data) // 2] ^= 0xFF
    binf.write_bytes(bytes(data))
    _close(backend.open_session(path).run(x)[0], ref)
    assert pnnx.pnnx_runs == runs + 2
    assert len(lines) == 3 and 'does not match its recorded sha256' in lines[1], lines
    assert sha256_file(binf) == rec['bin_sha256']
    # a truncated param file is caught the same way
    param.write_text(param.read_text()[:40])
    _close(backend.open_session(path).run(x)[0], ref)
    assert pnnx.pnnx_runs == runs + 3 and param.name in lines[3]


# ------------------------------------------------------------------------- errors
def test_garbage_or_missing_model_file_gives_a_clear_backend_error(tmp_path):
    bad = tmp_path / 'garbage.onnx'
    bad.write_bytes(b'\x07this is not a model\xff' * 20)
    backend = NcnnBackend('cpu', 1, cache_dir=tmp_path)
    with pytest.raises(BackendError, match=r'ncnn/cpu/t1: cannot read garbage.onnx as an '
                                           r'ONNX model'):
        backend.open_session(bad)
    with pytest.raises(BackendError, match='model file .*absent.onnx not found'):
        backend.open_session(tmp_path / 'absent.onnx')


def test_dynamic_input_shape_is_refused_with_the_reason(tmp_path):
    path = _save(tmp_path / 'dyn.onnx', [helper.make_node('Relu', ['x'], ['y'])],
                 [1, 3, 'height', 'width'],
                 [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)])
    with pytest.raises(BackendError, match=r"input 'x' of dyn.onnx has a dynamic shape "
                                           r'\[1, 3, height, width\]'):
        NcnnBackend('cpu', 1, cache_dir=tmp_path).open_session(path)


def test_pnnx_failure_and_layers_ncnn_lacks_are_named(tmp_path):
    custom = _save(tmp_path / 'custom.onnx',
                   [helper.make_node('Frobnicate', ['x'], ['y'], domain='com.example')],
                   [1, 3, 8, 8], [helper.make_tensor_value_info('y', TensorProto.FLOAT,
                                                                [1, 3, 8, 8])],
                   domains=['com.example'])
    backend = NcnnBackend('cpu', 1, cache_dir=tmp_path)
    with pytest.raises(BackendError, match=r'pnnx could not convert custom.onnx \(.*\): .*'
                                           r'Frobnicate.* is not a registered function/op'):
        backend.open_session(custom)
    assert not list((tmp_path / 'ncnn').glob('custom*.param'))
    det = _save(tmp_path / 'det.onnx', [helper.make_node('Det', ['x'], ['y'])], [1, 3, 8, 8],
                [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 3])])
    with pytest.raises(BackendError, match='ncnn has no layer for Det'):
        backend.open_session(det)


def test_without_a_vulkan_device_the_candidates_say_why(hidden_vulkan):
    """VK_ICD_FILENAMES=/nonexistent really hides lavapipe; the reason names the fix."""
    assert hidden_vulkan['gpus'] == 0
    cands = {name: (device, ok, why) for name, device, ok, why in hidden_vulkan['cands']}
    for name in ('ncnn/vulkan', 'ncnn/vulkan/fp16'):
        device, ok, why = cands[name]
        assert device == 'vulkan' and not ok
        assert why.startswith('no Vulkan device (ncnn.get_gpu_count() == 0): install '
                              'mesa-vulkan-drivers libvulkan1')
    assert cands['ncnn/cpu/t1'][1]
    assert hidden_vulkan['load'].startswith('ncnn/vulkan: no Vulkan device')


def test_ncnn_imported_first_leaves_the_wait_policy_unknown_and_says_so(hidden_vulkan):
    """Imported before this module could set OMP_WAIT_POLICY: libgomp's policy is not known."""
    assert hidden_vulkan['policy'].startswith('unknown: ncnn was imported before')
    cands = {name: (ok, why) for name, _, ok, why in hidden_vulkan['cands']}
    ok, why = cands['ncnn/cpu/t2']
    assert ok and 'may stall' in why
    assert 'stall' not in cands['ncnn/cpu/t1'][1]     # one thread: no OpenMP team


def test_a_converted_model_that_crashes_ncnn_is_left_out_and_the_process_survives(
        tmp_path, monkeypatch):
    """A converted graph that segfaults ncnn: its first run happens in another process."""
    model = probe_model(tmp_path)
    cpu = next(b for b in ncnn_candidates(tmp_path, fp16=False) if b.device == 'cpu')
    # stands for a graph ncnn crashes on (seen: NanoDet laid out as YOLOv8)
    monkeypatch.setattr(pnnx, 'FIRST_RUN', 'import os, signal\n'
                        'os.kill(os.getpid(), signal.SIGSEGV)\n')
    with pytest.raises(BackendError, match=r'ncnn crashed \(SIGSEGV\).*left out'):
        cpu.open_session(model)
    stamps = list(tmp_path.rglob('*.firstrun'))
    assert len(stamps) == 1 and 'SIGSEGV' in stamps[0].read_text()
    # the verdict is kept: the next load says so without running anything
    monkeypatch.setattr(pnnx, 'FIRST_RUN', 'raise SystemExit(3)\n')
    with pytest.raises(BackendError, match='SIGSEGV'):
        cpu.open_session(model)
    # a graph that runs: checked once, then opened in this process
    stamps[0].unlink()
    monkeypatch.undo()
    sess = cpu.open_session(model)
    sess.close()
    assert stamps[0].read_text() == 'ok'


@pytest.mark.skipif(not _has_gpu(), reason='ncnn.get_gpu_count() == 0: no Vulkan device')
def test_the_device_list_is_kept_so_a_warm_start_loads_no_vulkan_driver(tmp_path):
    """Naming the Vulkan candidates: no instance, no driver mapped, at the first start or after."""
    code = ('from edge_infer.backends.libs import ncnn as nb, vulkan\n'
            'import pathlib, sys\n'
            'names = [b.name for b in nb.ncnn_candidates(pathlib.Path(sys.argv[1]))]\n'
            'ok = [b.available()[0] for b in nb.ncnn_candidates(pathlib.Path(sys.argv[1]))]\n'
            'maps = open("/proc/self/maps").read()\n'
            'print("names", ",".join(names))\n'
            'print("instance", vulkan.instance_created(), "driver", "libvulkan" in maps)\n')

    def start():
        proc = subprocess.run([sys.executable, '-c', code, str(tmp_path)], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        out = dict(line.split(' ', 1) for line in proc.stdout.splitlines())
        return out['names'], out['instance']
    first_names, first = start()
    # the first start asks a throwaway interpreter (installed.asked_apart): no driver here either
    assert 'ncnn/vulkan:' in first_names and first == 'False driver False'
    assert json.loads((tmp_path / 'vulkan_devices.json').read_text())['devices']
    names, warm = start()
    assert names == first_names and warm == 'False driver False'


def test_the_device_list_key_follows_the_drivers(tmp_path, monkeypatch):
    """A new or changed driver manifest, or another loader setting: the instance again."""
    icd = tmp_path / 'my_icd.json'
    lib = tmp_path / 'libvulkan_mine.so'
    lib.write_bytes(b'x')
    icd.write_text(json.dumps({'ICD': {'library_path': str(lib), 'api_version': '1.3'}}))
    monkeypatch.delenv('VK_DRIVER_FILES', raising=False)
    base = vulkan.fingerprint('1.0')
    assert vulkan.fingerprint('1.0') == base and vulkan.fingerprint('1.1') != base
    monkeypatch.setenv('VK_DRIVER_FILES', str(icd))
    with_icd = vulkan.fingerprint('1.0')
    assert with_icd != base
    lib.write_bytes(b'a newer driver')          # the library the manifest names changed
    assert vulkan.fingerprint('1.0') != with_icd


def test_no_device_is_not_kept_while_a_driver_manifest_exists(tmp_path, monkeypatch):
    """A driver that failed to load (a missing dependency) is tried again at the next start."""
    import types
    icd = tmp_path / 'nvidia_icd.json'
    icd.write_text(json.dumps({'ICD': {'library_path': 'libGLX_nvidia.so.0'}}))
    monkeypatch.setenv('VK_DRIVER_FILES', str(icd))
    cache = tmp_path / 'vulkan_devices.json'
    info = types.SimpleNamespace(device_name=lambda: 'NVIDIA H200', driver_version=lambda: 1,
                                 api_version=lambda: 2)
    seen = {'count': 0}
    fake = types.SimpleNamespace(get_gpu_count=lambda: seen['count'],
                                 get_gpu_info=lambda i: info, get_default_gpu_index=lambda: 0)
    monkeypatch.setattr(vulkan, '_state', {})
    vulkan.use_cache(cache)
    assert vulkan.devices(lambda: fake, '1.0') == [] and not cache.exists()
    seen['count'] = 1                           # the driver's library is installed now
    monkeypatch.setattr(vulkan, '_state', {'cache_file': cache})
    assert vulkan.devices(lambda: fake, '1.0') == [(0, 'NVIDIA H200', 'NVIDIA-H200')]
    assert json.loads(cache.read_text())['devices']     # a found device is kept
    cache.write_text(json.dumps({'key': vulkan.fingerprint('1.0'), 'devices': [],
                                 'default': None}))     # an older cache's "none"
    monkeypatch.setattr(vulkan, '_state', {'cache_file': cache})
    assert vulkan.devices(lambda: fake, '1.0')[0][1] == 'NVIDIA H200'
