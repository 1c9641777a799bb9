# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A warm start does not load the libraries it does not serve with.

Naming the candidates and keying their cached figures used to import
onnxruntime, onnx and ncnn into every serving process (33 MB on a 2-core
Xeon). Their versions now come from the package metadata and what only an
import tells (ONNX Runtime's providers, ncnn's option defaults) is kept in
the cache folder. A model a library cannot run at all is kept as such too.
"""

import json
import pathlib
import subprocess
import sys

from edge_infer import paths
from edge_infer.backends.libs import installed
from edge_infer.backends.manager import BackendManager
from edge_infer.core.backend import UnsupportedModel
from edge_infer.core.registry import load_registry
import pytest

KEYS = r"""
import json, sys
from edge_infer import paths
from edge_infer.backends.libs import ort, ncnn
from edge_infer.backends.precision.variants import VariantBackend
cache = sys.argv[1]
listed = ort.ort_candidates((1,), cache_dir=cache)
cands = listed + ncnn.ncnn_candidates(cache, (1,), fp16=False, vulkan=False)
keys = {b.name: [b.options(), b.versions()] for b in cands}
keys.update({b.name + ' available': list(b.available()) for b in listed})
fp16 = VariantBackend(listed[0], 'fp16', cache)
keys[fp16.name] = [fp16.versions()]
print(json.dumps({'keys': keys, 'loaded': sorted(m for m in ('onnxruntime', 'onnx', 'ncnn')
                                                 if m in sys.modules)}))
"""


def _keys(cache_dir):
    out = subprocess.run([sys.executable, '-c', KEYS, str(cache_dir)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_no_start_imports_a_library_to_key_its_candidates(tmp_path):
    pytest.importorskip('onnxruntime')
    pytest.importorskip('ncnn')
    first = _keys(tmp_path)
    # asked once, each in a throwaway interpreter: not even a first start imports them
    assert first['loaded'] == []
    assert (tmp_path / 'ort_providers.json').is_file()
    assert (tmp_path / 'ncnn_options.json').is_file()
    second = _keys(tmp_path)
    assert second['loaded'] == []
    assert second['keys'] == first['keys']      # the same cache keys, the same verdicts
    cpu = second['keys']['onnxruntime/cpu/t1']
    assert cpu[1]['onnxruntime'] and second['keys']['onnxruntime/cpu/t1 available'][0] is True
    assert second['keys']['onnxruntime/cuda available'][0] is False    # this build lacks it


def test_a_changed_build_asks_the_library_again(tmp_path):
    calls = []

    def ask():
        calls.append(1)
        return ['CPUExecutionProvider']
    file = tmp_path / 'p.json'
    assert installed.kept(file, {'version': '1'}, ask) == ['CPUExecutionProvider']
    installed.forget()
    assert installed.kept(file, {'version': '1'}, ask) == ['CPUExecutionProvider']
    assert len(calls) == 1      # from the file
    installed.forget()
    installed.kept(file, {'version': '2'}, ask)
    assert len(calls) == 2      # another build: asked again
    installed.forget()
    assert installed.kept(file, {'version': '3'}, list) == []   # nothing found: not kept
    assert json.loads(file.read_text())['key'] == {'version': '2'}
    assert installed.dist_version('no-such-distribution-here', 'numpy')[0] == 'numpy'
    assert installed.dist_version('no-such-distribution-here') == ('', '')


def test_a_model_a_library_cannot_run_is_not_loaded_again(tmp_path, data_home):
    from edge_infer.backends.libs.ort import OrtCpuBackend
    spec = load_registry(paths.config_dir() / 'models.yaml')['mobilenet_v2']
    path = data_home / 'models' / spec.file
    opened = []

    class Lacking(OrtCpuBackend):
        """A library without one of the model's operators."""

        def __init__(self):
            super().__init__(1)
            self.name = 'onnxruntime/cpu/t1/lacking'

        def open_session(self, model_path, strict=False, input_spec=None):
            if pathlib.Path(model_path).name != path.name:     # the probe's small net
                return super().open_session(model_path, strict, input_spec)
            opened.append(model_path)
            raise UnsupportedModel('lacking: unsupported op Conv')

    def manager():
        config = {'ort_threads': [1], 'ort_providers_always_listed': [],
                  'opencv_targets': [], 'blas': False, 'variants': [], 'budget_s': 0.1,
                  'warmup': 1, 'min_runs': 3, 'calibration_frames': 2, 'openvino_threads': [],
                  'ncnn_threads': [], 'ncnn_vulkan': False, 'torch_precisions': [],
                  'quiet_foreign_cores': 99.0}
        mgr = BackendManager(tmp_path, config=config, log=lambda s: None)
        listed = mgr.candidates
        mgr.candidates = lambda spec=None, model_path=None: listed(spec, model_path) + [Lacking()]
        return mgr
    first = manager().profile(spec, path)
    assert len(opened) == 1
    again = manager().profile(spec, path)
    assert len(opened) == 1, 'the lasting failure was opened again'
    for run in (first, again):
        lacking = {r.backend: r for r in run.results}['onnxruntime/cpu/t1/lacking']
        assert lacking.status == 'failed' and 'unsupported op Conv' in lacking.reason
    assert again.from_cache['onnxruntime/cpu/t1/lacking'] is True
    assert {r.backend: r.status for r in again.results}['onnxruntime/cpu/t1'] == 'ok'
