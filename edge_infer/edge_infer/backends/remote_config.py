# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The remote servers' settings: one set of key names for backends.yaml and the node (no ROS).

``remote_servers`` (grpc://host:port), ``remote_timeout_ms``, ``remote_tls_ca``,
``remote_tls_cert``, ``remote_tls_key`` and ``remote_token`` mean the same in
config/backends.yaml and as perception node parameters. :func:`check_remote`
checks them (the node's check and :mod:`edge_infer.validate` call it);
:func:`apply_remote` puts a node's values over the manager's config: its
servers are added to the file's, and a value it sets replaces the file's.
"""

import pathlib
from typing import Any, Dict, List, Mapping, Optional

from .libs.triton import parse_url

KEYS = ('remote_servers', 'remote_timeout_ms', 'remote_tls_ca', 'remote_tls_cert',
        'remote_tls_key', 'remote_token')
FILES = ('remote_tls_ca', 'remote_tls_cert', 'remote_tls_key')


def servers(p: Mapping[str, Any]) -> List[str]:
    """Return the non-empty server URLs of ``p['remote_servers']`` ([''] is ROS's empty list)."""
    return [str(u) for u in (p.get('remote_servers') or ()) if u]


def from_argument(value: str) -> Optional[List[str]]:
    """Return the launch argument ``remote_servers`` as the parameter (None for '-').

    Comma-separated URLs; '' = none (ROS's empty string list: ['']).
    """
    if value.strip() == '-':
        return None
    return [u.strip() for u in value.split(',') if u.strip()] or ['']


def check_remote(p: Mapping[str, Any]) -> None:
    """Raise ValueError naming the first bad remote setting of ``p`` (present keys only)."""
    for url in servers(p):
        try:
            parse_url(url)
        except ValueError as exc:
            raise ValueError(f"parameter 'remote_servers': {exc}") from None
    if float(p.get('remote_timeout_ms', 0.0) or 0.0) < 0:
        raise ValueError(f"parameter 'remote_timeout_ms' is {p['remote_timeout_ms']!r}: use "
                         "0 (config/backends.yaml's) or more milliseconds")
    for key in FILES:
        if p.get(key) and not pathlib.Path(str(p[key])).is_file():
            raise ValueError(f"parameter '{key}' is {p[key]!r}: no such file")
    if bool(p.get('remote_tls_cert')) != bool(p.get('remote_tls_key')):
        raise ValueError("parameters 'remote_tls_cert' and 'remote_tls_key' go together: "
                         'set both (mutual TLS) or neither')


def apply_remote(config: Dict[str, Any], p: Mapping[str, Any]) -> List[str]:
    """Put a node's remote settings over the manager's ``config`` in place; return what changed.

    Servers are added (the file's stay: the manager is the process's, shared
    by its nodes; a server that lacks a node's model refuses it, with the
    reason); a timeout above 0 and a non-empty TLS file or token replace the
    file's.
    """
    changed = []
    have = list(config.get('remote_servers') or [])
    new = [u for u in servers(p) if u not in have]
    if new:
        config['remote_servers'] = have + new
        changed.append(f"remote_servers + {', '.join(new)}")
    for key in KEYS[1:]:
        value = p.get(key)
        if value and value != config.get(key):
            config[key] = float(value) if key == 'remote_timeout_ms' else str(value)
            changed.append(key if key == 'remote_token' else f'{key} = {config[key]}')
    return changed
