# Copyright 2026 edge_infer contributors. Apache-2.0.
"""fp16 and int8 variants of a model file, made once when a model is prepared, and cached.

``edge_infer prepare``, ``edge_infer model add`` and ``edge_infer variants``
make them (:mod:`.make`); the serving process only measures the files it
finds (``make_variants: false`` in config/backends.yaml): a robot's start
never quantizes, and a variant whose file is missing is an unavailable
candidate whose reason names the command. The backend manager runs them like
any other candidate (:class:`VariantBackend`); its accuracy check against the
fp32 model on real frames decides whether they may be chosen.

- ``fp16``: our own conversion with the ``onnx`` package (no
  onnxconverter-common). Float32 initializers, Constant tensors and float
  Casts become float16 and the value infos say so; the graph keeps float32
  inputs and outputs through Cast nodes, so callers feed the same tensor.
  Kept in float32: inputs that ONNX types as float32 only or that are
  coordinates (Resize roi/scales, Upsample scales), whole ops without a
  float16 type in ONNX (Range, NonMaxSuppression, (De)QuantizeLinear) and
  float arithmetic on tensor shapes (from Shape/Size), where float16 would
  round sizes above 2048. Non-float tensors are never touched.
- ``int8`` (ONNX Runtime, QDQ) and ``int8-nncf`` (OpenVINO IR from NNCF):
  :mod:`.quantize`, calibrated on frames disjoint from the ones that judge
  them, in a child process.

Files are named ``<stem>.<kind>.<12 hex of the source sha256>[.<8 hex of the
calibration key>].c<converter version>.<onnx|xml>`` in the cache directory and
written atomically (temporary folder + ``os.replace``, the file itself last);
an existing one is returned as is.
"""

from collections import defaultdict
import os
import pathlib
import tempfile
from typing import Callable, Dict, List, Optional, Set, Tuple

import numpy as np

from ..libs.installed import dist_version
from ...checksums import sha256_file
from ...core.backend import Backend, BackendError, first_line, Session

KINDS = ('fp16', 'int8', 'int8-nncf')
Log = Callable[[str], object]

# (op type, input index) that stays float32 in an fp16 graph: typed float32
# only by ONNX (scales) or coordinates that float16 would round (roi).
FP32_INPUTS = {('Resize', 1), ('Resize', 2), ('Upsample', 1)}
# ops run entirely in float32 (no float16 in their ONNX type constraints at
# the opsets the converter meets): float inputs cast up, outputs cast down.
FP32_OPS = {'Range', 'NonMaxSuppression', 'QuantizeLinear', 'DequantizeLinear',
            'DynamicQuantizeLinear'}
# ops whose float output type comes from an attribute (not from an input)
_DTYPE_ATTR = {'EyeLike': 'dtype', 'RandomNormal': 'dtype', 'RandomUniform': 'dtype',
               'RandomNormalLike': 'dtype', 'RandomUniformLike': 'dtype',
               'Bernoulli': 'dtype'}


class VariantError(ValueError):
    """A variant cannot be made (bad source, kind, or missing calibration)."""


def variant_kinds() -> Tuple[str, ...]:
    """Return the variant kinds make_variant knows: ('fp16', 'int8', 'int8-nncf')."""
    return KINDS


# ---------------------------------------------------------------------- fp16
def _shape_derived(graph, constants: Set[str]) -> Set[str]:
    """Return the tensors computed only from tensor shapes (and constants)."""
    derived: Set[str] = set()
    for n in graph.node:
        ins = [i for i in n.input if i]
        if n.op_type in ('Shape', 'Size') or (
                any(i in derived for i in ins) and
                all(i in derived or i in constants for i in ins)):
            derived.update(o for o in n.output if o)
    return derived


