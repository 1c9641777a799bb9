# Copyright 2026 edge_infer contributors. Apache-2.0.
"""One shared executor per process (the perception container's), reference-counted.

The first node that asks decides the policy; a node asking for another one
gets the running executor and a log line saying which policy is in force.
The last node to let go stops the workers (:class:`edge_infer.shared_resource.SharedResource`).
"""

from typing import Callable

from .core import SharedExecutor
from .devices import default_devices
from ..shared_resource import SharedResource


def _start(settings: dict, log: Callable[[str], None]) -> SharedExecutor:
    executor = SharedExecutor(settings['policy'], devices=default_devices(log), log=log)
    log(f'shared executor started: policy {executor.policy}, devices '
        + ', '.join(f'{d.name} ({d.role})' for d in executor.devices.values()))
    return executor


class ProcessExecutor:
    """One process's shared executor, counted (a process's runtime holds one)."""

    def __init__(self) -> None:
        self._resource: SharedResource[SharedExecutor] = SharedResource(
            'shared executor', _start, lambda executor: executor.close())

    def acquire(self, policy: str, log: Callable[[str], None] = print) -> SharedExecutor:
        """Return the running executor, starting it with ``policy`` if none runs."""
        return self._resource.acquire({'policy': policy}, log)

    def release(self) -> None:
        """Let go; the last user stops the workers."""
        self._resource.release()

    def users(self) -> int:
        """Return how many hold the executor now."""
        return self._resource.users()
