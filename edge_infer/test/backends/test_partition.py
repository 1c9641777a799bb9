# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Partitioning: conv-heavy and light segments whose chained outputs equal the model's."""

from edge_infer.executor.partition import classify, partition, run_chained, runs
import numpy as np
import onnxruntime as ort
import pytest


def test_followers_take_the_class_of_the_node_before():
    ops = ['Conv', 'LeakyRelu', 'MaxPool', 'Conv', 'Clip', 'Add', 'GlobalAveragePool', 'Gemm']
    assert classify(ops) == ['conv', 'conv', 'light', 'conv', 'conv', 'conv', 'light', 'light']
    assert classify(['Add', 'Conv']) == ['light', 'conv']     # nothing before: light


def test_short_runs_join_the_previous_one():
    cls = ['conv'] * 5 + ['light'] + ['conv'] * 4 + ['light'] * 3
    assert runs(cls, min_nodes=3) == [list(range(10)), [10, 11, 12]]
    assert runs(['light', 'conv', 'conv', 'conv'], 3) == [[0, 1, 2, 3]]
    assert runs(cls, min_nodes=1) == [[0, 1, 2, 3, 4], [5], [6, 7, 8, 9], [10, 11, 12]]


@pytest.mark.parametrize('name', ['mobilenet_v2', 'nanodet'])
def test_chained_segments_equal_the_whole_model(data_home, tmp_path, name):
    path = data_home / 'models' / f'{name}.onnx'
    segments = partition(path, out_dir=tmp_path)
    assert len(segments) >= 2 and segments[0].kind == 'conv'
    assert {s.kind for s in segments} == {'conv', 'light'}
    assert all(s.path.is_file() for s in segments)
    # every node lands in exactly one segment
    import onnx
    names = [n.name for n in onnx.load(str(path)).graph.node]
    assert sorted(n for s in segments for n in s.nodes) == sorted(names)
    sess = ort.InferenceSession(str(path), providers=['CPUExecutionProvider'])
    inp = sess.get_inputs()[0]
    outs = [o.name for o in sess.get_outputs()]
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal(inp.shape).astype(np.float32)
        whole = sess.run(None, {inp.name: x})
        chained = run_chained(segments, {inp.name: x}, outs)
        for a, b in zip(whole, chained):
            assert a.shape == b.shape
            np.testing.assert_allclose(b, a, rtol=0, atol=1e-5 * max(1.0, np.abs(a).max()))