def _to_fp16(model):
    """Convert a float32 ModelProto to float16 in place, float32 at its inputs/outputs."""
    import onnx
    from onnx import helper, numpy_helper, TensorProto
    FLOAT, HALF = TensorProto.FLOAT, TensorProto.FLOAT16
    g = model.graph
    for n in g.node:
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for a in n.attribute):
            raise VariantError(f"fp16: node '{n.name}' ({n.op_type}) has a subgraph; "
                               f'If/Loop/Scan are not supported')
    if len(g.sparse_initializer):
        raise VariantError('fp16: sparse initializers are not supported')
    inferred = onnx.shape_inference.infer_shapes(model)
    vinfo = {v.name: v for v in inferred.graph.value_info}
    types: Dict[str, int] = {}
    for v in list(inferred.graph.input) + list(inferred.graph.value_info) + \
            list(inferred.graph.output):
        types[v.name] = v.type.tensor_type.elem_type
    inits = {i.name: i for i in g.initializer}
    for name, init in inits.items():
        types[name] = init.data_type
    for n in g.node:          # Constant outputs, should inference have missed them
        if n.op_type == 'Constant':
            for a in n.attribute:
                if a.name in ('value_float', 'value_floats'):
                    types[n.output[0]] = FLOAT
                elif a.name == 'value':
                    types[n.output[0]] = a.t.data_type

    def is_float(name: str) -> bool:
        return bool(name) and types.get(name) == FLOAT

    constants = set(inits) | {n.output[0] for n in g.node if n.op_type == 'Constant'}
    shape_math = _shape_derived(g, constants)
    # protobuf wrappers are not stable objects: nodes are known by their index
    graph_nodes = list(g.node)
    fp32_nodes = {j for j, n in enumerate(graph_nodes) if n.op_type in FP32_OPS or
                  any(t in shape_math and is_float(t) for t in list(n.input) + list(n.output))}
    graph_in = {i.name for i in g.input if i.name not in inits}
    graph_out = {o.name for o in g.output}

    def needs_fp32(j: int, k: int) -> bool:
        return j in fp32_nodes or (graph_nodes[j].op_type, k) in FP32_INPUTS

    uses = defaultdict(list)
    for j, n in enumerate(graph_nodes):
        for k, name in enumerate(n.input):
            if name:
                uses[name].append(needs_fp32(j, k))

    def only_fp32_uses(name: str) -> bool:
        return name in graph_out or (bool(uses[name]) and all(uses[name]))

    # dtype each float tensor is produced in: True = float32
    made32: Dict[str, bool] = {}
    for name in graph_in:
        if is_float(name):
            made32[name] = True
    for name, init in inits.items():
        if init.data_type == FLOAT:
            made32[name] = only_fp32_uses(name)
            if not made32[name]:
                half = numpy_helper.to_array(init).astype(np.float16)
                init.CopyFrom(numpy_helper.from_array(half, name))
    for j, n in enumerate(graph_nodes):
        outs = [o for o in n.output if is_float(o)]
        if n.op_type == 'Constant' and outs:
            keep = only_fp32_uses(outs[0])
            made32[outs[0]] = keep
            if not keep:
                for a in list(n.attribute):
                    if a.name == 'value':
                        half = numpy_helper.to_array(a.t).astype(np.float16)
                        a.t.CopyFrom(numpy_helper.from_array(half, a.t.name))
                    elif a.name in ('value_float', 'value_floats'):
                        val = np.asarray(a.f if a.name == 'value_float' else list(a.floats),
                                         np.float16)
                        n.attribute.remove(a)
                        n.attribute.append(helper.make_attribute(
                            'value', numpy_helper.from_array(val)))
            continue
        if n.op_type == 'Cast' and outs:
            keep = j in fp32_nodes or only_fp32_uses(outs[0])
            made32[outs[0]] = keep
            if not keep:
                for a in n.attribute:
                    if a.name == 'to':
                        a.i = HALF
            continue
        keep = j in fp32_nodes
        for o in outs:
            made32[o] = keep
        if not keep:
            for a in n.attribute:
                if a.name == _DTYPE_ATTR.get(n.op_type) and a.i == FLOAT:
                    a.i = HALF
                elif n.op_type == 'ConstantOfShape' and a.name == 'value' and \
                        a.t.data_type == FLOAT:
                    half = numpy_helper.to_array(a.t).astype(np.float16)
                    a.t.CopyFrom(numpy_helper.from_array(half, a.t.name))

    # float16 graph outputs: the producer writes <name>__fp16, a Cast restores <name>
    renamed: Dict[str, str] = {}
    for name in graph_out:
        if name in made32 and not made32[name] and name not in inits:
            renamed[name] = name + '__fp16'
            made32[renamed[name]] = False
    new_value_info = []
    for name, v in vinfo.items():
        if name in made32:
            v = onnx.ValueInfoProto.FromString(v.SerializeToString())
            v.name = renamed.get(name, name)
            v.type.tensor_type.elem_type = FLOAT if made32[name] else HALF
        new_value_info.append(v)
    out_info = {o.name: o for o in g.output}

    casts: Dict[Tuple[str, bool], str] = {}
    nodes = []

    def cast(name: str, to32: bool) -> str:
        key = (name, to32)
        if key not in casts:
            casts[key] = f"{name}__{'fp32' if to32 else 'fp16'}_cast"
            nodes.append(helper.make_node('Cast', [name], [casts[key]],
                                          to=FLOAT if to32 else HALF,
                                          name=casts[key]))
            src = vinfo.get(name) or out_info.get(name) or \
                next((i for i in g.input if i.name == name), None)
            if src is not None and src.type.tensor_type.HasField('shape'):
                shape = [d.dim_value if d.HasField('dim_value') else (d.dim_param or None)
                         for d in src.type.tensor_type.shape.dim]
                new_value_info.append(helper.make_tensor_value_info(
                    casts[key], FLOAT if to32 else HALF, shape))
        return casts[key]

    for j, n in enumerate(graph_nodes):
        for k, name in enumerate(n.input):
            name = renamed.get(name, name)
            n.input[k] = name
            if name in made32:
                want32 = needs_fp32(j, k)
                if made32[name] != want32:
                    n.input[k] = cast(name, want32)
        for k, name in enumerate(n.output):
            n.output[k] = renamed.get(name, name)
        nodes.append(n)
    for name, half in renamed.items():
        nodes.append(helper.make_node('Cast', [half], [name], to=FLOAT, name=name + '_cast'))
    kept = list(nodes)
    del g.node[:]
    g.node.extend(kept)
    del g.value_info[:]
    g.value_info.extend(new_value_info)
    for i in g.input:
        if i.name in inits:       # old IRs list initializers as inputs too
            i.type.tensor_type.elem_type = inits[i.name].data_type
    onnx.checker.check_model(model, full_check=True)
    return model


