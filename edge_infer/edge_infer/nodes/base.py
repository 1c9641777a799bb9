# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What every edge_infer lifecycle node shares: parameters, guarded transitions, diagnostics."""

from contextlib import contextmanager
import threading
import time
from typing import Callable, Dict, Optional, Tuple

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from lifecycle_msgs.srv import ChangeState
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
import rclpy.logging
from rclpy.parameter import Parameter
from rclpy.publisher import Publisher
from rclpy.time import Time
from rclpy.timer import Timer

# Process-wide objects (backend manager, power meter, shared executor) are
# created by whichever node comes first, but their lines are not that node's:
# they log through their runtime's SharedLog, under the node acting on this
# thread (see ManagedNode.acting()) or else under its logger (the container's
# node).
_acting = threading.local()


def emit(logger, line: str) -> None:
    """Log a line of the ROS-free core (lines starting 'WARNING ' as warnings)."""
    if line.startswith('WARNING '):
        logger.warning(line[len('WARNING '):])
    else:
        logger.info(line)


class SharedLog:
    """Where a process's shared objects log: its :class:`~..backends.runtime.Runtime`'s ``log``.

    A line goes under the node acting on this thread (:meth:`ManagedNode.acting`),
    else under ``logger`` (the container's node; None: the 'edge_infer' logger).
    """

    def __init__(self, logger=None) -> None:
        self.logger = logger

    def __call__(self, line: str) -> None:
        """Log a line of a process-wide object under the node it works for, if any."""
        node = getattr(_acting, 'node', None)
        if node is not None:
            logger = node.get_logger()
        else:
            logger = self.logger or rclpy.logging.get_logger('edge_infer')
        emit(logger, line)


