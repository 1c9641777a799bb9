# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A BLAS backend: the ONNX graph run layer by layer in numpy, conv lowering chosen per layer.

Park & Chung (a performance comparison of acceleration methods on CPUs)
measured that how a convolution is lowered is worth up to 17.68x.
This backend runs an ONNX graph with numpy (whose GEMM is the BLAS numpy was
built with, OpenBLAS in the wheels) and lowers every dense convolution one of
three ways:

- ``im2col``: patches copied into a [C*kh*kw, Ho*Wo] matrix, then one GEMM
  ``W[M, C*kh*kw] @ cols`` straight into the NCHW output;
- ``im2row``: patches copied as rows [Ho*Wo, C*kh*kw], then ``rows @ W.T``
  ([Ho*Wo, M]; the bias is added while transposing back to [M, Ho, Wo]);
- ``direct``: no patch matrix and no BLAS: a loop over the kernel offsets,
  each contracting the weights ``W[:, :, i, j]`` with the input window seen
  as it lies in memory (``numpy.einsum`` over channels, a strided view) and
  accumulating into the output.

Grouped convs run the same three ways with a batched GEMM (einsum) over
groups. 1x1 convs are one plain GEMM whatever the method; depthwise convs
(groups == channels) are per-offset multiply-adds for every method (a GEMM of
one channel is not worth it); the plan says so. ``auto`` times the methods on
every dense conv layer of a distinct shape at load (``tune_runs`` runs each,
median, on a random input of the layer's shape; a method whose first run is
over 10x the best so far is not run again) and keeps the fastest.
``session.plan`` records, per conv layer, the choice and the timings.

Memory: every op's output, the padded inputs and the pooling windows are
allocated once at load and rewritten in place run to run; one scratch area,
shared by all conv layers (they run one after the other), holds the patch
matrices. Elementwise ops overwrite their input when nothing else reads it;
Reshape, Flatten, Split and Identity are views. Outputs are reused buffers
(consume them before the next run).
"""

import pathlib
import time
from typing import Dict, List, Tuple

import numpy as np

from .blas_conv import METHODS
from .blas_plan import Planner
from ...core.backend import Backend, BackendError, first_line, Session, UnsupportedModel


class BlasSession(Session):
    """The graph as a list of numpy steps writing into buffers allocated at load."""

    def __init__(self, path: pathlib.Path, method: str, tune_runs: int, name: str):
        import onnx
        t0 = time.perf_counter()
        model = onnx.load(str(path))
        g = model.graph
        self.backend_name = name
        planner = Planner(g, method, tune_runs)
        inputs = [i for i in g.input if i.name not in planner.consts]
        if len(inputs) != 1:
            raise UnsupportedModel(f'numpy-blas: model has {len(inputs)} inputs; '
                                   f'edge_infer feeds one image')
        inp = inputs[0]
        if inp.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
            raise UnsupportedModel('numpy-blas: only a float32 input is supported')
        dims = [d.dim_value for d in inp.type.tensor_type.shape.dim]
        if dims and not dims[0]:
            dims[0] = 1          # symbolic batch: plan for one image
        if not dims or not all(dims):
            raise UnsupportedModel(f'numpy-blas: needs a static input shape, got {dims}')
        self.input_name = inp.name
        self.input_shape = tuple(dims)
        self.output_names = [o.name for o in g.output]
        planner.shapes[inp.name] = self.input_shape
        for node in g.node:
            planner.add(node)
        for o in self.output_names:
            if o not in planner.shapes and o not in planner.consts:
                raise BackendError(f'numpy-blas: output {o} is not computed by the graph')
        need = max((c.scratch_need(c.method) for c in planner.convs), default=0)
        self._scratch = np.empty(need, np.float32)
        for conv in planner.convs:
            conv.bind(self._scratch)
        self._steps = planner.steps
        self._env: Dict[str, object] = {'': None}
        used = {n for _, ins, _ in self._steps for n in ins} | set(self.output_names)
        self._env.update({k: v for k, v in planner.consts.items() if k in used})
        self._convs = planner.convs
        self.plan: List[dict] = planner.plan
        self.tune_ms = planner.tune_ms
        self.load_ms = (time.perf_counter() - t0) * 1e3

    def run(self, tensor: np.ndarray) -> List[np.ndarray]:
        """Run one float32 input tensor; outputs are buffers reused by the next run."""
        x = np.asarray(tensor, np.float32)
        if x.shape != self.input_shape:
            raise BackendError(f'numpy-blas: input shape {x.shape}, the plan is for '
                               f'{self.input_shape}')
        env = self._env
        env[self.input_name] = x
        for fn, ins, outs in self._steps:
            res = fn(*[env[n] for n in ins])
            if len(outs) == 1:
                env[outs[0]] = res
            else:
                for name, r in zip(outs, res):
                    env[name] = r
        out = [np.asarray(env[o]) for o in self.output_names]
        env[self.input_name] = None     # do not hold on to the caller's array
        return out

    def close(self) -> None:
        """Drop the steps and every buffer."""
        self._steps = []
        self._env = {'': None}
        self._convs = []
        self._scratch = np.empty(0, np.float32)


def _blas_info() -> Tuple[str, str]:
    """Return the name and version of the BLAS numpy was built with, where numpy says."""
    try:
        cfg = np.show_config(mode='dicts')
        blas = cfg.get('Build Dependencies', {}).get('blas', {})
        return str(blas.get('name', 'unknown BLAS')), str(blas.get('version', ''))
    except Exception:  # numpy < 1.26 has no dict mode
        return 'unknown BLAS', ''


class BlasBackend(Backend):
    """numpy and its BLAS on the CPU, conv lowered per layer (see the module docstring)."""

    library = 'numpy'
    device = 'cpu'
    precision = 'fp32'
    tensor_passing = 'numpy arrays in place (no copies between layers)'

    def __init__(self, conv_method: str = 'auto', tune_runs: int = 3):
        if conv_method not in ('auto',) + METHODS:
            raise ValueError(f"conv_method '{conv_method}': use auto or one of {METHODS}")
        self.conv_method = conv_method
        self.tune_runs = max(1, int(tune_runs))
        self.name = 'numpy-blas/cpu' + ('' if conv_method == 'auto' else f'/{conv_method}')

    def options(self) -> Dict[str, object]:
        """Return the conv method and the tuning runs."""
        return {'conv_method': self.conv_method, 'tune_runs': self.tune_runs}

    def versions(self) -> Dict[str, str]:
        """Return numpy's version and its BLAS library's name and version."""
        name, version = _blas_info()
        return {'numpy': np.__version__, 'blas': name, 'blas_version': version}

    def available(self) -> Tuple[bool, str]:
        """Return True (numpy is always there) and which BLAS it uses."""
        name, version = _blas_info()
        return True, f'numpy {np.__version__} with {name} {version}'.strip()

    def open_session(self, model_path: pathlib.Path, strict: bool = False,
                     input_spec=None) -> Session:
        """Parse the model, plan every op and (auto) time the conv lowerings per layer.

        CPU only, so ``strict`` changes nothing; ``input_spec`` is not needed
        (float input).
        """
        path = pathlib.Path(model_path)
        if not path.is_file():
            raise BackendError(f'model file {path} not found')
        try:
            return BlasSession(path, self.conv_method, self.tune_runs, self.name)
        except BackendError:
            raise
        except Exception as exc:  # onnx parse errors and the like
            raise BackendError(
                f'{self.name}: cannot load {path.name}: {first_line(exc)}') from None
