# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The Arm environment's preparation steps: each one's stamp, and the error a step raises.

A step (sysroot, qemu, wheels, hostpy) is done when its stamp's ``want``
matches what is wanted now; it then returns what it ``made`` last time.
"""

import json
import pathlib
import time
from typing import Optional

FORMAT = 1


class Unavailable(RuntimeError):
    """The aarch64 environment cannot be had on this machine (the message says why)."""


def _stamp_path(home: pathlib.Path, step: str) -> pathlib.Path:
    return home / 'stamps' / f'{step}.json'


def read_stamp(home: pathlib.Path, step: str) -> Optional[dict]:
    """Return the stamp of a step ({'want', 'made', 'at'}) or None."""
    try:
        return json.loads(_stamp_path(home, step).read_text())
    except (OSError, ValueError):
        return None


def done(home: pathlib.Path, step: str, want: dict) -> Optional[dict]:
    """Return what the step made when its stamp matches ``want``, else None."""
    stamp = read_stamp(home, step)
    if stamp and stamp.get('want') == want:
        return stamp.get('made', {})
    return None


def write_stamp(home: pathlib.Path, step: str, want: dict, made: dict) -> None:
    path = _stamp_path(home, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix('.tmp')
    tmp.write_text(json.dumps({'want': want, 'made': made, 'at': time.time()}, indent=1))
    tmp.replace(path)
