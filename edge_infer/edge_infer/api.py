# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The Python surface without ROS: a model on its measured backend, a tracker, depth.

What :mod:`edge_infer` names (``from edge_infer import open_model``) comes
from here and from the modules it points to; everything else is internal
and may move. docs/python_api.md shows them in use.
"""

import pathlib
from typing import Optional

from .backends.config import load_config
from .backends.manager import BackendManager, default_cache_dir
from .core.model import Model, model_file
from .core.registry import load_models, RegistryError


def open_model(name: str, objective: str = 'latency', backend: str = '',
               registry: Optional[pathlib.Path] = None,
               models_dir: Optional[pathlib.Path] = None,
               cache_dir: Optional[pathlib.Path] = None, log=print) -> Model:
    """Return the registry's model ``name`` on the backend measured best for ``objective``.

    The profile is the nodes' (the same cache: a model a node measured
    opens at once); ``backend`` forces one candidate (its name as the
    nodes' ``backend`` parameter takes it). ``registry``: a models.yaml
    (default: the package's, with ``edge_infer model add``'s entries over
    it). RegistryError for an unknown name; BackendError when no candidate
    runs the model (each one's reason in the message).
    """
    from . import paths
    specs = load_models(registry)
    if name not in specs:
        raise RegistryError(f"no model '{name}' in the registry "
                            f"(known: {', '.join(sorted(specs))})")
    spec = specs[name]
    folder = pathlib.Path(models_dir) if models_dir else paths.models_dir()
    path = model_file(spec, folder)     # missing or not the registry's file: said first
    manager = BackendManager(cache_dir or default_cache_dir(), config=load_config(), log=log)
    chosen, _ = manager.choose(spec, path, objective=objective, force=backend)
    return Model(spec, chosen, folder)
