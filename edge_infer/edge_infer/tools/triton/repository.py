# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Triton model repositories: ours (Python backend, measured library) and a stock one.

Both write one folder per registry model, ``<model>/config.pbtxt`` and
``<model>/1/model.onnx`` (a copy of the file the registry names), and record
the file's sha256 in the config's parameters (``edge_infer_sha256``): the
robot reads it with the model's config and refuses a server whose file
differs from its own (:mod:`edge_infer.backends.libs.triton`).

- :func:`write_served` (``edge_infer serve``): ``backend: "python"`` with
  :mod:`.served_model` as ``model.py``, which opens the file on the library
  the backend manager measured best on this machine;
- :func:`write_stock` (``edge_infer serve --write-repo DIR``): for a stock
  ``tritonserver`` (NGC container, a GPU box): ``backend: "onnxruntime"`` or
  ``"openvino"``, nothing of ours inside.

Batching: the dynamic batcher needs ``max_batch_size`` > 0, which makes the
first dimension the batch. Our Python backend model runs the gathered
requests one by one (a fixed batch of 1), so it always batches. A stock
backend hands the model the whole batch: it gets the file with its batch
freed (:mod:`.batch_dim`: NanoDet's, the selfie model's and CenterNet's
Reshape / Resize rewritten, checked at batch 2), and a file that cannot be
freed (MoveNet) gets ``max_batch_size: 0`` and no batcher, with the reason
in the config.
"""

import pathlib
import shutil
from typing import List, Optional, Sequence, Tuple

from . import served_model

DTYPES = {1: 'TYPE_FP32', 2: 'TYPE_UINT8', 3: 'TYPE_INT8', 5: 'TYPE_INT16', 6: 'TYPE_INT32',
          7: 'TYPE_INT64', 9: 'TYPE_BOOL', 10: 'TYPE_FP16', 11: 'TYPE_FP64'}
SHA_KEY = 'edge_infer_sha256'
BACKEND_KEY = 'edge_infer_backend'


class Tensor:
    """One input or output of an ONNX file: name, Triton type, shape (batch first)."""

    def __init__(self, name: str, dtype: str, shape: Sequence[int]):
        self.name, self.dtype, self.shape = name, dtype, list(shape)


def io_of(path: pathlib.Path) -> Tuple[List[Tensor], List[Tensor]]:
    """Return an ONNX file's inputs (initializers left out) and outputs."""
    import onnx
    model = onnx.load(str(path), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}

    def tensor(v) -> Tensor:
        t = v.type.tensor_type
        dtype = DTYPES.get(t.elem_type)
        if dtype is None:
            raise ValueError(f'{path.name}: {v.name} has ONNX type {t.elem_type}, not served')
        return Tensor(v.name, dtype, [d.dim_value if d.dim_value > 0 else -1
                                      for d in t.shape.dim])
    return ([tensor(v) for v in model.graph.input if v.name not in inits],
            [tensor(v) for v in model.graph.output])


def batch_of_one(tensors: Sequence[Tensor]) -> bool:
    """Return True when every tensor's first dimension is a fixed 1."""
    return all(t.shape and t.shape[0] == 1 for t in tensors)


def _tensors(kind: str, tensors: Sequence[Tensor], drop_batch: bool) -> str:
    rows = []
    for t in tensors:
        dims = t.shape[1:] if drop_batch else t.shape
        rows.append(f'  {{ name: "{t.name}" data_type: {t.dtype} '
                    f'dims: [ {", ".join(str(d) for d in dims)} ] }}')
    return f'{kind} [\n' + ',\n'.join(rows) + '\n]\n'


def _parameters(params: dict) -> str:
    return ''.join(f'parameters {{ key: "{k}" value: {{ string_value: "{v}" }} }}\n'
                   for k, v in params.items())


def config_text(name: str, backend: str, inputs: Sequence[Tensor], outputs: Sequence[Tensor],
                max_batch: int, queue_delay_us: int, instances: int, params: dict,
                note: str = '', extra: str = '') -> str:
    """Return a config.pbtxt: batching on when ``max_batch`` > 0 (batch dim dropped)."""
    text = f'# Written by edge_infer. {note}\n' if note else '# Written by edge_infer.\n'
    text += f'name: "{name}"\nbackend: "{backend}"\nmax_batch_size: {max_batch}\n'
    text += extra
    text += _tensors('input', inputs, max_batch > 0) + _tensors('output', outputs, max_batch > 0)
    if max_batch > 0:
        text += ('dynamic_batching {\n'
                 f'  max_queue_delay_microseconds: {int(queue_delay_us)}\n}}\n')
    text += f'instance_group [ {{ kind: KIND_CPU count: {int(instances)} }} ]\n'
    return text + _parameters(params)


def _copy_model(folder: pathlib.Path, path: pathlib.Path) -> None:
    version = folder / '1'
    version.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, version / 'model.onnx')


def u8_input(name: str, inputs: Sequence[Tensor], spec) -> Tuple[Tensor, dict]:
    """Return the served uint8 frame input (1 x H x W x 3) and its parameters.

    ``spec``: the model's InputSpec (mean, std, layout), which the server
    applies. ValueError for a model that does not take one float image.
    """
    if len(inputs) != 1 or inputs[0].dtype != 'TYPE_FP32' or len(inputs[0].shape) != 4:
        raise ValueError(f'{name}: a uint8 frame input needs one float32 4-D image input; '
                         'serve it with --input float')
    shape = inputs[0].shape
    h, w = (shape[2], shape[3]) if spec.layout == 'NCHW' else (shape[1], shape[2])
    params = {'edge_infer_input': 'u8', 'edge_infer_layout': spec.layout,
              'edge_infer_mean': ','.join(repr(float(m)) for m in spec.mean),
              'edge_infer_std': ','.join(repr(float(s)) for s in spec.std)}
    return Tensor(inputs[0].name, 'TYPE_UINT8', [1, h, w, 3]), params


