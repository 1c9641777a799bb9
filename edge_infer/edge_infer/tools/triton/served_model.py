# Copyright 2026 edge_infer contributors. Apache-2.0.
"""One registry model inside Triton's Python backend, on the library measured best here.

Copied as ``model.py`` into each model's version folder of the repository
that ``edge_infer serve`` writes (:mod:`.repository`); Triton's Python
backend stub imports it in the server's own venv (numpy 1.x, ONNX Runtime,
OpenVINO: :mod:`.server_env`). The model's ``config.pbtxt`` parameters say
what to open: ``edge_infer_backend`` (a candidate name of the backend
manager, :func:`backend_for`), ``edge_infer_source`` (the folder holding the
edge_infer package, put on ``sys.path``), the ONNX file beside this one and
its sha256 (``edge_infer_sha256``, checked at load: a file that changed
after the repository was written is refused).

Dynamic batching: Triton hands ``execute`` the requests it gathered (at most
``max_batch_size``). Our ONNX files have a fixed batch of 1 (their graphs
reshape with it), so the requests run one after another in that one call.
Input: with ``edge_infer_input: u8`` (``edge_infer serve``'s default) the
robot sends the resized uint8 frame (1 x H x W x 3, the model's colour
order: a quarter of the float tensor's bytes) and the server normalises it
with the model's ``edge_infer_mean`` / ``edge_infer_std`` into its
``edge_infer_layout``: in OpenVINO's graph (the ``+pre`` candidate of the
same library), in numpy before ONNX Runtime.

Outputs: with an ``edge_infer_rows`` plan (``edge_infer serve``'s default
for NanoDet, ``--rows-floor``) only the cells whose best score reaches the
floor travel (backends/libs/triton_rows.py); the selection runs after the
timed run, so it counts as overhead.

Each response carries the time its run took on the library in one more
output, ``edge_infer_compute_us`` (int64; this Python backend, 2.51, has no
response parameters): what the robot subtracts to see the remote overhead.
"""

import json
import os
import pathlib
import sys
import time
from typing import Dict, List

# a backend manager candidate name -> (library, threads, precision): what the
# server's venv can run from the plain ONNX file
SERVABLE_LIBRARIES = ('onnxruntime/cpu/', 'openvino/cpu/')
COMPUTE_OUTPUT = 'edge_infer_compute_us'


def servable(name: str) -> bool:
    """Return True for a candidate this server runs itself: ORT CPU or OpenVINO CPU, float in."""
    parts = name.split('/')
    return (name.startswith(SERVABLE_LIBRARIES) and '+' not in name and len(parts) in (3, 4)
            and parts[2].startswith('t') and parts[2][1:].isdigit()
            and (len(parts) == 3 or (parts[0] == 'openvino' and parts[3] in ('fp16', 'bf16'))))


def backend_for(name: str, graph_preprocessing: bool = False):
    """Return the backend of a servable candidate name (ValueError for any other).

    ``graph_preprocessing``: OpenVINO's ``+pre`` twin (uint8 frame in).
    """
    if not servable(name):
        raise ValueError(f"'{name}' is not servable here (ONNX Runtime CPU or OpenVINO CPU "
                         'candidates, float input)')
    parts = name.split('/')
    threads = int(parts[2][1:])
    if parts[0] == 'onnxruntime':
        from edge_infer.backends.libs.ort import OrtBackend
        return OrtBackend(intra_op_threads=threads)
    from edge_infer.backends.libs.openvino import OpenVinoBackend
    return OpenVinoBackend(threads, parts[3] if len(parts) == 4 else 'fp32',
                           graph_preprocessing=graph_preprocessing)


