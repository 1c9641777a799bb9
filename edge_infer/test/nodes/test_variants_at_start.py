# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Variant files are made when a model is prepared; a robot's start only measures them.

Issue 52: a first start quantized (1.2-3.2 GB beside the container, tens of
seconds). Now ``edge_infer prepare``, ``edge_infer model add`` and
``edge_infer variants`` make the files; a serving process that finds none
serves and measures the float candidates and says, once, what makes them.
"""

import time

from edge_infer import paths
from edge_infer.backends import manager as manager_mod
from edge_infer.backends import variants_tool as make
from edge_infer.backends.config import load_config
from edge_infer.backends.libs.ort import OrtBackend
from edge_infer.backends.precision.variants import NOT_MADE, VariantBackend
from edge_infer.core.registry import load_registry
from edge_infer.nodes.perception_node import PerceptionNode
from edge_infer_msgs.msg import BackendReport, Classification
import numpy as np
import pytest
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image


@pytest.fixture(scope='module')
def mobilenet(data_home):
    spec = load_registry(paths.config_dir() / 'models.yaml')['mobilenet_v2']
    return spec, data_home / 'models' / spec.file


def test_the_serving_config_never_makes_a_variant(mobilenet, tmp_path):
    """config/backends.yaml: make_variants false; a missing file is an unavailable candidate."""
    spec, src = mobilenet
    cfg = load_config()
    assert cfg['make_variants'] is False
    mgr = manager_mod.BackendManager(tmp_path, config=cfg, log=lambda s: None)
    variants = [b for b in mgr.candidates(spec, src) if isinstance(b, VariantBackend)]
    assert {b.kind for b in variants} == set(cfg['variants'])
    for b in variants:
        ok, why = b.available()
        assert not ok and NOT_MADE in why and why.endswith('variants mobilenet_v2'), why
    run = mgr.profile(spec, src, measure=False)
    by_name = {r.backend: r for r in run.results}
    assert all(by_name[b.name].status == 'unavailable' for b in variants)
    assert not (tmp_path / 'variants').exists()     # nothing made, nothing started


class _FloatAndInt8(manager_mod.BackendManager):
    """One float candidate and an int8 one whose file was never made."""

    def candidates(self, spec=None, model_path=None):
        settings = (lambda: (spec, 0.99, (4, 4), None))
        return [OrtBackend(intra_op_threads=1),
                VariantBackend(OrtBackend(intra_op_threads=1), 'int8', self.cache_dir,
                               settings, make=False, model_path=model_path)]


class _Lines:
    def __init__(self):
        self.lines = []

    def info(self, msg, *a, **k):
        self.lines.append(('info', msg))

    def warning(self, msg, *a, **k):
        self.lines.append(('warning', msg))

    warn = warning

    def error(self, msg, *a, **k):
        self.lines.append(('error', msg))

    def debug(self, msg, *a, **k):
        pass


def test_a_start_without_the_int8_file_serves_and_says_how_to_make_it(
        ros, tmp_path, monkeypatch):
    monkeypatch.setenv('EDGE_INFER_CACHE', str(tmp_path))
    mgr = _FloatAndInt8(tmp_path, config={**load_config(), 'budget_s': 0.2, 'min_runs': 3,
                                          'warmup': 1, 'calibration_frames': 2,
                                          'measure_apart': False},
                        log=lambda s: None)
    mgr.runtime.managers[str(tmp_path)] = mgr     # the process's manager for that cache
    rt = mgr.runtime
    node = PerceptionNode('no_int8', runtime=rt, context=ros.ctx, parameter_overrides=[
        Parameter('model', value='mobilenet_v2'), Parameter('image_topic', value='/no_int8_cam'),
        Parameter('transport', value='raw'), Parameter('energy_metering', value=False),
        Parameter('diagnostics_period', value=0.0)])
    said = _Lines()
    node.get_logger = lambda: said
    ros.executor.add_node(node)
    results, reports = [], []
    ros.node.create_subscription(Classification, '/no_int8/classification', results.append, 10)
    ros.node.create_subscription(
        BackendReport, '/no_int8/backend_report', reports.append,
        QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                   durability=DurabilityPolicy.TRANSIENT_LOCAL))
    pub = ros.node.create_publisher(Image, '/no_int8_cam', qos_profile_sensor_data)
    img = Image(height=224, width=224, encoding='rgb8', step=224 * 3,
                data=np.random.default_rng(0).integers(0, 255, 224 * 224 * 3,
                                                       dtype=np.uint8).tobytes())
    try:
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
        deadline = time.monotonic() + 20
        while len(results) < 3 and time.monotonic() < deadline:
            pub.publish(img)
            ros.spin_until(lambda: False, 0.1)
        assert len(results) >= 3 and results[-1].backend == 'onnxruntime/cpu/t1'
        assert ros.spin_until(lambda: reports, 5)
        int8 = {c.name: c for c in reports[-1].candidates}['onnxruntime/cpu/t1/int8']
        assert int8.status == 'unavailable' and NOT_MADE in int8.reason
        how = [m for lvl, m in said.lines if lvl == 'warning' and 'variant files' in m]
        assert len(how) == 1, said.lines       # one line, however many reports follow
        assert 'onnxruntime/cpu/t1/int8' in how[0]
        assert how[0].endswith('variants mobilenet_v2 (a start never quantizes)')
        assert not (tmp_path / 'variants').exists()     # the start quantized nothing
    finally:
        node.trigger_shutdown()
        ros.executor.remove_node(node)
        node.destroy_node()


@pytest.mark.slow
def test_the_variants_verb_makes_the_files_a_start_then_finds(mobilenet, tmp_path,
                                                              monkeypatch, capsys):
    spec, src = mobilenet
    monkeypatch.setenv('EDGE_INFER_CACHE', str(tmp_path))
    assert make.main(['mobilenet_v2']) == 0
    out = capsys.readouterr().out
    made = [ln for ln in out.splitlines() if ln.startswith('mobilenet_v2: ') and ' made in ' in ln]
    # fp16, int8 (ORT), int8-nncf (every OpenVINO twin), and the ncnn pair where pnnx is
    from edge_infer.backends.libs.pnnx import pnnx_binary
    files = 4 if pnnx_binary() else 3
    assert len(made) == files and ('ncnn files of mobilenet_v2.onnx made' in out) == (
        files == 4), out
    assert all('quantizer peak' in ln for ln in made if '.int8' in ln)
    # the serving process now finds every file: no variant candidate waits for one
    mgr = manager_mod.BackendManager(tmp_path, config=load_config(), log=lambda s: None)
    variants = [b for b in mgr.candidates(spec, src) if isinstance(b, VariantBackend)]
    assert variants and all(b.available()[0] for b in variants if not mgr.over_budget(b))
    assert make.main(['mobilenet_v2']) == 0      # a second call keeps them
    again = capsys.readouterr().out
    assert ' made in ' not in again and again.count(' kept') == files
    assert make.main(['no_such_model']) == 2