# ---------------------------------------------------------------------- API
# Part of every variant's file name: bump it when a conversion changes, so files
# made by an older converter are not reused (2: int8 with reduce_range; 3: int8
# calibrated on the video's first half, method chosen on validation frames; 4:
# MinMax first, accuracy control only within reach).
CONVERTER_VERSION = 4
SUFFIX = {'int8-nncf': '.xml'}      # OpenVINO IR (+ .bin); the others are ONNX files


def variant_path(src: pathlib.Path, kind: str, cache_dir: pathlib.Path,
                 key: str = '') -> pathlib.Path:
    """Return where the ``kind`` variant of ``src`` lives in ``cache_dir`` (hashes src).

    ``key``: what else the file depends on (an int8 file: its calibration
    source, floor and frame counts), hashed into the name.
    """
    import hashlib
    src = pathlib.Path(src)
    extra = f'.{hashlib.sha256(key.encode()).hexdigest()[:8]}' if key else ''
    return pathlib.Path(cache_dir) / (f'{src.stem}.{kind}.{sha256_file(src)[:12]}{extra}'
                                      f'.c{CONVERTER_VERSION}{SUFFIX.get(kind, ".onnx")}')


def _companions(path: pathlib.Path) -> List[pathlib.Path]:
    """Return the files that make up a variant: the IR's .bin first, then the file itself."""
    return ([path.with_suffix('.bin')] if path.suffix == '.xml' else []) + [path]


def _key(kind: str, spec, floor: float, frames: Tuple[int, int]) -> str:
    """Return what an int8 file depends on besides the source: calibration, floor, counts."""
    if kind == 'fp16':
        return ''
    return (f"{getattr(spec, 'calibration', '') or 'bundled'}|{floor:g}|{frames[0]}|"
            f'{frames[1]}')


