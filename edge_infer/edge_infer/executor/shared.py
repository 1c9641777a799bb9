# Copyright 2026 edge_infer contributors. Apache-2.0.
"""One shared executor per process (the perception container's), reference-counted.

The first node that asks decides the policy; a node asking for another one
gets the running executor and a log line saying which policy is in force.
The last node to let go stops the workers.
"""

import threading
from typing import Callable, Optional

from .core import default_devices, SharedExecutor

_lock = threading.Lock()
_executor: Optional[SharedExecutor] = None
_users = 0


def acquire(policy: str, log: Callable[[str], None] = print) -> SharedExecutor:
    """Return the process's executor, starting it with ``policy`` if none runs."""
    global _executor, _users
    with _lock:
        if _executor is None:
            _executor = SharedExecutor(policy, devices=default_devices(log), log=log)
            log(f'shared executor started: policy {policy}, devices '
                + ', '.join(f'{d.name} ({d.role})' for d in _executor.devices.values()))
        elif policy != _executor.policy:
            log(f'WARNING shared executor already runs policy {_executor.policy}; '
                f'{policy} ignored for this node')
        _users += 1
        return _executor


def release() -> None:
    """Let go; the last user stops the workers."""
    global _executor, _users
    with _lock:
        if _users == 0:
            return
        _users -= 1
        if _users == 0 and _executor is not None:
            _executor.close()
            _executor = None


def users() -> int:
    """Return the number of holders (0: not running)."""
    with _lock:
        return _users
