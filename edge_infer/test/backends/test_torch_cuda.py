# Copyright 2026 edge_infer contributors. Apache-2.0.
"""PyTorch CUDA as a candidate and as the executor's accelerator: probed, and why not.

CI has no GPU and no torch: the probes must say why, in one line, for each
way a machine can lack it (torch missing, a CPU-only build, no device,
onnx2torch missing). Where torch and onnx2torch are installed (a developer's
machine) the segment runner's conversion and wiring run on the CPU against
ONNX Runtime; on a GPU machine ``bench/product/gpu_check.py`` runs the CUDA paths.
"""

import importlib.machinery
import importlib.util
import pathlib
import subprocess
import sys
import types

from edge_infer import paths
from edge_infer.backends.libs import torch_cuda
from edge_infer.backends.libs.torch_cuda import TorchCudaBackend
from edge_infer.core.backend import BackendError
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _fake_torch(built: bool = True, devices: int = 0) -> types.ModuleType:
    """Return a stand-in for torch: a CPU-only build, or a CUDA build with ``devices``."""
    torch = types.ModuleType('torch')
    torch.__version__ = '2.11.0+fake'
    torch.version = types.SimpleNamespace(cuda='13.0' if built else None)
    torch.backends = types.SimpleNamespace(cuda=types.SimpleNamespace(is_built=lambda: built))
    torch.cuda = types.SimpleNamespace(device_count=lambda: devices,
                                       is_available=lambda: devices > 0,
                                       get_device_name=lambda i: 'NVIDIA H100 80GB HBM3')
    return torch


def test_without_torch_each_candidate_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, 'torch', None)     # import torch raises ImportError
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, 'find_spec',
                        lambda name, *a: None if name == 'torch' else real(name, *a))
    for backend in torch_cuda.torch_candidates():
        ok, why = backend.available()
        assert not ok and 'torch not installed' in why and 'onnx2torch' in why
        assert backend.device == 'cuda:0' and backend.library == 'torch'
        with pytest.raises(BackendError, match='torch not importable'):
            backend.open_session(paths.models_dir() / 'mobilenet_v2.onnx')
    assert [b.name for b in torch_cuda.torch_candidates()] == ['torch/cuda:0',
                                                               'torch/cuda:0/fp16']


