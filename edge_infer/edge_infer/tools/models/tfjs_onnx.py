# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Convert a TensorFlow.js graph model (model.json + weight shards) to ONNX.

No TensorFlow needed: the ``modelTopology`` of a TF.js ``graph-model`` is a
TensorFlow GraphDef written as JSON, and its constants live in the binary
shards described by ``weightsManifest``. This module reads both and writes an
ONNX graph (opset 17). It is the public entry point (:func:`convert_graph`,
:func:`convert_file`, :func:`load_tfjs`, :func:`read_weights`,
:func:`save_model`, :func:`summary`); the work is split in three modules:

- here: reading the files, the public API, clean-up passes on the result;
- :mod:`edge_infer.tools.models.tfjs_graph`: runtime tensors and their layouts,
  the graph walk, constant folding;
- :mod:`edge_infer.tools.models.tfjs_ops`: one handler per TF op (its docstring
  lists the ops: the convolutional detectors of onnx-tf exports, Keras
  MobileNet backbones with fused convolutions, depthwise and transposed
  convolutions, and the small index arithmetic of pose heads).

How it works:

- Every node whose inputs are all constant is evaluated with numpy
  (constant folding); SparseToDense is only supported that way.
- Layout: each TF tensor is kept as an ONNX tensor plus a permutation
  ``perm`` with ``onnx_tensor == np.transpose(tf_tensor, perm)``. A TF
  ``Transpose`` only changes ``perm``; a real ONNX ``Transpose`` is emitted
  only where an op needs a particular layout (NHWC convolutions and pools
  need NCHW in ONNX, ``Reshape`` and graph outputs need TF's own layout).
  The NHWC <-> NCHW transposes around every convolution of an onnx-tf
  export therefore cancel out, and an NHWC Keras model costs one transpose
  after its input and one before each output.
- Inputs and outputs keep TF's layout and shapes (``input_dtypes`` may
  change an input's dtype, e.g. an int32 image input to float32).
- Clean-up passes fold a zero ``Pad`` into the following ``Conv`` (and a
  ``-inf`` one into ``MaxPool``) and a per-channel constant ``Add`` into the
  convolution bias.

The result is deterministic: same input, same bytes.
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .tfjs_graph import _Dyn, _identity, _node_of, _split_ref, ConversionError
from .tfjs_ops import Converter

OPSET = 17
IR_VERSION = 8
PRODUCER = 'edge_infer'

MANIFEST_DTYPES: Dict[str, np.dtype] = {
    'float32': np.dtype('<f4'), 'float16': np.dtype('<f2'), 'int32': np.dtype('<i4'),
    'uint8': np.dtype('u1'), 'uint16': np.dtype('<u2'), 'int8': np.dtype('i1'),
    'int16': np.dtype('<i2'), 'bool': np.dtype('?'),
}


# ---------------------------------------------------------------------------
# Reading the TF.js files
# ---------------------------------------------------------------------------

def read_weights(manifest: Sequence[Mapping[str, Any]],
                 read_shard: Callable[[str], bytes]) -> Dict[str, np.ndarray]:
    """Decode a TF.js ``weightsManifest`` into ``{name: ndarray}``.

    ``read_shard(path)`` returns the bytes of one shard file; the shards of a
    group are concatenated and its weights laid out one after the other.
    Quantized weights (``quantization``: float16, or uint8/uint16 with
    ``min``/``scale``) are dequantized to their declared dtype.
    """
    out: Dict[str, np.ndarray] = {}
    for group in manifest:
        buf = b''.join(read_shard(p) for p in group['paths'])
        offset = 0
        for w in group['weights']:
            name, shape = w['name'], [int(s) for s in w.get('shape', [])]
            count = int(np.prod(shape)) if shape else 1
            dtype = MANIFEST_DTYPES.get(w['dtype'])
            if dtype is None:
                raise ConversionError(f'weight {name}: dtype {w["dtype"]} not supported')
            quant = w.get('quantization')
            stored = MANIFEST_DTYPES[quant['dtype']] if quant else dtype
            nbytes = count * stored.itemsize
            if offset + nbytes > len(buf):
                raise ConversionError(f'weight {name}: weight data ends at byte {len(buf)}, '
                                      f'needs {offset + nbytes}')
            raw = np.frombuffer(buf, stored, count=count, offset=offset).reshape(shape)
            offset += nbytes
            if quant is None:
                value = raw.astype(dtype.newbyteorder('='))
            elif quant['dtype'] == 'float16':
                value = raw.astype(np.float32).astype(dtype.newbyteorder('='))
            elif 'scale' in quant:
                real = raw.astype(np.float64) * float(quant['scale']) + float(quant.get('min', 0))
                if dtype.kind in 'iub':
                    real = np.round(real)
                value = real.astype(dtype.newbyteorder('='))
            else:
                raise ConversionError(f'weight {name}: quantization {quant} not supported')
            out[name] = value
        if offset != len(buf):
            raise ConversionError(f'weight shards {group["paths"]}: {len(buf) - offset} bytes '
                                  'left over after the last weight')
    return out


# ---------------------------------------------------------------------------
# Clean-up passes on the ONNX node list
# ---------------------------------------------------------------------------

def _consumers(nodes: Sequence[onnx.NodeProto]) -> Dict[str, List[int]]:
    uses: Dict[str, List[int]] = collections.defaultdict(list)
    for i, nd in enumerate(nodes):
        for name in nd.input:
            uses[name].append(i)
    return uses


def _get_attr(nd: onnx.NodeProto, key: str, default: Any = None) -> Any:
    for a in nd.attribute:
        if a.name == key:
            return helper.get_attribute_value(a)
    return default


def _set_attr(nd: onnx.NodeProto, key: str, value: Any) -> None:
    for i, a in enumerate(nd.attribute):
        if a.name == key:
            del nd.attribute[i]
            break
    nd.attribute.append(helper.make_attribute(key, value))


def _fuse_pads(nodes: List[onnx.NodeProto], inits: Dict[str, np.ndarray],
               keep: set) -> List[onnx.NodeProto]:
    """Fold ``Pad`` (zeros before Conv, -inf before MaxPool) into the consumer's pads."""
    uses = _consumers(nodes)
    drop = set()
    for i, nd in enumerate(nodes):
        if nd.op_type != 'Pad' or nd.output[0] in keep or _get_attr(nd, 'mode', b'constant') \
                not in (b'constant', 'constant'):
            continue
        users = uses.get(nd.output[0], [])
        if len(users) != 1 or len(nd.input) < 2 or nd.input[1] not in inits:
            continue
        user = nodes[users[0]]
        if user.op_type not in ('Conv', 'MaxPool') or list(user.input).index(nd.output[0]) != 0:
            continue
        pads = inits[nd.input[1]].tolist()
        value_name = nd.input[2] if len(nd.input) > 2 else ''
        if value_name and value_name not in inits:
            continue
        value = float(inits[value_name].reshape(-1)[0]) if value_name else 0.0
        ok_value = (user.op_type == 'Conv' and value == 0.0) or \
            (user.op_type == 'MaxPool' and value == -np.inf)
        if len(pads) != 8 or pads[0] or pads[1] or pads[4] or pads[5] or not ok_value or \
                min(pads) < 0:
            continue
        old = _get_attr(user, 'pads', [0, 0, 0, 0])
        _set_attr(user, 'pads', [old[0] + pads[2], old[1] + pads[3],
                                 old[2] + pads[6], old[3] + pads[7]])
        user.input[0] = nd.input[0]
        drop.add(i)
    return [nd for i, nd in enumerate(nodes) if i not in drop]


def _fuse_bias(nodes: List[onnx.NodeProto], inits: Dict[str, np.ndarray],
               keep: set) -> List[onnx.NodeProto]:
    """Fold ``Conv -> Add(per-channel constant)`` into the convolution bias."""
    uses = _consumers(nodes)
    drop = set()
    for i, nd in enumerate(nodes):
        if nd.op_type != 'Conv' or len(nd.input) > 2 or nd.output[0] in keep:
            continue
        users = uses.get(nd.output[0], [])
        if len(users) != 1 or nodes[users[0]].op_type != 'Add':
            continue
        add = nodes[users[0]]
        other = add.input[1] if add.input[0] == nd.output[0] else add.input[0]
        if other not in inits or other == nd.output[0]:
            continue
        cout = inits[nd.input[1]].shape[0]
        bias = inits[other]
        if bias.ndim not in (3, 4) or bias.size != cout or bias.shape[-3] != cout or \
                bias.dtype != inits[nd.input[1]].dtype:
            continue
        name = f'{nd.input[1]}__bias'
        inits[name] = bias.reshape(cout)
        nd.input.append(name)
        nd.output[0] = add.output[0]
        drop.add(users[0])
    return [nd for i, nd in enumerate(nodes) if i not in drop]


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------

def convert_graph(model_json: Mapping[str, Any], weights: Mapping[str, np.ndarray],
                  outputs: Optional[Sequence[Tuple[str, str]]] = None,
                  inputs: Optional[Mapping[str, str]] = None,
                  input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
                  input_dtypes: Optional[Mapping[str, Any]] = None,
                  graph_name: str = 'tfjs_graph', doc_string: str = '',
                  optimize: bool = True) -> onnx.ModelProto:
    """Convert a parsed TF.js graph model to an ONNX ``ModelProto`` (opset 17).

    ``outputs`` lists ``(tf_tensor, onnx_name)`` pairs in the order wanted
    (default: the signature's outputs, sorted by name, keeping their names).
    ``inputs`` renames placeholders (``{tf_name: onnx_name}``);
    ``input_shapes`` gives static shapes for placeholders whose shape is not
    fully known; ``input_dtypes`` overrides a placeholder's dtype (``{tf_name:
    numpy dtype}``; a Cast to that dtype right after it then vanishes).
    Raises :class:`ConversionError` for anything unsupported.
    """
    topo = model_json.get('modelTopology', model_json)
    nodes = topo.get('node', [])
    if outputs is None:
        sig = model_json.get('signature', {}).get('outputs', {})
        if not sig:
            raise ConversionError('no outputs given and no signature in the model')
        outputs = [(k, _node_of(k).replace('/', '_')) for k in sorted(sig)]
    outputs = [(_strip_zero(tf), name) for tf, name in outputs]
    final_names = [name for _, name in outputs]
    if len(set(final_names)) != len(final_names):
        raise ConversionError(f'output names must be unique: {final_names}')
    conv = Converter(nodes, weights, inputs or {}, input_shapes or {}, input_dtypes)
    conv._names.update(final_names)  # so that no intermediate tensor takes these names
    for name in conv.topo_order(_node_of(tf) for tf, _ in outputs):
        conv.convert_node(name)

    # Graph outputs, in TF's own layout and under the requested names: the
    # producing node's output is renamed, or an Identity added where it cannot be.
    input_names = {vi.name for vi in conv.graph_inputs}
    if input_names & set(final_names):
        raise ConversionError('an output name equals an input name')
    out_infos = []
    renames: Dict[str, str] = {}
    for tf_name, name in outputs:
        v = conv.get(tf_name)
        if not isinstance(v, _Dyn):
            raise ConversionError(f'output {tf_name} is a constant')
        src = conv.layout(v, _identity(len(v.shape)))
        producers = {o for nd in conv.onnx_nodes for o in nd.output}
        if src not in renames and src not in input_names and \
                src in producers:
            renames[src] = name
        else:
            conv.node('Identity', [src], [name], name=f'{name}/Identity')
        out_infos.append(helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape)))
    for nd in conv.onnx_nodes:
        for i, name in enumerate(nd.input):
            if name in renames:
                nd.input[i] = renames[name]
        for i, name in enumerate(nd.output):
            if name in renames:
                nd.output[i] = renames[name]

    nodes_out = conv.onnx_nodes
    if optimize:
        nodes_out = _fuse_pads(nodes_out, conv.inits, set(final_names))
        nodes_out = _fuse_bias(nodes_out, conv.inits, set(final_names))
    used = {name for nd in nodes_out for name in nd.input}
    initializers = [numpy_helper.from_array(np.array(arr, order='C'), name)
                    for name, arr in conv.inits.items() if name in used]
    graph = helper.make_graph(nodes_out, graph_name, conv.graph_inputs, out_infos,
                              initializer=initializers)
    model = helper.make_model(graph, producer_name=PRODUCER, producer_version='1',
                              opset_imports=[helper.make_opsetid('', OPSET)])
    model.ir_version = IR_VERSION
    if doc_string:
        model.doc_string = doc_string
    onnx.checker.check_model(model, full_check=True)
    return model


