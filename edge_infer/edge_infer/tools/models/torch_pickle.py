# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Read PyTorch ``.pth`` checkpoints into numpy arrays, without PyTorch.

Both of ``torch.save``'s formats are understood:

- the zip format (PyTorch >= 1.6): ``<root>/data.pkl`` plus one file
  ``<root>/data/<key>`` per storage;
- the legacy format (before 1.6): five pickles one after the other (magic
  number, protocol version, system info, the object, the list of storage keys),
  then each storage as an int64 element count followed by its raw bytes.

Only what a state_dict needs is allowed through the unpickler: tensors
(``torch._utils._rebuild_tensor_v2`` / ``_rebuild_parameter``), typed storages,
``collections.OrderedDict`` and plain Python containers. Any other global
raises :class:`TorchPickleError` instead of being imported, so an untrusted
checkpoint cannot run code.
"""

from __future__ import annotations

import collections
import io
import os
import pickle
import struct
from typing import Any, BinaryIO, Callable, Dict, List, Optional, Tuple
import zipfile

import numpy as np

LEGACY_MAGIC = 0x1950a86a20f9469cfc6c
LEGACY_PROTOCOL = 1001

STORAGE_DTYPES: Dict[str, np.dtype] = {
    'DoubleStorage': np.dtype('<f8'),
    'FloatStorage': np.dtype('<f4'),
    'HalfStorage': np.dtype('<f2'),
    'LongStorage': np.dtype('<i8'),
    'IntStorage': np.dtype('<i4'),
    'ShortStorage': np.dtype('<i2'),
    'CharStorage': np.dtype('i1'),
    'ByteStorage': np.dtype('u1'),
    'BoolStorage': np.dtype('?'),
}

# torch.<dtype> objects as pickled inside newer (untyped-storage) checkpoints.
TORCH_DTYPES: Dict[str, np.dtype] = {
    'float64': np.dtype('<f8'), 'float32': np.dtype('<f4'), 'float16': np.dtype('<f2'),
    'int64': np.dtype('<i8'), 'int32': np.dtype('<i4'), 'int16': np.dtype('<i2'),
    'int8': np.dtype('i1'), 'uint8': np.dtype('u1'), 'bool': np.dtype('?'),
}


class TorchPickleError(ValueError):
    """The file is not a checkpoint this reader understands (or is not safe to read)."""


class _StorageType:
    """Stand-in for a ``torch.<X>Storage`` class: only carries the element dtype."""

    def __init__(self, name: str, dtype: Optional[np.dtype]):
        self.name = name
        self.dtype = dtype


class _Storage:
    """A storage whose bytes may arrive after the pickle (legacy format)."""

    def __init__(self, dtype: np.dtype, numel: int):
        self.dtype = dtype
        self.numel = numel
        self.data: Optional[np.ndarray] = None
        self.base: Optional[Tuple['_Storage', int]] = None  # (root, element offset)

    def array(self) -> np.ndarray:
        if self.base is not None:
            root, offset = self.base
            return root.array()[offset:offset + self.numel]
        if self.data is None:
            raise TorchPickleError('storage data missing from the checkpoint')
        return self.data


class _LazyTensor:
    """A tensor view (offset, size, stride) of a storage, materialised later."""

    def __init__(self, storage: _Storage, offset: int, size: Tuple[int, ...],
                 stride: Tuple[int, ...]):
        self.storage = storage
        self.offset = int(offset)
        self.size = tuple(int(s) for s in size)
        self.stride = tuple(int(s) for s in stride)

    def numpy(self) -> np.ndarray:
        flat = self.storage.array()
        if not self.size:
            return np.array(flat[self.offset])
        if 0 in self.size:
            return np.zeros(self.size, flat.dtype)
        last = self.offset + sum((n - 1) * s for n, s in zip(self.size, self.stride))
        if self.offset < 0 or last >= flat.size or min(self.stride) < 0:
            raise TorchPickleError(f'tensor view {self.size}/{self.stride} at {self.offset} '
                                   f'does not fit its storage of {flat.size} elements')
        item = flat.itemsize
        view = np.lib.stride_tricks.as_strided(
            flat[self.offset:], shape=self.size, strides=[s * item for s in self.stride],
            writeable=False)
        return np.ascontiguousarray(view).astype(flat.dtype.newbyteorder('='), copy=False)


def _rebuild_tensor_v2(storage: _Storage, storage_offset: int, size, stride,
                       requires_grad: bool = False, backward_hooks: Any = None,
                       metadata: Any = None) -> _LazyTensor:
    return _LazyTensor(storage, storage_offset, size, stride)


def _rebuild_tensor(storage: _Storage, storage_offset: int, size, stride) -> _LazyTensor:
    return _LazyTensor(storage, storage_offset, size, stride)


def _rebuild_parameter(data: _LazyTensor, requires_grad: bool = False,
                       backward_hooks: Any = None) -> _LazyTensor:
    return data


class _Unpickler(pickle.Unpickler):
    """Unpickler that maps torch globals to numpy stand-ins and refuses the rest."""

    _ALLOWED: Dict[Tuple[str, str], Any] = {
        ('collections', 'OrderedDict'): collections.OrderedDict,
        ('torch._utils', '_rebuild_tensor_v2'): _rebuild_tensor_v2,
        ('torch._utils', '_rebuild_tensor'): _rebuild_tensor,
        ('torch._utils', '_rebuild_parameter'): _rebuild_parameter,
        ('builtins', 'set'): set,
        ('builtins', 'frozenset'): frozenset,
        ('builtins', 'tuple'): tuple,
        ('builtins', 'list'): list,
        ('builtins', 'dict'): dict,
    }

    def __init__(self, file: BinaryIO, load_storage: Callable[[tuple], _Storage]):
        super().__init__(file, encoding='latin1')
        self._load_storage = load_storage

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self._ALLOWED:
            return self._ALLOWED[(module, name)]
        if module in ('torch', 'torch.storage', 'torch.cuda'):
            if name in STORAGE_DTYPES:
                return _StorageType(name, STORAGE_DTYPES[name])
            if name == 'UntypedStorage':
                return _StorageType(name, None)
            if name in TORCH_DTYPES:
                return TORCH_DTYPES[name]
        raise TorchPickleError(f'checkpoint needs {module}.{name}, which this reader '
                               'does not allow (only tensors and plain containers)')

    def persistent_load(self, pid: Any) -> Any:
        if not isinstance(pid, tuple) or not pid or pid[0] != 'storage':
            raise TorchPickleError(f'unknown persistent id {pid!r}')
        return self._load_storage(pid)


def _storage_dtype(storage_type: Any) -> np.dtype:
    if isinstance(storage_type, _StorageType) and storage_type.dtype is not None:
        return storage_type.dtype
    if isinstance(storage_type, np.dtype):  # newer files: (.., torch.float32 ..) dtype
        return storage_type
    raise TorchPickleError(f'unsupported storage type {storage_type!r}')


def _materialise(obj: Any) -> Any:
    if isinstance(obj, _LazyTensor):
        return obj.numpy()
    if isinstance(obj, dict):
        out = type(obj)() if isinstance(obj, collections.OrderedDict) else {}
        for k, v in obj.items():
            out[k] = _materialise(v)
        return out
    if isinstance(obj, list):
        return [_materialise(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_materialise(v) for v in obj)
    return obj


def _load_zip(zf: zipfile.ZipFile) -> Any:
    pkl = [n for n in zf.namelist() if n.endswith('data.pkl') and n.count('/') == 1]
    if len(pkl) != 1:
        raise TorchPickleError('zip checkpoint without a single <root>/data.pkl')
    root = pkl[0].rsplit('/', 1)[0]
    names = set(zf.namelist())
    order = f'{root}/byteorder'
    if order in names and zf.read(order).strip() != b'little':
        raise TorchPickleError('big-endian checkpoints are not supported')
    storages: Dict[str, _Storage] = {}

    def load(pid: tuple) -> _Storage:
        _, storage_type, key, _location, numel = pid[:5]
        key = str(key)
        if key not in storages:
            dtype = _storage_dtype(storage_type)
            raw = zf.read(f'{root}/data/{key}')
            if len(raw) % dtype.itemsize:
                raise TorchPickleError(f'storage {key}: {len(raw)} bytes is not a whole '
                                       f'number of {dtype} elements')
            arr = np.frombuffer(raw, dtype=dtype)
            st = _Storage(dtype, arr.size)
            st.data = arr
            storages[key] = st
        return storages[key]

    with zf.open(pkl[0]) as f:
        obj = _Unpickler(io.BytesIO(f.read()), load).load()
    return _materialise(obj)


def _load_legacy(f: BinaryIO) -> Any:
    def plain_load() -> Any:
        return _Unpickler(f, _no_storage).load()

    try:
        magic = plain_load()
    except Exception as exc:  # not a pickle at all
        raise TorchPickleError(f'not a PyTorch checkpoint: {exc}') from None
    if magic != LEGACY_MAGIC:
        raise TorchPickleError('not a PyTorch checkpoint (bad magic number)')
    protocol = plain_load()
    if protocol != LEGACY_PROTOCOL:
        raise TorchPickleError(f'unsupported legacy protocol version {protocol}')
    sys_info = plain_load()
    if isinstance(sys_info, dict) and not sys_info.get('little_endian', True):
        raise TorchPickleError('big-endian checkpoints are not supported')

    storages: Dict[str, _Storage] = {}

    def load(pid: tuple) -> _Storage:
        _, storage_type, key, _location, numel, view_metadata = (tuple(pid) + (None,))[:6]
        key = str(key)
        if key not in storages:
            storages[key] = _Storage(_storage_dtype(storage_type), int(numel))
        root = storages[key]
        if view_metadata is None:
            return root
        view_key, offset, view_size = view_metadata
        view_key = str(view_key)
        if view_key not in storages:
            view = _Storage(root.dtype, int(view_size))
            view.base = (root, int(offset))
            storages[view_key] = view
        return storages[view_key]

    obj = _Unpickler(f, load).load()
    keys: List[str] = [str(k) for k in plain_load()]
    for key in keys:
        st = storages.get(key)
        if st is None:
            raise TorchPickleError(f'storage {key} listed but never used')
        (numel,) = struct.unpack('<q', _read_exact(f, 8))
        raw = _read_exact(f, numel * st.dtype.itemsize)
        st.data = np.frombuffer(raw, dtype=st.dtype)
        st.numel = numel
    return _materialise(obj)


def _no_storage(pid: tuple) -> _Storage:
    raise TorchPickleError('unexpected storage reference in a header pickle')


def _read_exact(f: BinaryIO, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise TorchPickleError('checkpoint is truncated')
    return data


def load(source: 'os.PathLike[str] | str | bytes') -> Any:
    """Load a ``torch.save`` file (path or bytes) with tensors as numpy arrays.

    Returns the saved object: typically an (Ordered)dict of name -> ndarray.
    Raises :class:`TorchPickleError` for anything that is not a checkpoint or
    that needs classes other than tensors and plain containers.
    """
    if isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    else:
        with open(os.fspath(source), 'rb') as f:
            data = f.read()
    buf = io.BytesIO(data)
    if zipfile.is_zipfile(buf):
        buf.seek(0)
        with zipfile.ZipFile(buf) as zf:
            return _load_zip(zf)
    buf.seek(0)
    return _load_legacy(buf)


def load_state_dict(source: 'os.PathLike[str] | str | bytes') -> Dict[str, np.ndarray]:
    """Load a checkpoint holding a state_dict and return it as ``{name: ndarray}``.

    A checkpoint that wraps its weights (``{'state_dict': {...}}`` or
    ``{'model': {...}}``) is unwrapped.
    """
    obj = load(source)
    for wrapper in ('state_dict', 'model'):
        if isinstance(obj, dict) and isinstance(obj.get(wrapper), dict):
            obj = obj[wrapper]
    if not isinstance(obj, dict):
        raise TorchPickleError(f'checkpoint holds a {type(obj).__name__}, not a state_dict')
    out: Dict[str, np.ndarray] = {}
    for name, value in obj.items():
        if isinstance(value, np.ndarray):
            out[str(name)] = value
        elif isinstance(value, (int, float, bool)):
            out[str(name)] = np.asarray(value)
        else:
            raise TorchPickleError(f'state_dict entry {name!r} is a {type(value).__name__}')
    return out