def make_variant(src: pathlib.Path, kind: str, cache_dir: pathlib.Path, spec=None,
                 floor: float = 0.9, frames: Tuple[int, int] = (30, 24), log: Log = print,
                 cancel=None, max_mb: float = 1000.0) -> pathlib.Path:
    """Return the ``kind`` variant of model file ``src``, converting it the first time.

    :param src: float32 ONNX model.
    :param kind: 'fp16', 'int8' (ONNX Runtime QDQ) or 'int8-nncf' (OpenVINO IR
        from NNCF); see :func:`variant_kinds` and :mod:`.quantize`.
    :param cache_dir: folder of the variants (created if missing).
    :param spec: int8 kinds only: the model's registry entry (preprocessing,
        decoder, ``calibration`` source).
    :param floor: int8 kinds: the task's accuracy floor (the quantizers aim above it).
    :param frames: int8 kinds: (calibration, validation) frame counts.
    :param log: gets the quantizer's lines and one line when a variant is made
        (nothing on a cache hit).
    :param cancel: a threading.Event that stops an int8 quantizer.
    :param max_mb: int8 kinds: the quantizer process is stopped above this RSS (0: no bound).
    :returns: ``cache_dir/<stem>.<kind>.<12 hex of src's sha256>[.<key>].c<N>.<onnx|xml>``.
    :raises VariantError: unknown kind, missing or unreadable source, no
        spec for int8, or a conversion that failed (with the reason).
    """
    import time
    if kind not in KINDS:
        raise VariantError(f"variant kind '{kind}' unknown: use one of {', '.join(KINDS)}")
    src = pathlib.Path(src)
    if not src.is_file():
        raise VariantError(f'source model {src} not found')
    int8 = kind != 'fp16'
    if int8 and spec is None:
        raise VariantError(f"{kind} needs the model's registry entry (calibration frames are "
                           'preprocessed and judged as its node does)')
    out = variant_path(src, kind, cache_dir, _key(kind, spec, floor, frames))
    if all(p.is_file() for p in _companions(out)):
        return out
    import onnx
    try:
        model = onnx.load(str(src))
        onnx.checker.check_model(model)
    except Exception as exc:  # protobuf DecodeError, checker ValidationError, ...
        raise VariantError(f'{kind}: source {src.name} is not a valid ONNX model: '
                           f'{first_line(exc)}') from None
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=out.name + '.', dir=out.parent) as tmp_dir:
        tmp = pathlib.Path(tmp_dir) / ('variant' + out.suffix)
        try:
            if kind == 'fp16':
                onnx.save(_to_fp16(model), tmp)
            else:
                from .quantize import make_in_child
                make_in_child(kind, src, tmp, spec, floor, frames[0], frames[1], log=log,
                              cancel=cancel, max_mb=max_mb)
                os.replace(str(tmp) + '.json', str(out) + '.json')
        except VariantError:
            raise
        except Exception as exc:  # onnx / ORT / NNCF errors on an unusual graph
            raise VariantError(f'{kind} conversion of {src.name} failed: '
                               f'{first_line(exc)}') from None
        for part, final in zip(_companions(tmp), _companions(out)):
            os.replace(part, final)     # the file itself last: it marks the variant made
    size = sum(p.stat().st_size for p in _companions(out))
    log(f'made {kind} variant {out.name} ({size / 1e6:.1f} MB) '
        f'in {time.perf_counter() - t0:.1f} s')
    return out


