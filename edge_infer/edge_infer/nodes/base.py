# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What every edge_infer lifecycle node shares: parameters, guarded transitions, diagnostics."""

import time
from typing import Dict, Optional, Tuple

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.lifecycle import LifecycleNode
from rclpy.time import Time


class ManagedNode(LifecycleNode):
    """A lifecycle node that declares ``PARAMETERS`` and publishes its diagnostic status.

    Subclasses set ``PARAMETERS`` (name -> (default, description)) and
    implement :meth:`diagnostic_status`.
    """

    PARAMETERS: Dict[str, Tuple[object, str]] = {}

    def __init__(self, node_name: str, **kwargs):
        super().__init__(node_name, **kwargs)
        for name, (default, doc) in self.PARAMETERS.items():
            self.declare_parameter(name, default, ParameterDescriptor(description=doc))
        self._diag_pub = None
        self._diag_timer = None
        self._guard_change_state()

    def _param(self, name: str):
        return self.get_parameter(name).value

    def _log_line(self, line: str) -> None:
        """Log a line of the ROS-free core (lines starting 'WARNING ' as warnings)."""
        if line.startswith('WARNING '):
            self.get_logger().warning(line[len('WARNING '):])
        else:
            self.get_logger().info(line)

    def ros_time(self, t_monotonic: float):
        """Return the node clock's time (builtin_interfaces/Time) of a time.monotonic() instant."""
        now = self.get_clock().now().nanoseconds
        return Time(nanoseconds=now - int((time.monotonic() - t_monotonic) * 1e9)).to_msg()

    def _guard_change_state(self) -> None:
        """Answer an invalid transition request with success=False instead of crashing.

        rclpy 7's change_state service lets the RCLError of a transition that is
        invalid in the current state (e.g. deactivate while inactive) escape
        into the executor, which would take down every node of the container.
        """
        service = getattr(self, '_service_change_state', None)
        if service is None:
            return
        handler = service.callback

        def guarded(request, response):
            try:
                return handler(request, response)
            except Exception as exc:  # rclpy raises RCLError for invalid transitions
                state = self._state_machine.current_state[1]
                self.get_logger().error(
                    f'transition {request.transition.id} '
                    f"'{request.transition.label}' refused in state '{state}': "
                    + (str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
                response.success = False
                return response
        service.callback = guarded

    # ---------------------------------------------------------------- diagnostics
    def diagnostic_status(self) -> DiagnosticStatus:
        """Return this node's status for /diagnostics."""
        raise NotImplementedError

    def _start_diagnostics(self, period: Optional[float]) -> None:
        """Create the /diagnostics publisher and, for a period > 0, its timer."""
        if self._diag_pub is None:
            self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        if period and period > 0 and self._diag_timer is None:
            self._diag_timer = self.create_timer(period, self._publish_diagnostics)

    def _stop_diagnostics(self) -> None:
        if self._diag_timer is not None:
            self.destroy_timer(self._diag_timer)
            self._diag_timer = None
        if self._diag_pub is not None:
            self.destroy_publisher(self._diag_pub)
            self._diag_pub = None

    def _publish_diagnostics(self) -> None:
        if self._diag_pub is None:
            return
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.status = [self.diagnostic_status()]
        self._diag_pub.publish(msg)
