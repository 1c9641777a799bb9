# Copyright 2026 edge_infer contributors. Apache-2.0.
"""edge_infer: perception on the inference library measured best on this robot.

The public Python names (docs/python_api.md); anything else is internal.
They are imported on first use, so ``import edge_infer`` stays light (the
tools and nodes import this package first).

- :func:`open_model`: a registry model on its measured backend (``Model``).
- :class:`Frame`: an image for ``Model.infer`` (H x W x C uint8, its colour order).
- :func:`make_tracker`: ids across frames for a detector's boxes.
- :func:`locate`, :class:`Intrinsics`: each box's distance and 3-D position from depth.
- :func:`load_models`: the model registry (the package's and the user's).
"""

from importlib import import_module
from typing import Any

_PUBLIC = {
    'open_model': 'edge_infer.api',
    'Model': 'edge_infer.core.model',
    'Result': 'edge_infer.core.model',
    'Frame': 'edge_infer.core.image',
    'make_tracker': 'edge_infer.core.tracking',
    'locate': 'edge_infer.core.depth',
    'Intrinsics': 'edge_infer.core.depth',
    'load_models': 'edge_infer.core.registry',
    'BackendError': 'edge_infer.core.backend',
    'RegistryError': 'edge_infer.core.registry',
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    """Import a public name on first use (PEP 562)."""
    if name in _PUBLIC:
        return getattr(import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'edge_infer' has no attribute '{name}'")