class ManagedNode(LifecycleNode):
    """A lifecycle node that declares ``PARAMETERS`` and publishes its diagnostic status.

    Subclasses set ``PARAMETERS`` (name -> (default, description)) and
    implement :meth:`diagnostic_status`.
    """

    PARAMETERS: Dict[str, Tuple[object, str]] = {}
    failure = ''        # '<transition> failed: <reason>' until a transition succeeds

    def __init__(self, node_name: str, **kwargs):
        super().__init__(node_name, **kwargs)
        for name, (default, doc) in self.PARAMETERS.items():
            # an empty list says nothing of its type: declared a string array, unset
            self.declare_parameter(name, Parameter.Type.STRING_ARRAY if default == [] else
                                   default, ParameterDescriptor(description=doc))
        self._diag_pub: Optional[Publisher] = None
        self._diag_timer: Optional[Timer] = None
        self._guard_change_state()

    def destroy_node(self) -> None:
        """Destroy the node and its lifecycle state machine (which rclpy's own call leaves).

        The state machine (its transition publisher and services) holds the
        rcl node, and with the process's last node goes its Fast DDS
        participant, which unlinks its /dev/shm segments. Left alone, the
        container still held them when it exited (12 of 12 traced stops):
        they went only if Python's finalization collected the node objects.
        """
        super().destroy_node()
        machine = self._lifecycle_machine()
        if machine is not None:     # later when a call still uses it; a second call: no-op
            machine.destroy_when_not_in_use()

    def _lifecycle_machine(self):
        """Return rclpy's lifecycle state machine of this node (None if rclpy made none).

        The one place that reads LifecycleNode's private ``_state_machine``:
        rclpy (Jazzy, 7.1) has public ``trigger_*()`` transitions but no
        public getter for the current state or the transitions it offers,
        and no public way to destroy the state machine. Use
        :meth:`lifecycle_state` for the state.
        """
        return getattr(self, '_state_machine', None)

    def lifecycle_state(self) -> str:
        """Return the current lifecycle state's label ('unconfigured', 'active', ...)."""
        return self._lifecycle_machine().current_state[1]

    def _param(self, name: str):
        if self.PARAMETERS.get(name, (0,))[0] == [] and \
                self.get_parameter_or(name).type_ == Parameter.Type.NOT_SET:
            return []       # a string array never set
        return self.get_parameter(name).value

    def _log_line(self, line: str) -> None:
        """Log a line of the ROS-free core (lines starting 'WARNING ' as warnings)."""
        emit(self.get_logger(), line)

    @contextmanager
    def acting(self):
        """Within this block, process-wide objects on this thread log under this node."""
        previous = getattr(_acting, 'node', None)
        _acting.node = self
        try:
            yield self
        finally:
            _acting.node = previous

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
        service = next((s for s in self.services if s.srv_type is ChangeState), None)
        if service is None:     # no communication interface: no service to guard
            return
        handler = service.callback

        def guarded(request, response):
            # Refuse what the current state does not offer, by id or by label
            # (rclpy answers a bad label with success=False and no line of ours,
            # and lets the RCLError of a bad id escape), with one line.
            t = request.transition
            state = self.lifecycle_state()
            offered = [(tid, label) for tid, label, *_ in
                       self._lifecycle_machine().available_transitions]
            if not any((label == t.label) if t.label else (tid == t.id) for tid, label in offered):
                asked = f"'{t.label}'" if t.label else f'{t.id}'
                self.get_logger().error(
                    f"transition {asked} refused in state '{state}' (available: "
                    + ', '.join(f'{label} ({tid})' for tid, label in offered) + ')')
                response.success = False
                return response
            try:
                return handler(request, response)
            except Exception as exc:  # rclpy raises RCLError for invalid transitions
                self.get_logger().error(
                    f"transition {t.id} '{t.label}' refused in state '{state}': "
                    + (str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
                response.success = False
                return response
        service.callback = guarded

    # ------------------------------------------------------- guarded transitions
    def _transition(self, transition: str, step: Callable[[], None], undo: Callable[[], None],
                    known: tuple = ()) -> TransitionCallbackReturn:
        """Run a transition's ``step``; on any exception, :meth:`_transition_failed`.

        ``known``: exception types whose message is the reason by itself (a bug
        or a library error gets its type name in front: still one line, no crash).
        """
        try:
            step()
        except Exception as exc:
            reason = str(exc) if isinstance(exc, known) else f'{type(exc).__name__}: {exc}'
            return self._transition_failed(transition, reason, undo)
        self.failure = ''
        return TransitionCallbackReturn.SUCCESS

    def _transition_failed(self, transition: str, reason: str,
                           undo: Callable[[], None]) -> TransitionCallbackReturn:
        """Log one line, ``undo``, and publish ERROR with the reason until a transition succeeds.

        A node left unconfigured (a model name's typo) says why on /diagnostics,
        every ``diagnostics_period``, not only in its log.
        """
        self.get_logger().error(f'{transition} failed: {reason}')
        undo()
        self.failure = f'{transition} failed: {reason}'
        period = self._param('diagnostics_period') if 'diagnostics_period' in \
            self.PARAMETERS else -1.0
        self._start_diagnostics(period if period >= 0 else 1.0)     # < 0: the default's
        self._publish_diagnostics()
        return TransitionCallbackReturn.FAILURE

    def failure_status(self, st: DiagnosticStatus, **values) -> DiagnosticStatus:
        """Return ``st`` as ERROR with the failed transition's reason, the state and ``values``."""
        st.level, st.message = DiagnosticStatus.ERROR, self.failure
        st.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()] + \
            [KeyValue(key='state', value=self.lifecycle_state())]
        return st

    # ---------------------------------------------------------------- diagnostics
    def diagnostic_status(self) -> DiagnosticStatus:
        """Return this node's status for /diagnostics."""
        raise NotImplementedError

    def _start_diagnostics(self, period: Optional[float]) -> None:
        """Create the /diagnostics publisher and, for a period > 0, its timer."""
        if self._diag_pub is None:
            self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        if period and period > 0 and self._diag_timer is None:
            self._diag_timer = self.create_timer(
                period, self.quiet_at_shutdown(self._publish_diagnostics))

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

    def quiet_at_shutdown(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Wrap a timer's callback so that a shutdown mid-call is not reported.

        Ctrl-C shuts the context down from the signal handler, possibly while a
        timer's callback publishes: what fails then ("publisher's context is
        invalid") is the shutdown, not an error, and is not logged. Other
        errors are raised as before.
        """
        def run() -> None:
            if not self.context.ok():
                return
            try:
                callback()
            except Exception:
                if self.context.ok():
                    raise
        return run
