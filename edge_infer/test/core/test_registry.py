# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The model registry: the shipped file is valid; bad entries fail with a clear message."""

import pathlib

from edge_infer.core.registry import load_registry, RegistryError
from edge_infer.paths import config_dir
import pytest
import yaml

GOOD = {
    'file': 'm.onnx', 'task': 'detection',
    'input': {'width': 64, 'height': 32, 'color': 'bgr', 'resize': 'letterbox',
              'normalize': {'mean': [1, 2, 3], 'std': [4, 5, 6]}},
    'output': {'decoder': 'nanodet', 'strides': [8], 'bins': 8, 'score_threshold': 0.4,
               'nms_iou': 0.6},
    'labels': 'labels.txt',
}


def _write(tmp_path: pathlib.Path, models: dict) -> pathlib.Path:
    (tmp_path / 'labels.txt').write_text('person\ncar\n\n')
    path = tmp_path / 'models.yaml'
    path.write_text(yaml.safe_dump({'models': models}))
    return path


def test_shipped_registry_describes_both_bundled_models():
    reg = load_registry(config_dir() / 'models.yaml')
    det, cls = reg['nanodet'], reg['mobilenet_v2']
    assert det.task == 'detection' and len(det.labels) == 80 and det.labels[0] == 'person'
    assert (det.input_spec.width, det.input_spec.height, det.input_spec.color) == (416, 416, 'bgr')
    assert cls.task == 'classification' and len(cls.labels) == 1000
    for spec in (det, cls):
        assert spec.source['license'] and spec.source['package']
        assert spec.sha256 and len(spec.sha256) == 64


def test_a_valid_entry_is_parsed_with_its_values(tmp_path):
    spec = load_registry(_write(tmp_path, {'m': GOOD}))['m']
    assert spec.labels == ['person', 'car'] and spec.label(1) == 'car' and spec.label(7) == '7'
    labels = spec.label_map()       # the same rule, for a frame's many lookups
    assert [labels[c] for c in (0, 1, 7, -1)] == ['person', 'car', '7', '-1']
    assert spec.input_spec.mean == (1, 2, 3) and spec.input_spec.height == 32
    dec = spec.make_decoder(score_threshold=0.9)
    assert dec.score_threshold == 0.9 and dec.nms_iou == 0.6 and dec.num_classes == 2


@pytest.mark.parametrize('change,needle', [
    ({'task': 'tracking'}, "task 'tracking' unknown"),
    ({'labels': 'nope.txt'}, 'labels file .*nope.txt not found'),
    ({'output': {'decoder': 'yolo'}}, "decoder 'yolo' unknown"),
    ({'output': {'decoder': 'topk'}}, "decoder 'topk' does not fit task 'detection'"),
    ({'output': {'decoder': 'nanodet', 'bins': 8}}, "output needs key 'strides'"),
    ({'input': {'width': 'wide', 'height': 2}}, 'bad input value'),
    ({'input': {'width': 4, 'height': 4, 'resize': 'fill'}}, "resize 'fill' not supported"),
    ({'file': None, 'task': None}, "model 'm': "),
])
def test_bad_entries_name_the_model_and_the_problem(tmp_path, change, needle):
    entry = dict(GOOD, **change)
    entry = {k: v for k, v in entry.items() if v is not None}
    with pytest.raises(RegistryError, match=needle):
        load_registry(_write(tmp_path, {'m': entry}))


def test_unreadable_or_malformed_registry_files(tmp_path):
    with pytest.raises(RegistryError, match='cannot read'):
        load_registry(tmp_path / 'missing.yaml')
    bad = tmp_path / 'bad.yaml'
    bad.write_text('models: [unclosed')
    with pytest.raises(RegistryError, match='not valid YAML'):
        load_registry(bad)
    bad.write_text('something: else')
    with pytest.raises(RegistryError, match="needs a 'models' mapping"):
        load_registry(bad)
