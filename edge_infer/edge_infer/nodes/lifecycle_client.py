# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Drive lifecycle nodes from another process through lifecycle_msgs services.

What ``ros2 lifecycle set`` does, usable without ros2cli (not installable from
PyPI) and from tests, demos and the bring-up command.
"""

import time
from typing import Optional

from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
import rclpy

TRANSITIONS = {
    'configure': Transition.TRANSITION_CONFIGURE,
    'activate': Transition.TRANSITION_ACTIVATE,
    'deactivate': Transition.TRANSITION_DEACTIVATE,
    'cleanup': Transition.TRANSITION_CLEANUP,
    'shutdown': Transition.TRANSITION_UNCONFIGURED_SHUTDOWN,
}


class LifecycleError(RuntimeError):
    """A lifecycle service is missing, timed out or refused the transition."""


class LifecycleClient:
    """Calls /<node>/change_state and /<node>/get_state from ``node``."""

    def __init__(self, node, executor=None):
        self.node = node
        self.executor = executor
        self._clients = {}

    def _client(self, srv_type, name: str):
        if name not in self._clients:
            self._clients[name] = self.node.create_client(srv_type, name)
        return self._clients[name]

    def _call(self, srv_type, name: str, request, timeout: float):
        client = self._client(srv_type, name)
        if not client.wait_for_service(timeout_sec=timeout):
            raise LifecycleError(f'service {name} not available after {timeout:.0f} s')
        future = client.call_async(request)
        deadline = time.monotonic() + timeout
        while not future.done() and time.monotonic() < deadline:
            if self.executor is not None:
                self.executor.spin_once(timeout_sec=0.05)
            else:
                rclpy.spin_once(self.node, timeout_sec=0.05)
        if not future.done():
            raise LifecycleError(f'service {name} did not answer in {timeout:.0f} s')
        return future.result()

    def get_state(self, target: str, timeout: float = 10.0) -> str:
        """Return the label of ``target``'s current state (e.g. 'active')."""
        res = self._call(GetState, f'{target}/get_state', GetState.Request(), timeout)
        return res.current_state.label

    def change(self, target: str, transition: str, timeout: float = 30.0) -> None:
        """Trigger ``transition`` (configure, activate, ...) on ``target``."""
        if transition not in TRANSITIONS:
            raise LifecycleError(f"unknown transition '{transition}' "
                                 f"(one of {', '.join(TRANSITIONS)})")
        req = ChangeState.Request()
        req.transition.id = TRANSITIONS[transition]
        res = self._call(ChangeState, f'{target}/change_state', req, timeout)
        if not res.success:
            raise LifecycleError(f'{target}: transition {transition} failed '
                                 f'(see that node\'s log)')

    def bring_up(self, target: str, timeout: float = 30.0,
                 state: Optional[str] = None) -> None:
        """Configure then activate ``target`` from whatever state it is in."""
        state = state or self.get_state(target, timeout)
        if state == 'unconfigured':
            self.change(target, 'configure', timeout)
            state = 'inactive'
        if state == 'inactive':
            self.change(target, 'activate', timeout)
