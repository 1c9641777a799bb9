# Copyright 2026 edge_infer contributors. Apache-2.0.
"""fp16 and int8 variants of a model file, made once when a model is prepared, and cached.

``edge_infer prepare``, ``edge_infer model add`` and ``edge_infer variants``
make them (:mod:`.make`); the serving process only measures the files it
finds (``make_variants: false`` in config/backends.yaml): a robot's start
never quantizes, and a variant whose file is missing is an unavailable
candidate whose reason names the command. The backend manager runs them like
any other candidate (:class:`VariantBackend`); its accuracy check against the
fp32 model on real frames decides whether they may be chosen.

- ``fp16``: our own conversion with the ``onnx`` package (:mod:`.fp16`).
- ``int8`` (ONNX Runtime, QDQ) and ``int8-nncf`` (OpenVINO IR from NNCF):
  :mod:`.quantize`, calibrated on frames disjoint from the ones that judge
  them, in a child process.

Files are named ``<stem>.<kind>.<12 hex of the source sha256>[.<8 hex of the
calibration key>].c<converter version>.<onnx|xml>`` in the cache directory and
written atomically (temporary folder + ``os.replace``, the file itself last);
an existing one is returned as is.
"""

import os
import pathlib
import tempfile
from typing import Callable, Dict, List, Optional, Tuple

from .fp16 import to_fp16, VariantError
from ..libs.installed import dist_version
from ...checksums import sha256_kept
from ...core.backend import Backend, BackendError, first_line, Session

KINDS = ('fp16', 'int8', 'int8-nncf')
Log = Callable[[str], object]


def variant_kinds() -> Tuple[str, ...]:
    """Return the variant kinds make_variant knows: ('fp16', 'int8', 'int8-nncf')."""
    return KINDS


# ---------------------------------------------------------------------- fp16
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
    return pathlib.Path(cache_dir) / (f'{src.stem}.{kind}.{sha256_kept(src)[:12]}{extra}'
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
                onnx.save(to_fp16(model), tmp)
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
        self.batches = getattr(base, 'batches', False)
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
                     input_spec=None, batch: int = 1) -> Session:
        """Convert (cached) and open the variant on the base backend (arguments passed on)."""
        try:
            path = self.variant_path(model_path)
        except Exception as exc:  # VariantError or an onnx/ORT error during conversion
            raise BackendError(f'{self.name}: cannot make the {self.kind} variant: {exc}') \
                from None
        more = {'batch': batch} if batch > 1 else {}
        sess = self.base.open_session(path, strict=strict, input_spec=input_spec, **more)
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