class VariantBackend(Backend):
    """A base backend run on an fp16 / int8 variant of the model file (made once, cached).

    ``kind`` is the variant file's kind ('fp16', 'int8', 'int8-nncf'); the
    candidate's name is the base's with ``/fp16`` or ``/int8`` added (before a
    ``+pre``). ``settings()`` returns what an int8 quantizer needs: (spec,
    floor, (calibration, validation) frame counts, cancel event). ``make``
    False (the serving process): the file of ``model_path`` is only used,
    never made, and a missing one makes the candidate unavailable
    (:meth:`missing`). ``max_mb``: the quantizer's memory bound.
    """

    def __init__(self, base: Backend, kind: str, cache_dir: pathlib.Path,
                 settings: Optional[Callable[[], tuple]] = None, log: Log = lambda s: None,
                 make: bool = True, model_path: Optional[pathlib.Path] = None,
                 max_mb: float = 1000.0):
        self.base = base
        self.make = make    # False: a missing file makes the candidate unavailable
        self.model_path = model_path
        self.max_mb = max_mb
        self.log = log      # the quantizer's lines: calibration source, scores, time
        self.kind = kind
        self.cache_dir = pathlib.Path(cache_dir)
        self.settings = settings
        self.precision = kind.split('-')[0]
        stem, plus, pre = base.name.partition('+')
        self.name = f'{stem}/{self.precision}{plus}{pre}'
        self.library = base.library
        self.device = base.device
        self.tensor_passing = base.tensor_passing
        if getattr(base, 'input_kind', None):
            self.input_kind = base.input_kind

    def options(self) -> Dict[str, object]:
        """Return the base's options, the variant kind and (int8) what calibrated it."""
        spec, floor, frames, _ = self._settings()
        out = {**self.base.options(), 'variant': self.kind, 'converter': CONVERTER_VERSION}
        if self.kind != 'fp16':
            out['calibration'] = _key(self.kind, spec, floor, frames)
        return out

    def versions(self) -> Dict[str, str]:
        """Return the base's versions and the converters' (onnx; nncf for int8-nncf)."""
        out = {**self.base.versions(), 'onnx': dist_version('onnx')[1] or 'not installed'}
        if self.kind == 'int8-nncf':
            out['nncf'] = dist_version('nncf')[1] or 'not installed'
        return out

    def available(self) -> Tuple[bool, str]:
        """Return the base backend's availability, nncf's (int8-nncf) and the file's.

        The file counts only where this candidate may not make it (``make`` False).
        """
        ok, why = self.base.available()
        if ok and self.kind == 'int8-nncf' and self.make:
            import importlib.util
            if importlib.util.find_spec('nncf') is None:
                return False, 'nncf not installed: pip install nncf (OpenVINO int8 needs it)'
        if ok and not self.make and self.model_path is not None:
            missing = self.missing(self.model_path)
            if missing:
                return False, missing
        return ok, why

    def missing(self, model_path: pathlib.Path) -> str:
        """Return why the variant file of ``model_path`` is not there ('' if it is)."""
        spec, floor, frames, _ = self._settings()
        path = variant_path(pathlib.Path(model_path), self.kind, self.cache_dir / 'variants',
                            _key(self.kind, spec, floor, frames))
        if all(p.is_file() for p in _companions(path)):
            return ''
        return missing_line(getattr(spec, 'name', pathlib.Path(model_path).stem), self.kind)

    def _settings(self) -> tuple:
        return self.settings() if self.settings else (None, 0.9, (30, 24), None)

    def variant_path(self, model_path: pathlib.Path) -> pathlib.Path:
        """Return the variant file of ``model_path`` (converting it the first time)."""
        spec, floor, frames, cancel = self._settings()
        name = getattr(spec, 'name', pathlib.Path(model_path).stem)
        if not self.make:
            missing = self.missing(model_path)
            if missing:
                raise VariantError(missing)
        return make_variant(pathlib.Path(model_path), self.kind, self.cache_dir / 'variants',
                            spec=spec, floor=floor, frames=frames, cancel=cancel,
                            max_mb=self.max_mb,
                            log=lambda line: self.log(f'[{self.name} {name}] {line}'))

    def note(self, model_path: pathlib.Path) -> str:
        """Return how the variant file was made (calibration, validation) or ''."""
        from .quantize import describe_note, read_note
        if self.kind == 'fp16':
            return ''
        spec, floor, frames, _ = self._settings()
        return describe_note(read_note(variant_path(
            pathlib.Path(model_path), self.kind, self.cache_dir / 'variants',
            _key(self.kind, spec, floor, frames))))

    def open_session(self, model_path: pathlib.Path, strict: bool = False,
                     input_spec=None) -> Session:
        """Convert (cached) and open the variant on the base backend (arguments passed on)."""
        try:
            path = self.variant_path(model_path)
        except Exception as exc:  # VariantError or an onnx/ORT error during conversion
            raise BackendError(f'{self.name}: cannot make the {self.kind} variant: {exc}') \
                from None
        sess = self.base.open_session(path, strict=strict, input_spec=input_spec)
        sess.backend_name = self.name
        return sess


# the start of the reason a missing variant file gives (the node says it once)
NOT_MADE = 'file not made yet'


def make_command(model: str) -> str:
    """Return the command that makes ``model``'s variant files here."""
    from ...paths import command
    return f'{command()} variants {model}'


def missing_line(model: str, kind: str) -> str:
    """Return why ``model``'s ``kind`` candidate is unavailable, with the command."""
    return (f"{kind} {NOT_MADE} for '{model}' (a serving process never quantizes): make it "
            f'once with: {make_command(model)}')


def add_variant_note(backend: Backend, model_path: pathlib.Path, res) -> None:
    """Add how an int8 variant was calibrated and validated to its profile result's detail.

    ``res``: the :class:`..measure.profiling.CandidateResult` of ``backend`` (any
    candidate: only a variant has a note).
    """
    note = backend.note(model_path) if hasattr(backend, 'note') else ''
    if note and res.status == 'ok':
        res.accuracy_detail = f'{res.accuracy_detail}; {note}'
    elif note:
        res.reason = f'{res.reason}; {note}'
