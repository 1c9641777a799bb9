# Copyright 2026 edge_infer contributors. Apache-2.0.
"""`edge_infer model add` on a few hundred random ONNX graphs: never a traceback.

Each graph has random inputs (rank, free dimensions, element type, one or
two of them), random outputs (rank, free sides, float32 or float16, one to
three) and metadata present, absent or broken; a few known layouts are
among them. Each must end in a registered model or in one line on stderr
that says what was seen, with exit code 2, and leave the registry as it
was. The catch-all line of ``main`` (an unexpected exception) counts as a
failure here: every case must be foreseen.
"""

import random

from edge_infer.core.registry import load_registry
from edge_infer.tools.models import user
import numpy as np
import onnx
from onnx import helper, TensorProto
import pytest

CASES = 300
IN_TYPES = [TensorProto.FLOAT] * 4 + [TensorProto.FLOAT16, TensorProto.UINT8, TensorProto.INT32,
                                      TensorProto.INT64, TensorProto.DOUBLE, TensorProto.BOOL]
KNOWN = [[1, 84, 8400], [1, 8400, 85], [1, 300, 6], [1, 1000], [1, 1, 17, 3], [1, 6, 56],
         [1, 56, 8400], [1, 21, 64, 64], [1, 64, 64, 1]]
META = [{}, {}, {'task': 'detect', 'imgsz': '[64, 64]'}, {'task': 'pose'}, {'task': 'obb'},
        {'task': 'segment'}, {'task': 'classify', 'names': "{0: 'a', 1: 'b'}"},
        {'imgsz': 'garbage'}, {'imgsz': '[0, -3]'}, {'names': '[not python'},
        {'end2end': 'True'}, {'description': 'RT-DETR'}, {'kpt_shape': '[x]', 'task': 'pose'}]


def _dim(rng, value):
    return None if rng.random() < 0.25 else value


def _graph(rng: random.Random, path):
    """Write one random graph to ``path``; return a description for the failure message."""
    n_in = 1 if rng.random() < 0.85 else 2
    inputs = []
    for i in range(n_in):
        rank = rng.choice([4, 4, 4, 2, 3, 5, 0])
        if rank == 4:
            shape = rng.choice([[1, 3, 64, 64], [1, 64, 64, 3], [1, 3, 32, 48], [1, 1, 64, 64],
                                [2, 3, 64, 64]])
        else:
            shape = [rng.choice([1, 3, 8, 64]) for _ in range(rank)]
        decl = [_dim(rng, d) for d in shape]
        inputs.append(helper.make_tensor_value_info(
            f'in{i}', rng.choice(IN_TYPES), [d if d is not None else f'd{i}_{k}'
                                             for k, d in enumerate(decl)]))
    outputs, nodes, inits = [], [], []
    for j in range(rng.choice([1, 1, 1, 2, 3])):
        shape = rng.choice(KNOWN) if rng.random() < 0.4 else \
            [rng.choice([1, 2, 3, 6, 17, 84, 100]) for _ in range(rng.choice([1, 2, 3, 4, 5]))]
        half = rng.random() < 0.2
        decl = shape if rng.random() < 0.5 else [_dim(rng, d) for d in shape]
        if rng.random() < 0.1:      # a declaration that disagrees with the graph
            decl = decl[:-1] or [1]
        outputs.append(helper.make_tensor_value_info(
            f'out{j}', TensorProto.FLOAT16 if half else TensorProto.FLOAT,
            [d if d is not None else f'o{j}_{k}' for k, d in enumerate(decl)]))
        value = helper.make_tensor('v', TensorProto.FLOAT16 if half else TensorProto.FLOAT,
                                   [1], [0.0])
        nodes.append(helper.make_node('ConstantOfShape', [f's{j}'], [f'out{j}'], value=value))
        inits.append(onnx.numpy_helper.from_array(np.array(shape, np.int64), f's{j}'))
    model = helper.make_model(helper.make_graph(nodes, 'fuzz', inputs, outputs, inits),
                              opset_imports=[helper.make_opsetid('', 13)])
    model.ir_version = 8
    for k, v in rng.choice(META).items():
        model.metadata_props.append(onnx.StringStringEntryProto(key=k, value=v))
    data = model.SerializeToString()
    if rng.random() < 0.03:         # a truncated file
        data = data[:len(data) // 2]
    path.write_bytes(data)
    return (f'inputs {[(t.name, t.type.tensor_type.elem_type) for t in inputs]} '
            f'outputs {[o.type.tensor_type for o in outputs]}').replace('\n', ' ')


def test_random_graphs_end_registered_or_in_one_line_with_exit_2(
        tmp_path, monkeypatch, capsys, footage):
    photo = next(p for p in footage['photos'] if p.name == 'astronaut.png')
    home = tmp_path / 'home'
    monkeypatch.setenv('EDGE_INFER_HOME', str(home))
    monkeypatch.setattr(user, '_photo', lambda: photo)
    monkeypatch.chdir(tmp_path)
    rng = random.Random(4141)
    registry = home / 'models.yaml'
    added, refused = 0, {}
    for i in range(CASES):
        f = tmp_path / f'g{i}.onnx'
        what = _graph(rng, f)
        before = registry.read_bytes() if registry.exists() else None
        models_before = sorted(p.name for p in (home / 'models').glob('*')) \
            if (home / 'models').exists() else []
        rc = user.main(['add', str(f), '--name', f'g{i}', '--no-variants'])
        out, err = capsys.readouterr()
        assert rc in (0, 2), (i, what, rc, err)
        if rc == 0:
            added += 1
            assert f'g{i}' in load_registry(registry), (i, what)
            assert err == '', (i, what, err)
            continue
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith('edge_infer model: '), (i, what, err)
        assert 'unexpected' not in lines[0], (i, what, err)
        assert (registry.read_bytes() if registry.exists() else None) == before, (i, what)
        models_now = sorted(p.name for p in (home / 'models').glob('*')) \
            if (home / 'models').exists() else []
        assert models_now == models_before, (i, what, models_now)
        key = lines[0].split(': ', 1)[1][:40]
        refused[key] = refused.get(key, 0) + 1
    print(f'{added} registered, {CASES - added} refused; refusals by opening: '
          + '; '.join(f'{n} x {k}' for k, n in sorted(refused.items(), key=lambda x: -x[1])))
    assert added >= 10 and CASES - added >= 100     # both kinds were tried


@pytest.mark.parametrize('text, size', [('640', (640, 640)), ('640x384', (640, 384)),
                                        ('320,240', (320, 240))])
def test_imgsz_is_read_as_w_or_wxh(text, size):
    assert user.parse_imgsz(text) == size


@pytest.mark.parametrize('text', ['0', 'abc', '640x', '1x2x3', '99999'])
def test_a_bad_imgsz_gets_one_line(text):
    with pytest.raises(user.ModelError, match='--imgsz'):
        user.parse_imgsz(text)
