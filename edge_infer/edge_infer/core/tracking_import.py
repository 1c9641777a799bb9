# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The trackers library's three trackers imported without the rest of it (no ROS).

``import trackers`` runs the package's ``__init__``, which imports every
tracker it has, its dataset downloader (requests, rich), its video reader
and supervision's annotators; through those, all of ``scipy.optimize``
(scipy.sparse, scipy.linalg and scipy's own OpenBLAS) and
``scipy.interpolate``. ByteTrack, OC-SORT and SORT need only
``supervision.Detections``, ``supervision.box_iou_batch`` and
``scipy.optimize.linear_sum_assignment``. :func:`library` imports the three
tracker modules with the three packages' ``__init__`` skipped:

- ``trackers`` and ``supervision`` stand in as bare packages (their folders,
  no ``__init__`` run) while the tracker modules import; ``supervision``'s
  stand-in gets ``Detections`` and ``box_iou_batch`` from their own modules;
- ``scipy.optimize`` stands in as a module with ``linear_sum_assignment``
  only: scipy's own ``_lsap`` extension (the C function ``scipy.optimize``
  exports), loaded from its file, not entered in ``sys.modules``.

The stand-ins leave ``sys.modules`` once the tracker modules are in: a later
``import trackers`` / ``supervision`` / ``scipy.optimize`` anywhere in the
process gets the real package (reusing the modules imported here). A name
the stand-ins lack is looked up in the real package (imported then). A
package already imported is used as it is. Where any of this fails (another
version laid out otherwise), the library is imported whole, as before.
"""

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import threading
import types
from typing import Any, Dict, Tuple

#: The tracker classes: algorithm -> (module, class).
CLASSES = {
    'bytetrack': ('trackers.core.bytetrack.tracker', 'ByteTrackTracker'),
    'ocsort': ('trackers.core.ocsort.tracker', 'OCSORTTracker'),
    'sort': ('trackers.core.sort.tracker', 'SORTTracker'),
}
#: What the trackers take from supervision: name -> its module.
SUPERVISION = {
    'Detections': 'supervision.detection.core',
    'box_iou_batch': 'supervision.detection.utils.iou_and_nms',
}


# The stand-ins sit in sys.modules (the process's) while the tracker modules import:
# a second thread that came by then took a stand-in for the whole library (two
# nodes configured at once: "trackers (stand-in) has no ByteTrackTracker").
_IMPORTING = threading.Lock()


def _stand_in(name: str, path: Any = None) -> types.ModuleType:
    """Return a module named ``name`` whose missing names come from the real package."""
    mod = types.ModuleType(name)
    if path is not None:                # a package: its submodules import from its folder
        spec = importlib.util.find_spec(name)
        if spec is None or spec.submodule_search_locations is None:
            raise ImportError(f'{name} is not an installed package')
        mod.__spec__ = spec
        mod.__path__ = list(spec.submodule_search_locations)

    def real(attr: str) -> Any:
        if attr.startswith('__') or sys.modules.get(name) is mod:
            raise AttributeError(f'{name} (stand-in) has no {attr}')
        return getattr(importlib.import_module(name), attr)

    setattr(mod, '__getattr__', real)   # PEP 562: only for names the stand-in lacks
    return mod


def _assignment_only() -> types.ModuleType:
    """Return a ``scipy.optimize`` stand-in holding scipy's own linear_sum_assignment."""
    found = importlib.util.find_spec('scipy.optimize')
    if found is None or not found.submodule_search_locations:
        raise ImportError('scipy.optimize is not installed')
    folder = list(found.submodule_search_locations)[0]
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(folder, '_lsap' + suffix)
        spec = importlib.util.spec_from_file_location('scipy.optimize._lsap', path) \
            if os.path.exists(path) else None
        if spec is not None and spec.loader is not None:
            lsap = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(lsap)
            if sys.modules.get(spec.name) is lsap:     # (a single-phase extension enters it)
                del sys.modules[spec.name]
            break
    else:
        raise ImportError(f'no _lsap extension in {folder}')
    mod = _stand_in('scipy.optimize')
    setattr(mod, 'linear_sum_assignment', lsap.linear_sum_assignment)
    return mod


def _lean() -> Tuple[Dict[str, Any], Any]:
    """Import the tracker modules with the stand-ins in place; return (classes, Detections)."""
    put: Dict[str, types.ModuleType] = {}
    try:
        for name in ('trackers', 'supervision'):
            if name not in sys.modules:
                put[name] = sys.modules[name] = _stand_in(name, path=True)
        if 'scipy.optimize' not in sys.modules:
            put['scipy.optimize'] = sys.modules['scipy.optimize'] = _assignment_only()
        sv = sys.modules['supervision']
        if 'supervision' in put:
            for attr, module in SUPERVISION.items():
                setattr(sv, attr, getattr(importlib.import_module(module), attr))
        classes = {algo: getattr(importlib.import_module(module), cls)
                   for algo, (module, cls) in CLASSES.items()}
        return classes, sv.Detections
    finally:
        for name, mod in put.items():
            if sys.modules.get(name) is mod:
                del sys.modules[name]


def _whole() -> Tuple[Dict[str, Any], Any]:
    """Import the library as its ``__init__`` does: every module it has."""
    import supervision
    import trackers
    return ({algo: getattr(trackers, cls) for algo, (_, cls) in CLASSES.items()},
            supervision.Detections)


def library() -> Tuple[Dict[str, Any], Any]:
    """Return ({algorithm: tracker class}, supervision's Detections); ImportError if missing.

    A second call finds the modules imported (``sys.modules``): it costs microseconds.
    """
    with _IMPORTING:
        if 'trackers' in sys.modules:       # imported whole already (or marked missing: None)
            return _whole()
        try:
            return _lean()
        except (ImportError, AttributeError):
            return _whole()