def _strip_zero(ref: str) -> str:
    node, idx = _split_ref(ref)
    return node if idx == 0 else f'{node}:{idx}'


def load_tfjs(
        model_json_path: 'os.PathLike[str] | str') -> Tuple[Dict[str, Any], Dict[str, np.ndarray]]:
    """Read ``model.json`` and its weight shards (next to it); return (json, weights)."""
    path = pathlib.Path(model_json_path)
    with open(path, encoding='utf-8') as f:
        model_json = json.load(f)
    if model_json.get('format', 'graph-model') != 'graph-model':
        raise ConversionError(f'{path}: format {model_json.get("format")!r}, '
                              'only graph-model is supported')

    def read_shard(rel: str) -> bytes:
        shard = (path.parent / rel).resolve()
        if path.parent.resolve() not in shard.parents:
            raise ConversionError(f'weight shard {rel} lies outside {path.parent}')
        return shard.read_bytes()

    return model_json, read_weights(model_json.get('weightsManifest', []), read_shard)


def convert_file(model_json_path: 'os.PathLike[str] | str',
                 onnx_path: 'os.PathLike[str] | str', **kwargs: Any) -> onnx.ModelProto:
    """Convert a TF.js graph model on disk to an ONNX file; extra kwargs go to convert_graph."""
    model_json, weights = load_tfjs(model_json_path)
    model = convert_graph(model_json, weights, **kwargs)
    save_model(model, onnx_path)
    return model


def save_model(model: onnx.ModelProto, path: 'os.PathLike[str] | str') -> None:
    """Write ``model`` with deterministic serialization."""
    with open(path, 'wb') as f:
        f.write(model.SerializeToString(deterministic=True))


def summary(model: onnx.ModelProto) -> Dict[str, int]:
    """Count the ONNX ops of ``model`` (for logs and tests)."""
    return dict(sorted(collections.Counter(n.op_type for n in model.graph.node).items()))


__all__ = ['ConversionError', 'convert_file', 'convert_graph', 'load_tfjs', 'read_weights',
           'save_model', 'summary', 'OPSET']
