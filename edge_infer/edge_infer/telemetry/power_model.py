# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Per-board CPU power models for the estimator, and the board fingerprint that picks one.

The models live in ``config/power_models.yaml`` (documented there). A model
turns per-CPU utilisation into watts::

    power_w = idle_w + sum_i util_i * per_core_active_w[i], clamped to [idle_w, max_w]

It is a rough model (figures are order-of-magnitude public numbers), used
only where no sensor exists, and always published as ``estimated`` with its
stated ``uncertainty``.
"""

from dataclasses import dataclass, field
import math
import os
import pathlib
from typing import Dict, List, Optional, Sequence, Tuple, Union

from edge_infer import paths
import yaml

DEFAULT_MODEL = 'default'

# Used when the YAML file cannot be read at all (the estimator must still work).
_BUILTIN_DEFAULT = {
    'description': 'built-in fallback (power_models.yaml not readable)',
    'match': [], 'idle_w': 8.0, 'per_core_active_w': 3.0, 'max_w': 40.0,
    'uncertainty': 0.5, 'source': 'same figures as the default entry of power_models.yaml',
}


@dataclass
class PowerModel:
    """Linear CPU-utilisation power model of one board."""

    name: str
    idle_w: float
    per_core_active_w: Union[float, List[float]]
    max_w: Optional[float] = None
    uncertainty: float = 0.3
    description: str = ''
    match: List[str] = field(default_factory=list)
    source: str = ''

    def core_w(self, cpu: int) -> float:
        """Return the extra watts of CPU number ``cpu`` when 100 % busy."""
        w = self.per_core_active_w
        if isinstance(w, (list, tuple)):
            if not w:
                return 0.0
            return float(w[cpu] if cpu < len(w) else w[-1])
        return float(w)

    def watts(self, utils: Sequence[float]) -> float:
        """Return the modelled board power for per-CPU utilisations (fractions 0..1)."""
        p = float(self.idle_w)
        for i, u in enumerate(utils):
            u = float(u)
            if math.isnan(u):
                continue
            p += min(1.0, max(0.0, u)) * self.core_w(i)
        if self.max_w is not None:
            p = min(p, float(self.max_w))
        return max(p, float(self.idle_w))

    def max_for(self, n_cpus: int) -> float:
        """Return the highest power the model can give on ``n_cpus`` CPUs."""
        return self.watts([1.0] * n_cpus)


def model_from_dict(name: str, d: dict) -> PowerModel:
    """Build a model from a YAML entry; raise ValueError naming the bad field."""
    try:
        idle = float(d['idle_w'])
        per = d['per_core_active_w']
        per = [float(x) for x in per] if isinstance(per, (list, tuple)) else float(per)
        max_w = d.get('max_w')
        return PowerModel(
            name=name, idle_w=idle, per_core_active_w=per,
            max_w=None if max_w is None else float(max_w),
            uncertainty=float(d.get('uncertainty', 0.3)),
            description=str(d.get('description', '')),
            match=[str(m) for m in (d.get('match') or [])],
            source=str(d.get('source', '')))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f'power model {name!r}: bad or missing field: {exc}') from exc


def default_models_path() -> pathlib.Path:
    """Return the path of the shipped power_models.yaml."""
    return paths.config_dir() / 'power_models.yaml'


def load_power_models(path: Optional[Union[str, os.PathLike]] = None) -> Dict[str, PowerModel]:
    """Load the models (file order kept); always contains a ``default`` entry."""
    data = yaml.safe_load(pathlib.Path(path or default_models_path()).read_text()) or {}
    models = {str(k): model_from_dict(str(k), v or {})
              for k, v in (data.get('models') or {}).items()}
    if DEFAULT_MODEL not in models:
        models[DEFAULT_MODEL] = model_from_dict(DEFAULT_MODEL, _BUILTIN_DEFAULT)
    return models


def builtin_default_model() -> PowerModel:
    """Return the fallback model used when the YAML cannot be read."""
    return model_from_dict(DEFAULT_MODEL, _BUILTIN_DEFAULT)


def read_board_name(root: str = '/') -> str:
    """Return the board name from the device tree (ARM) or DMI (x86), or '' if neither."""
    for rel in ('proc/device-tree/model', 'sys/firmware/devicetree/base/model',
                'sys/devices/virtual/dmi/id/product_name'):
        try:
            with open(os.path.join(root, rel), 'rb') as f:
                name = f.read().replace(b'\x00', b' ').decode('utf-8', 'replace').strip()
        except OSError:
            continue
        if name:
            return name
    return ''


def board_power_model(root: str = '/',
                      models: Optional[Dict[str, PowerModel]] = None) -> Tuple[str, str]:
    """Return ``(power model key, board name)``: the first model whose ``match`` fits the board.

    The board name is what :func:`read_board_name` finds ('' if nothing);
    the key is DEFAULT_MODEL where no model matches it. (The profile cache's
    ``board_fingerprint``, in backends/measure/cache.py, is another thing:
    the dict that keys measured profiles.)
    """
    if models is None:
        try:
            models = load_power_models()
        except (OSError, ValueError, yaml.YAMLError):
            models = {DEFAULT_MODEL: builtin_default_model()}
    board = read_board_name(root)
    low = board.lower()
    for key, model in models.items():
        if low and any(m.lower() in low for m in model.match if m):
            return key, board
    return DEFAULT_MODEL, board