def _installed(monkeypatch, *names):
    """Make find_spec report ``names`` as installed (nothing is imported by available())."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, 'find_spec', lambda name, *a: (
        importlib.machinery.ModuleSpec(name, None) if name in names else
        None if name in ('torch', 'onnx2torch') else real(name, *a)))


def test_listing_the_candidates_never_imports_torch(monkeypatch):
    _installed(monkeypatch, 'torch', 'onnx2torch')
    monkeypatch.setattr(torch_cuda, 'nvidia_driver', lambda: False)
    ok, why = TorchCudaBackend().available()
    assert not ok and 'no NVIDIA driver' in why
    monkeypatch.setattr(torch_cuda, 'nvidia_driver', lambda: True)
    monkeypatch.setattr(torch_cuda.metadata, 'version', lambda dist: {
        'torch': '2.11.0+cu130', 'onnx2torch': '1.5.15'}[dist])
    ok, why = TorchCudaBackend().available()
    assert ok and 'torch 2.11.0+cu130' in why and 'onnx2torch 1.5.15' in why
    assert TorchCudaBackend().versions() == {'torch': '2.11.0+cu130', 'onnx2torch': '1.5.15'}
    _installed(monkeypatch, 'torch')
    ok, why = TorchCudaBackend().available()
    assert not ok and 'onnx2torch not installed' in why


@pytest.mark.parametrize('built, devices, said', [
    (False, 0, 'built without CUDA'),
    (True, 0, 'sees no CUDA device'),
])
def test_a_torch_without_a_usable_gpu_fails_to_load_saying_why(monkeypatch, built,
                                                               devices, said):
    monkeypatch.setitem(sys.modules, 'torch', _fake_torch(built, devices))
    torch, why = torch_cuda.cuda_torch()
    assert torch is None and said in why and '2.11.0+fake' in why
    with pytest.raises(BackendError, match=said):
        TorchCudaBackend('fp16').open_session(paths.models_dir() / 'mobilenet_v2.onnx')


def test_a_bad_precision_is_refused_with_the_choices():
    with pytest.raises(ValueError, match='fp32, fp16'):
        TorchCudaBackend('int8')


def test_the_executor_says_why_it_has_no_torch_accelerator(monkeypatch):
    from edge_infer.executor.buffers import TorchMappedBuffers
    from edge_infer.executor.core import ExecutorError, SharedExecutor
    from edge_infer.executor.devices import default_devices
    monkeypatch.setitem(sys.modules, 'torch', _fake_torch(True, 0))
    ok, why = TorchMappedBuffers().available()
    assert not ok and 'sees no CUDA device' in why
    said = []
    devices = default_devices(log=said.append)
    assert [p for _, _, p in devices] == ['CPUExecutionProvider'] * 2
    assert any('no PyTorch CUDA accelerator' in s and 'sees no CUDA device' in s for s in said)
    with pytest.raises(ExecutorError, match='torch-cuda unusable: .*sees no CUDA device'):
        SharedExecutor(devices=[('accelerator', 'accelerator', 'torch-cuda')])


def test_the_config_lists_the_torch_candidates_and_can_remove_them(tmp_path):
    from edge_infer.backends.manager import BackendManager, load_config
    cfg = load_config()
    names = [b.name for b in BackendManager(tmp_path, config=cfg, log=lambda s: None)
             .candidates()]
    assert {'torch/cuda:0', 'torch/cuda:0/fp16'} <= set(names)
    cfg['torch_precisions'] = []
    names = [b.name for b in BackendManager(tmp_path, config=cfg, log=lambda s: None)
             .candidates()]
    assert not [n for n in names if n.startswith('torch/')]


HAVE_TORCH = all(importlib.util.find_spec(m) for m in ('torch', 'onnx2torch'))


@pytest.mark.skipif(not HAVE_TORCH, reason='torch and onnx2torch not installed (optional; '
                    'a GPU machine runs bench/product/gpu_check.py)')
def test_torch_segments_chained_on_the_cpu_match_onnx_runtime():
    import onnxruntime as ort
    from edge_infer.executor.partition import partition
    from edge_infer.executor.segment_runners import TorchSegmentRunner
    path = paths.models_dir() / 'nanodet.onnx'
    segs = partition(path, min_nodes=3)
    runners = [TorchSegmentRunner(s, 2, None, mapped=False, device='cpu') for s in segs]
    sess = ort.InferenceSession(str(path), providers=['CPUExecutionProvider'])
    inp = sess.get_inputs()[0]
    x = np.random.default_rng(1).random(inp.shape, dtype=np.float32)
    vals = {inp.name: x}
    for r in runners:
        vals.update(r.run(vals, 1))
    for ref, o in zip(sess.run(None, {inp.name: x}), sess.get_outputs()):
        np.testing.assert_allclose(vals[o.name], ref, atol=1e-4)


def test_the_gpu_check_says_why_each_gpu_step_did_not_run(tmp_path):
    """bench/product/gpu_check.py on a machine without a GPU: one reason per step, exit 0."""
    if importlib.util.find_spec('pynvml') and HAVE_TORCH:
        pytest.skip('this machine may have a GPU: the check would measure it')
    script = ROOT / 'bench' / 'product' / 'gpu_check.py'
    out = subprocess.run([sys.executable, str(script), '--quick',
                          '--out', str(tmp_path), '--steps', '1', '3', '4', '5'],
                         capture_output=True, text=True, timeout=300,
                         env={**__import__('os').environ,
                              'PYTHONPATH': f'{ROOT / "edge_infer"}:{ROOT / "bench"}'})
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    text = (tmp_path / 'gpu_check.md').read_text()
    assert '- PyTorch CUDA: ' in text and 'one CPU worker plays the accelerator' in text
    sections = text.split('\n## ')[1:]
    assert [s.splitlines()[0] for s in sections] == [
        'Machine', 'Energy per inference from NVML',
        'Experiment 5 on the GPU: several DNNs under background GPU load',
        'Experiment 4 on the GPU: mapped pinned memory vs copies']
    for s in sections[1:]:
        body = [ln for ln in s.splitlines()[1:] if ln and not ln.startswith('(took')]
        assert len(body) == 1 and body[0].startswith(('not measured: ', 'not run: ')), s
