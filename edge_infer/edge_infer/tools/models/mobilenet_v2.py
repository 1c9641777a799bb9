# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Build torchvision's MobileNetV2 (width 1.0) as an ONNX graph from its state_dict.

No PyTorch needed: the architecture is written out with ``onnx.helper`` and
the weights come from :mod:`edge_infer.tools.models.torch_pickle`. BatchNorm is
folded into the preceding convolution, ReLU6 becomes ``Clip(0, 6)``, dropout
(inference no-op) is left out.

Input ``input``: 1x3x224x224 float32, RGB, ``(x / 255 - mean) / std`` with
ImageNet mean (0.485, 0.456, 0.406) and std (0.229, 0.224, 0.225).
Output ``logits``: 1x1000 (ImageNet-1k class order), before softmax.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Sequence, Tuple

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

OPSET = 17
IR_VERSION = 8
PRODUCER = 'edge_infer'
BN_EPS = 1e-5  # torch.nn.BatchNorm2d default, as torchvision uses
INPUT_NAME = 'input'
OUTPUT_NAME = 'logits'

# torchvision's inverted_residual_setting: expansion t, channels c, repeats n, stride s.
INVERTED_RESIDUAL_SETTING: Tuple[Tuple[int, int, int, int], ...] = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)
STEM_CHANNELS = 32
LAST_CHANNELS = 1280


class StateDictError(ValueError):
    """The state_dict does not fit the MobileNetV2 architecture."""


class _Builder:
    def __init__(self, state: Mapping[str, np.ndarray]):
        self.state = state
        self.used: set = set()
        self.nodes: List[onnx.NodeProto] = []
        self.inits: List[onnx.TensorProto] = []

    def get(self, key: str, shape: Sequence[int] | None = None) -> np.ndarray:
        if key not in self.state:
            raise StateDictError(f'state_dict has no {key!r}')
        arr = np.asarray(self.state[key])
        if shape is not None and tuple(arr.shape) != tuple(shape):
            raise StateDictError(f'{key}: shape {tuple(arr.shape)}, expected {tuple(shape)}')
        self.used.add(key)
        return arr

    def init(self, name: str, arr: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.array(arr, order='C'), name))
        return name

    def conv_bn(self, x: str, conv: str, bn: str, cin: int, cout: int, k: int, stride: int,
                groups: int, relu6: bool, name: str) -> str:
        w = self.get(f'{conv}.weight', (cout, cin // groups, k, k)).astype(np.float64)
        self.used.add(f'{bn}.num_batches_tracked')
        gamma = self.get(f'{bn}.weight', (cout,)).astype(np.float64)
        beta = self.get(f'{bn}.bias', (cout,)).astype(np.float64)
        mean = self.get(f'{bn}.running_mean', (cout,)).astype(np.float64)
        var = self.get(f'{bn}.running_var', (cout,)).astype(np.float64)
        scale = gamma / np.sqrt(var + BN_EPS)
        wf = (w * scale[:, None, None, None]).astype(np.float32)
        bf = (beta - mean * scale).astype(np.float32)
        pad = (k - 1) // 2
        out = f'{name}/conv'
        self.nodes.append(helper.make_node(
            'Conv', [x, self.init(f'{name}.weight', wf), self.init(f'{name}.bias', bf)],
            [out], name=f'{name}/Conv', kernel_shape=[k, k], strides=[stride, stride],
            pads=[pad, pad, pad, pad], group=groups, dilations=[1, 1]))
        if not relu6:
            return out
        act = f'{name}/relu6'
        self.nodes.append(helper.make_node('Clip', [out, 'relu6_min', 'relu6_max'], [act],
                                           name=f'{name}/Clip'))
        return act


def build_model(state: Mapping[str, np.ndarray], num_classes: int = 1000) -> onnx.ModelProto:
    """Return the ONNX MobileNetV2 for a torchvision ``mobilenet_v2`` state_dict.

    Raises :class:`StateDictError` when a tensor is missing, has the wrong shape
    or is left unused (a different architecture).
    """
    b = _Builder(state)
    b.init('relu6_min', np.array(0.0, np.float32))
    b.init('relu6_max', np.array(6.0, np.float32))
    x = b.conv_bn(INPUT_NAME, 'features.0.0', 'features.0.1', 3, STEM_CHANNELS, 3, 2, 1,
                  True, 'features.0')
    cin = STEM_CHANNELS
    idx = 1
    for t, c, n, s in INVERTED_RESIDUAL_SETTING:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            p = f'features.{idx}'
            y = x
            layer = 0
            if t != 1:
                y = b.conv_bn(y, f'{p}.conv.0.0', f'{p}.conv.0.1', cin, hidden, 1, 1, 1, True,
                              f'{p}.expand')
                layer = 1
            y = b.conv_bn(y, f'{p}.conv.{layer}.0', f'{p}.conv.{layer}.1', hidden, hidden, 3,
                          stride, hidden, True, f'{p}.depthwise')
            y = b.conv_bn(y, f'{p}.conv.{layer + 1}', f'{p}.conv.{layer + 2}', hidden, c, 1, 1,
                          1, False, f'{p}.project')
            if stride == 1 and cin == c:
                out = f'{p}/add'
                b.nodes.append(helper.make_node('Add', [x, y], [out], name=f'{p}/Add'))
                y = out
            x = y
            cin = c
            idx += 1
    x = b.conv_bn(x, f'features.{idx}.0', f'features.{idx}.1', cin, LAST_CHANNELS, 1, 1, 1,
                  True, f'features.{idx}')
    b.nodes.append(helper.make_node('GlobalAveragePool', [x], ['pool'], name='GlobalAveragePool'))
    b.nodes.append(helper.make_node('Flatten', ['pool'], ['flat'], name='Flatten', axis=1))
    w = b.get('classifier.1.weight', (num_classes, LAST_CHANNELS)).astype(np.float32)
    bias = b.get('classifier.1.bias', (num_classes,)).astype(np.float32)
    b.nodes.append(helper.make_node(
        'Gemm', ['flat', b.init('classifier.weight', w), b.init('classifier.bias', bias)],
        [OUTPUT_NAME], name='classifier/Gemm', transB=1))
    unused = sorted(set(state) - b.used)
    if unused:
        raise StateDictError(f'state_dict entries not used by MobileNetV2: {unused[:5]}'
                             f'{" ..." if len(unused) > 5 else ""}')
    graph = helper.make_graph(
        b.nodes, 'mobilenet_v2',
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, [1, 3, 224, 224])],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, [1, num_classes])],
        initializer=b.inits)
    model = helper.make_model(graph, producer_name=PRODUCER, producer_version='1',
                              opset_imports=[helper.make_opsetid('', OPSET)])
    model.ir_version = IR_VERSION
    model.doc_string = ('torchvision MobileNetV2 (ImageNet-1k), BN folded. Input RGB '
                        '1x3x224x224, (x/255 - [0.485, 0.456, 0.406]) / [0.229, 0.224, 0.225]; '
                        'output logits 1x1000.')
    onnx.checker.check_model(model, full_check=True)
    return model


def convert(pth_path, onnx_path) -> Dict[str, int]:
    """Convert a torchvision MobileNetV2 ``.pth`` file to ONNX; return a small summary."""
    from .torch_pickle import load_state_dict
    model = build_model(load_state_dict(pth_path))
    data = model.SerializeToString(deterministic=True)
    with open(onnx_path, 'wb') as f:
        f.write(data)
    return {'nodes': len(model.graph.node), 'bytes': len(data)}