def write_served(root: pathlib.Path, name: str, path: pathlib.Path, sha256: str,
                 backend_name: str, source: pathlib.Path, max_batch: int = 8,
                 queue_delay_us: int = 100, instances: int = 1,
                 input_spec=None, rows_plan=None) -> pathlib.Path:
    """Write one model of ``edge_infer serve``'s repository; return its folder.

    ``backend_name``: the candidate the backend manager measured best here
    (:func:`.served_model.servable`); ``source``: the folder holding the
    edge_infer package, for the server's Python. ``input_spec`` (the
    model's InputSpec): the served input is the resized uint8 frame, and the
    server normalises it (:func:`u8_input`); None: the float tensor itself.
    ``rows_plan`` (backends/libs/triton_rows.py): the outputs go as the cell
    rows that can hold a detection; None: the dense outputs.
    """
    inputs, outputs = io_of(path)
    extra_params: dict = {}
    if input_spec is not None:
        u8, extra_params = u8_input(name, inputs, input_spec)
        inputs = [u8]
    if rows_plan is not None:
        from ...backends.libs import triton_rows as tr
        outputs = [Tensor(tr.ROWS, 'TYPE_INT32', [1, -1]),
                   Tensor(tr.SCORES, 'TYPE_FP32', [1, -1, rows_plan.classes]),
                   Tensor(tr.PAIRED, 'TYPE_FP32', [1, -1, rows_plan.width])]
        extra_params.update(rows_plan.params())
    outputs.append(Tensor(served_model.COMPUTE_OUTPUT, 'TYPE_INT64', [1, 1]))
    if not (batch_of_one(inputs) and batch_of_one(outputs)) and max_batch > 0:
        raise ValueError(f'{name}: batch dimension is not a fixed 1; serve it with '
                         '--max-batch 0')
    folder = root / name
    _copy_model(folder, path)
    shutil.copyfile(pathlib.Path(served_model.__file__), folder / '1' / 'model.py')
    note = (f'{backend_name}, measured best on this machine; the requests a batch '
            'gathers run one by one (the file has a batch of 1).')
    params = {SHA_KEY: sha256, BACKEND_KEY: backend_name, 'edge_infer_source': str(source),
              'edge_infer_file': 'model.onnx', **extra_params}
    (folder / 'config.pbtxt').write_text(config_text(
        name, 'python', inputs, outputs, max_batch, queue_delay_us, instances, params, note))
    return folder


def rows_plan_for(spec, path: pathlib.Path, floor: float):
    """Return the sparse-rows plan of a registry model's outputs, or None (dense outputs)."""
    from ...backends.libs import triton_rows
    _, outputs = io_of(path)
    return triton_rows.plan_for(spec.decoder, [(t.name, t.shape) for t in outputs],
                                spec.decoder_args.get('strides', ()), floor)


def stock_backend(chosen: str) -> str:
    """Return the stock Triton backend a measured choice maps to: openvino or onnxruntime."""
    return 'openvino' if chosen.startswith('openvino/') else 'onnxruntime'


def write_stock(root: pathlib.Path, name: str, path: pathlib.Path, sha256: str,
                backend: str, chosen: str = '', max_batch: int = 8, queue_delay_us: int = 100,
                instances: int = 1, batched: Optional[bytes] = None,
                why_not: str = '') -> pathlib.Path:
    """Write one model for a stock tritonserver (``backend`` onnxruntime or openvino).

    ``batched``: the file with its batch freed and checked
    (:func:`.batch_dim.batched_copy`), written as the model where
    ``max_batch`` > 0; None writes ``max_batch_size: 0`` and no batcher,
    with the reason (``why_not``).
    """
    if backend not in ('onnxruntime', 'openvino'):
        raise ValueError(f"backend '{backend}': use onnxruntime or openvino")
    inputs, outputs = io_of(path)
    folder = root / name
    _copy_model(folder, path)
    note = ''
    if max_batch > 0 and batched is None:
        note = ('max_batch_size 0, no dynamic batching: the batch could not be freed '
                f"({why_not or 'not tried'}).")
        max_batch = 0
    elif max_batch > 0:
        note = ('the batch dimension freed (Reshape / Resize rewritten), checked at batch 2 '
                'against two runs at batch 1.')
    extra = ''
    params = {SHA_KEY: sha256}
    if chosen:
        params['edge_infer_measured'] = chosen
    if backend == 'openvino':
        extra = 'default_model_filename: "model.onnx"\n'
        threads = chosen.split('/')[2][1:] if chosen.startswith('openvino/cpu/t') else ''
        params['PERFORMANCE_HINT'] = 'LATENCY'
        if threads.isdigit():
            params['INFERENCE_NUM_THREADS'] = threads
    text = config_text(name, backend, inputs, outputs, max_batch, queue_delay_us, instances,
                       params, note, extra)
    if max_batch > 0 and batched is not None:     # the file is fed batches
        (folder / '1' / 'model.onnx').write_bytes(batched)
    (folder / 'config.pbtxt').write_text(text)
    return folder
