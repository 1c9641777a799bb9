# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Drive lifecycle nodes from another process through lifecycle_msgs services.

What ``ros2 lifecycle set`` does, usable without ros2cli (not installable from
PyPI) and from tests, demos and the bring-up command.
"""

import time
from typing import Optional

from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetAvailableTransitions, GetState
import rclpy

# Transition labels. The ids are those from the primary state the label names
# first; 'shutdown' has one id per primary state (unconfigured 5, inactive 6,
# active 7), so the client looks the label up in the node's current state.
TRANSITIONS = {
    'configure': Transition.TRANSITION_CONFIGURE,
    'activate': Transition.TRANSITION_ACTIVATE,
    'deactivate': Transition.TRANSITION_DEACTIVATE,
    'cleanup': Transition.TRANSITION_CLEANUP,
    'shutdown': Transition.TRANSITION_UNCONFIGURED_SHUTDOWN,
}
# The state each transition ends in when it succeeds.
GOAL_STATES = {'configure': 'inactive', 'activate': 'active', 'deactivate': 'inactive',
               'cleanup': 'unconfigured', 'shutdown': 'finalized'}
# A query (get_state, get_available_transitions) is sent again after this long
# without an answer. A node restarted after a crash is the reason: the dead
# process's services stay in the graph until its participant's lease ends, so
# the service looks available, and a request sent before the new process's
# server matched is never answered (a restart under `edge_infer bringup` waited
# 4.4 s for it with a 5 s attempt). A query answers in milliseconds otherwise.
QUERY_ATTEMPT_S = 1.0


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

    def _call(self, srv_type, name: str, request, timeout: float, attempt_s: float = 5.0):
        """Call a service; re-send when an answer is lost (returns None on timeout).

        Under load, Fast DDS can drop a response sent before the server has
        matched the client's reply reader ("failed to send response"); the
        request then never completes, so each attempt is bounded.
        """
        client = self._client(srv_type, name)
        deadline = time.monotonic() + timeout
        if not client.wait_for_service(timeout_sec=timeout):
            raise LifecycleError(f'service {name} not available after {timeout:.0f} s')
        while time.monotonic() < deadline:
            future = client.call_async(request)
            until = min(deadline, time.monotonic() + attempt_s)
            while not future.done() and time.monotonic() < until:
                self._spin()
            if future.done():
                return future.result()
            client.remove_pending_request(future)
            if srv_type is ChangeState:
                return None          # the caller checks the state before re-sending
        return None

    def _spin(self) -> None:
        if self.executor is not None:
            self.executor.spin_once(timeout_sec=0.05)
        else:
            rclpy.spin_once(self.node, timeout_sec=0.05)

    def get_state(self, target: str, timeout: float = 10.0) -> str:
        """Return the label of ``target``'s current state (e.g. 'active')."""
        res = self._call(GetState, f'{target}/get_state', GetState.Request(), timeout,
                         QUERY_ATTEMPT_S)
        if res is None:
            raise LifecycleError(f'service {target}/get_state did not answer in {timeout:.0f} s')
        return res.current_state.label

    def available_transitions(self, target: str, timeout: float = 10.0) -> dict:
        """Return ``target``'s transitions from its current state: label -> id."""
        res = self._call(GetAvailableTransitions, f'{target}/get_available_transitions',
                         GetAvailableTransitions.Request(), timeout, QUERY_ATTEMPT_S)
        if res is None:
            raise LifecycleError(f'service {target}/get_available_transitions did not answer '
                                 f'in {timeout:.0f} s')
        return {t.transition.label: t.transition.id for t in res.available_transitions}

    def transition_id(self, target: str, transition: str, timeout: float = 10.0) -> int:
        """Return the id of ``transition`` in ``target``'s current state.

        What ``ros2 lifecycle set`` does: the label is looked up among the
        transitions available now, so 'shutdown' is the unconfigured, inactive
        or active shutdown as the state requires. A transition the state does
        not offer is refused here with the state and what it offers.
        """
        available = self.available_transitions(target, timeout)
        if transition in available:
            return available[transition]
        state = self.get_state(target, timeout)
        raise LifecycleError(f"{target}: no transition '{transition}' from state '{state}' "
                             f"(available: {', '.join(sorted(available)) or 'none'})")

    def change(self, target: str, transition: str, timeout: float = 30.0) -> None:
        """Trigger ``transition`` (configure, activate, ...) on ``target``."""
        if transition not in TRANSITIONS:
            raise LifecycleError(f"unknown transition '{transition}' "
                                 f"(one of {', '.join(TRANSITIONS)})")
        deadline = time.monotonic() + timeout
        req = ChangeState.Request()
        req.transition.id = self.transition_id(target, transition, timeout)
        while True:
            left = deadline - time.monotonic()
            res = self._call(ChangeState, f'{target}/change_state', req, max(left, 0.1))
            if res is not None:
                break
            # The answer was lost or late: did the transition happen?
            state = self.get_state(target, max(deadline - time.monotonic(), 1.0))
            if state == GOAL_STATES[transition]:
                return
            if time.monotonic() >= deadline:
                raise LifecycleError(f'service {target}/change_state did not answer in '
                                     f'{timeout:.0f} s (node is {state})')
        if not res.success:
            raise LifecycleError(f'{target}: transition {transition} failed '
                                 f"(see that node's log)")

    def bring_up(self, target: str, timeout: float = 30.0,
                 state: Optional[str] = None) -> None:
        """Configure then activate ``target`` from whatever state it is in."""
        state = state or self.get_state(target, timeout)
        if state == 'unconfigured':
            self.change(target, 'configure', timeout)
            state = 'inactive'
        if state == 'inactive':
            self.change(target, 'activate', timeout)