class Normalise:
    """The model's normalisation of a 1 x H x W x 3 uint8 frame: (x - mean) / std, its layout."""

    def __init__(self, params: Dict[str, str], np):
        self.layout = params.get('edge_infer_layout', 'NCHW')
        self.mean = [float(v) for v in params['edge_infer_mean'].split(',')]
        self.std = [float(v) for v in params['edge_infer_std'].split(',')]
        self.np = np
        self._scale = 1.0 / np.array(self.std, np.float32)
        self._bias = -np.array(self.mean, np.float32) * self._scale
        if self.layout == 'NCHW':
            self._scale, self._bias = self._scale[:, None, None], self._bias[:, None, None]
        self._out = None

    def __call__(self, x):
        """Return the float input for one uint8 frame (a buffer reused from call to call)."""
        np = self.np
        src = x.transpose(0, 3, 1, 2) if self.layout == 'NCHW' else x
        if self._out is None or self._out.shape != src.shape:
            self._out = np.empty(src.shape, np.float32)
        np.multiply(src, self._scale, out=self._out)
        self._out += self._bias
        return self._out


def parameters(model_config: dict) -> Dict[str, str]:
    """Return a model config's string parameters."""
    return {k: v.get('string_value', '') for k, v in model_config.get('parameters', {}).items()}


class TritonPythonModel:
    """Triton's Python backend model: a session of the measured backend."""

    def initialize(self, args: dict) -> None:
        """Open the model file on the backend its config names; refuse a changed file."""
        config = json.loads(args['model_config'])
        params = parameters(config)
        if params.get('edge_infer_source') and params['edge_infer_source'] not in sys.path:
            sys.path.insert(0, params['edge_infer_source'])
        from edge_infer.checksums import sha256_file
        folder = pathlib.Path(args['model_repository']) / args['model_version']
        path = folder / params.get('edge_infer_file', 'model.onnx')
        sha = sha256_file(path)
        if sha != params.get('edge_infer_sha256'):
            raise RuntimeError(f'{path}: sha256 {sha[:12]} differs from the config '
                               f"({params.get('edge_infer_sha256', '')[:12]}): write the "
                               'repository again')
        import numpy as np
        u8 = params.get('edge_infer_input') == 'u8'
        in_graph = u8 and params['edge_infer_backend'].startswith('openvino/')
        self.backend = backend_for(params['edge_infer_backend'], in_graph)
        self.normalise = Normalise(params, np) if u8 and not in_graph else None
        spec = Normalise(params, np) if in_graph else None     # mean, std, layout
        self.session = self.backend.open_session(path, input_spec=spec)
        self.input_name = config['input'][0]['name']
        self.output_names: List[str] = [o['name'] for o in config['output']
                                        if o['name'] != COMPUTE_OUTPUT]
        from edge_infer.backends.libs import triton_rows
        self.rows = triton_rows.Plan.from_params(params)    # None: the dense outputs
        self.tr = triton_rows
        import triton_python_backend_utils as pb_utils
        self.pb, self.np = pb_utils, np
        print(f"[edge_infer] {args['model_name']}: {self.backend.name} "
              f"({'uint8 frame in' if u8 else 'float tensor in'}, pid {os.getpid()})",
              flush=True)

    def execute(self, requests):
        """Run each request on the session; every response carries its compute time."""
        pb = self.pb
        responses = []
        last = len(requests) - 1
        for i, request in enumerate(requests):
            x = pb.get_input_tensor_by_name(request, self.input_name).as_numpy()
            t0 = time.perf_counter_ns()
            outs = self.session.run(x if self.normalise is None else self.normalise(x))
            us = (time.perf_counter_ns() - t0) // 1000
            if self.rows is not None:     # the cells that can hold a detection
                tr = self.tr
                rows, scores, paired = tr.encode(self.rows, dict(zip(self.session.output_names,
                                                                     outs)))
                tensors = [pb.Tensor(tr.ROWS, rows[None]), pb.Tensor(tr.SCORES, scores[None]),
                           pb.Tensor(tr.PAIRED, paired[None])]
            else:
                # a session's outputs may be its own reused buffers: copy all but the last
                tensors = [pb.Tensor(n, o.copy() if i < last else o)
                           for n, o in zip(self.output_names, outs)]
            tensors.append(pb.Tensor(COMPUTE_OUTPUT, self.np.array([[us]], self.np.int64)))
            responses.append(pb.InferenceResponse(output_tensors=tensors))
        return responses

    def finalize(self) -> None:
        """Close the session."""
        self.session.close()
