# Copyright 2026 edge_infer contributors. Apache-2.0.
"""File checksums (sha256), used to pin every fetched and produced file."""

import hashlib
import pathlib


def sha256_file(path: pathlib.Path) -> str:
    """Return the hex sha256 of the file at ``path``."""
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            h.update(block)
    return h.hexdigest()
