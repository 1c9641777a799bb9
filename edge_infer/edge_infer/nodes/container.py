# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The perception container: several lifecycle nodes in one process, one executor.

Usage (ROS 2 argument conventions)::

    perception_container --ros-args --params-file config/perception.yaml

The container's own node (``perception_container``) reads ``nodes``: the
names of the PerceptionNode instances to create; each of those reads its own
section of the params file. ``telemetry`` (a node name, '' for none) adds the
power/energy TelemetryNode; it is created first so that its settings decide
the process's shared power meter. With ``autostart: true`` the container
configures and activates its nodes itself (for use without a lifecycle
manager); otherwise a launch file or ``edge_infer lifecycle`` drives them.

Keeping the nodes in one process is what lets them share one inference
executor and hand tensors over without copies (rclpy has no intra-process
transport).

Each hosted node has its own single-threaded executor, spun by its own
thread (the container's node by the main thread): a node's callbacks (its
lifecycle services, subscription, timers) never overlap each other, as with
one executor, while a slow transition of one node (a backend choice, a
shutdown waiting for a background re-evaluation) leaves the other nodes
taking their frames. (One shared executor stalled every node for the length
of any node's transition; a MultiThreadedExecutor pool costs a hand-off per
callback.)

The executors are rclpy's EventsExecutor (``ros_executor: events``, the
default; in Jazzy since rclpy 7.1.4, under ``rclpy.experimental``): it waits
and dispatches in C++, where the SingleThreadedExecutor rebuilds its wait set
in Python on every wake-up. Measured with bench/papers/exp6_ros_pipeline.py
(MobileNetV2, 768x576 frames, one frame in flight): publish to the node's
callback 0.6-0.8 ms instead of 1.6 ms, the callback to the node's worker thread
0.1-0.2 ms instead of 0.95 ms (the Python executor held the GIL while it went
back to waiting). ``ros_executor: single`` selects the SingleThreadedExecutor;
where rclpy has no EventsExecutor (Jazzy before 7.1.4) the container says so
in one line and uses it.
"""

from concurrent.futures import as_completed, ThreadPoolExecutor
import sys
import threading
import time
from typing import Iterator, List

from rcl_interfaces.msg import ParameterDescriptor
import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.lifecycle import TransitionCallbackReturn
import rclpy.logging
from rclpy.node import Node
from rclpy.parameter import Parameter

from .base import SharedLog
from .container_params import check_ros_executor, PARAMETERS, RENAMED, renamed
from .perception_node import PerceptionNode
from .stopping import leave, StopSignals
from .telemetry_node import TelemetryNode
from .. import procs, shm
from ..backends.manager import shared_manager
from ..backends.measure.memory import cap_malloc_arenas, fix_mmap_threshold
from ..backends.runtime import Runtime
from ..host_budget import apply_budget
# exit codes the launch file's supervisor reads: not restarted; any other is a crash
from ..supervise import EXIT_BAD_PARAMETER, EXIT_PARTIAL


WAIT_S = 120.0      # how long a shutdown waits for a callback still running
STOP_WAIT_S = 1.0   # ... and for background work (a profile) after its cancel


def new_ros_executor(kind: str = 'events', context=None, log=None):
    """Return an rclpy executor of ``kind`` ('events' or 'single') on ``context``.

    'events' falls back to the SingleThreadedExecutor, with one ``log`` line,
    where this rclpy has no EventsExecutor.
    """
    check_ros_executor(kind)
    if kind == 'events':
        try:
            from rclpy.experimental import EventsExecutor
        except ImportError as exc:
            if log is not None:
                log(f'ros_executor: events unavailable in this rclpy ({exc}); '
                    f'using the SingleThreadedExecutor')
        else:
            return EventsExecutor(context=context)
    return SingleThreadedExecutor(context=context)


class PerceptionContainer:
    """Creates and owns the perception nodes named by the ``nodes`` parameter."""

    def __init__(self, executor=None, name: str = 'perception_container',
                 executor_per_node: bool = False):
        """Create the nodes; add them to ``executor``, or each to its own (``executors``).

        ``executor=None``: one of the kind the ``ros_executor`` parameter names.
        With ``autostart`` and one executor the nodes are brought up here; with
        ``executor_per_node`` the caller runs :meth:`autostart` and spins each
        node's executor as the node comes up (:func:`main`).
        """
        self.node = Node(name)
        for pname, (default, text) in PARAMETERS.items():
            self.node.declare_parameter(pname, default, ParameterDescriptor(description=text))
        log = self.node.get_logger().warning
        self._take_renamed(log)
        self.exit_code = 0      # EXIT_PARTIAL when autostart stops the process
        kind = str(self.node.get_parameter('ros_executor').value)
        check_ros_executor(kind)
        if executor is None:
            executor = new_ros_executor(kind, log=log)
        names: List[str] = list(self.node.get_parameter('nodes').value)
        telemetry = self.node.get_parameter('telemetry').value
        if len(set(names)) != len(names) or not all(names) or telemetry in names:
            raise ValueError(f"parameter 'nodes' must hold distinct non-empty names, other "
                             f"than the telemetry node's ('{telemetry}'): {names}")
        # what the hosted models share: the compute gate, the settle queues, ...; its
        # objects (power meter, backend manager) log under the container's node
        self.runtime = Runtime(SharedLog(self.node.get_logger()))
        self.runtime.gate.set_order(str(self.node.get_parameter('frame_order').value))
        # the nodes' manager, capped at this process's share of the host's cores
        self.lease = apply_budget(shared_manager(self.runtime, log=self.runtime.log), len(names),
                                  int(self.node.get_parameter('thread_budget').value),
                                  self.node.get_logger().info, log, gate=self.runtime.gate)
        self.telemetry = TelemetryNode(telemetry, runtime=self.runtime) \
            if telemetry else None
        self.perception: List[PerceptionNode] = [PerceptionNode(n, runtime=self.runtime)
                                                 for n in names]
        self.lifecycle_nodes = ([self.telemetry] if self.telemetry else []) + self.perception
        executor.add_node(self.node)
        self.executors = [executor]     # [the container node's, then one per node if asked]
        for n in self.lifecycle_nodes:
            if executor_per_node:
                self.executors.append(new_ros_executor(kind, executor.context, log))
            self.executors[-1 if executor_per_node else 0].add_node(n)
        hosted = [n.get_name() for n in self.lifecycle_nodes]
        self.node.get_logger().info(f"hosting {len(hosted)} nodes: {', '.join(hosted)} "
                                    f'(ros_executor: {type(self.executors[-1]).__name__})')
        if self.node.get_parameter('autostart').value and not executor_per_node:
            for _ in self.autostart():  # one executor: the nodes serve once the caller spins it
                pass

    def _take_renamed(self, warn) -> None:
        """Declare each deprecated name (RENAMED); one given sets its new name, with one line.

        A new name still at its default counts as not given: the old one then
        applies (edge_infer.validate, before a launch, also catches both given).
        """
        given = {}
        for old, new in RENAMED.items():
            empty = type(PARAMETERS[new][0])()
            self.node.declare_parameter(old, empty, ParameterDescriptor(
                description=f"deprecated: use '{new}'"))
            value = self.node.get_parameter(old).value
            if value != empty:
                given[old] = value
                if self.node.get_parameter(new).value != PARAMETERS[new][0]:
                    given[new] = self.node.get_parameter(new).value
        for name, value in renamed(given, warn).items():
            self.node.set_parameters([Parameter(name, value=value)])

    def executor_of(self, node):
        """Return the executor ``node`` was added to."""
        return next((ex for ex in self.executors[1:] if node in ex.get_nodes()),
                    self.executors[0])

    def autostart(self) -> Iterator[object]:
        """Configure and activate the nodes side by side (a thread each); yield each when done.

        A node that fails stays unconfigured. The caller may start serving a
        node as soon as it is yielded: the first detection then does not wait
        for the other nodes' configure (on a 2-core EPYC the four models'
        configure took 1.4-2.0 s, and every node waited for the last).

        Ends with one line that says whether every node is active: launch files
        and tests wait for it (``autostart: all N nodes active``) instead of
        guessing how long choosing the backends takes. When some are not, an
        ERROR line says which and whether the process runs on with the others
        (``keep_partial: true``) or stops with EXIT_PARTIAL. A stop requested
        meanwhile ends the start-up without either line.
        """
        active = []

        def bring_up(n) -> bool:
            if not self.node.context.ok():
                return False
            return n.trigger_configure() == TransitionCallbackReturn.SUCCESS and \
                n.trigger_activate() == TransitionCallbackReturn.SUCCESS
        with ThreadPoolExecutor(max_workers=len(self.lifecycle_nodes),
                                thread_name_prefix='autostart') as pool:
            started = {pool.submit(bring_up, n): n for n in self.lifecycle_nodes}
            for done in as_completed(started):
                if done.result():
                    active.append(started[done].get_name())
                yield started[done]
        if not self.node.context.ok():
            self.node.get_logger().info('autostart: stopped by a stop request')
            return
        names = [n.get_name() for n in self.lifecycle_nodes]
        if len(active) == len(names):
            self.node.get_logger().info(
                f"autostart: all {len(names)} nodes active ({', '.join(names)})")
            return
        keep = bool(self.node.get_parameter('keep_partial').value)
        self.exit_code = 0 if keep else EXIT_PARTIAL
        self.node.get_logger().error(
            f'autostart: {len(active)} of {len(names)} nodes active; not active: '
            f"{', '.join(n for n in names if n not in active)} (see their lines above); "
            + ('keep_partial true: running on with partial perception' if keep else
               f'keep_partial false: stopping (exit code {EXIT_PARTIAL})'))

    def shutdown(self, wait_s: float = WAIT_S) -> None:
        """Shut every node down and destroy them.

        Callbacks may still run on the executor's threads (a transition that was
        under way when Ctrl-C came): each node's callback group is taken first,
        so no callback of that node runs while it shuts down. That binds the
        SingleThreadedExecutor only: rclpy's EventsExecutor does not take
        callback groups (checked: a timer kept firing while its group was
        held), so with it the caller waits for the spinning threads first, as
        :func:`main` does.
        """
        deadline = time.monotonic() + wait_s
        for n in [self.node, *self.lifecycle_nodes]:
            group, entity = n.default_callback_group, next(iter(n.services), None)
            while entity is not None and not group.beginning_execution(entity):
                if time.monotonic() > deadline:
                    self.node.get_logger().warning(
                        f'{n.get_name()}: a callback still runs after {wait_s:.0f} s; '
                        f'shutting down anyway')
                    break
                time.sleep(0.01)
        for n in self.perception:      # all first: one may wait for another's profile
            n.cancel_background()
        # A measurement under way (one candidate's load and timing: 32 s for ncnn's
        # Vulkan on a software device) cannot be interrupted: the stop waits for the
        # background work STOP_WAIT_S in all, then goes on without it (the process
        # then leaves with os._exit: nodes/stopping.py).
        stop_by = time.monotonic() + STOP_WAIT_S
        left = []
        for n in self.perception:
            left += n.join_background(max(0.0, stop_by - time.monotonic()))
        if left:
            self.node.get_logger().info(
                f"stopping without waiting for {', '.join(left)} (inside a frame or one "
                f'measurement; each ends by itself and the process leaves without '
                f'finalizing it)')
        for n in reversed(self.lifecycle_nodes):
            try:
                n.trigger_shutdown()
            except Exception:  # the context is down (a signal), or mid-transition
                # A stop by signal shut the context down first, so the shutdown
                # transition cannot publish its event and on_shutdown never ran:
                # the sessions, the worker and the power meter's thread lived on
                # until the exit freed them (where a stop aborted, exit -6).
                try:
                    n.release_everything()
                except Exception as exc:  # a half-made node: the rest still goes
                    print(f'{n.get_name()}: release at stop failed: {exc}', file=sys.stderr)
            n.destroy_node()
        self.node.destroy_node()
        if self.lease is not None:     # the host's cores for the next process (exit does too)
            self.lease.release()


def spin(executor, log_error, context=None) -> None:
    """Run callbacks until the ROS context shuts down; one failing callback stops nothing.

    Ctrl-C shuts the context down from rclpy's signal handler, possibly while a
    callback is publishing: its ``RCLError`` ("publisher's context is invalid")
    is the shutdown, not a failure, so the loop ends quietly.
    """
    context = context or executor.context
    while context.ok():
        try:
            executor.spin_once(timeout_sec=0.5)
        except (KeyboardInterrupt, ExternalShutdownException):
            raise
        except Exception as exc:  # one bad callback must not stop every node
            if not context.ok():
                return
            log_error(f'callback failed: {type(exc).__name__}: {exc}')


def _spin_thread(executor, log_error) -> threading.Thread:
    """Start a thread that runs :func:`spin` on ``executor`` until the context ends."""
    def run():
        try:
            spin(executor, log_error)
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
    node = next(iter(executor.get_nodes()), None)
    th = threading.Thread(target=run, daemon=True,
                          name=f'{node.get_name() if node else "node"}-executor')
    th.start()
    return th


def join_spinners(threads, wait_s: float, warn) -> None:
    """Wait up to ``wait_s`` in all for the spinning threads to end (the context is down).

    Each ends after the callback it runs (a long transition). Waiting for the
    threads, not for the callback groups in PerceptionContainer.shutdown(), is
    what holds with the EventsExecutor too. One ``warn`` line per thread left.
    """
    deadline = time.monotonic() + wait_s
    for th in threads:
        th.join(timeout=max(0.0, deadline - time.monotonic()))
        if th.is_alive():
            warn(f'{th.name}: a callback still runs after {wait_s:g} s; shutting down anyway')


def main(args=None, stop=None) -> int:
    """Run the container until Ctrl-C, SIGTERM or an external shutdown; exit 0 after either.

    ``stop``: the StopSignals the executable installed before its imports
    (nodes/stopping.py). Exit codes: 0 a requested stop, EXIT_BAD_PARAMETER,
    EXIT_PARTIAL; anything else is a crash.
    """
    if stop is None:        # not through the executable, which did both first
        stop = StopSignals().install()  # before rclpy.init: rclpy's handler chains to it
        procs.stop_with_parent()        # a killed `ros2 launch` leaves no orphan behind
    cap_malloc_arenas()     # before the nodes' threads start (each kept what it freed)
    fix_mmap_threshold()    # large blocks handed back when freed, not kept in the heap
    dds = procs.use_container_profile()     # also when started by hand
    said = [dds]
    shm.clean(log=said.append)          # what a crash of an earlier run left in /dev/shm
    # A set younger than shm.MIN_AGE_S is left by that pass (its owner may be
    # creating it now); a container killed seconds after its start (launch's
    # respawn restarts it after 0.2 s) left one such, and nothing removed it.
    # Look once more when it is old enough to judge.
    again = threading.Timer(shm.MIN_AGE_S + 0.5, shm.clean, kwargs={
        'log': rclpy.logging.get_logger('perception_container').info})
    again.daemon = True
    again.start()
    rclpy.init(args=args)
    if stop.count:                      # a stop requested before rclpy.init: nothing to run
        rclpy.try_shutdown()
    container = None
    threads = []
    code = 0
    try:
        if not rclpy.ok():
            return 0
        container = PerceptionContainer(executor_per_node=True)
        executor = container.executors[0]
        log_error = container.node.get_logger().error
        stop.log = container.node.get_logger().info
        for line in said:
            container.node.get_logger().info(line)
        if container.node.get_parameter('autostart').value:
            # each node serves once its own turn is over, not after the last one's
            for n in container.autostart():
                threads.append(_spin_thread(container.executor_of(n), log_error))
        else:
            threads = [_spin_thread(ex, log_error) for ex in container.executors[1:]]
        code = container.exit_code
        if code:        # autostart stops the process: the spinning nodes stop with it
            rclpy.try_shutdown()
        else:
            spin(executor, log_error)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except ValueError as exc:
        print(f'perception_container: {exc}', file=sys.stderr)
        code = EXIT_BAD_PARAMETER
    except Exception:
        if rclpy.ok():
            raise
        # the stop request shut the context down while the nodes were being made
    finally:
        if threads and container is not None:
            join_spinners(threads, WAIT_S, container.node.get_logger().warning)
        for ex in (container.executors if container is not None else []):
            try:
                ex.shutdown()
            except Exception as exc:    # its callbacks stay registered: see leave()
                stop.unfreeable.append(ex)
                print(f'perception_container: an executor did not shut down '
                      f'({type(exc).__name__}: {exc}); leaving without freeing it',
                      file=sys.stderr)
        if container is not None:   # waits for a callback still running (a long transition)
            container.shutdown()
        # What a crash just before this start left, too young for the passes
        # at the start, goes now: a restart stopped within seconds left it
        # (the robot stage's kill -9 launch test, 1 run in 4).
        again.cancel()
        shm.clean(log=rclpy.logging.get_logger('perception_container').info)
        rclpy.try_shutdown()
        stop.ignore_rest()          # Python's exit puts the default handlers back
    return code


if __name__ == '__main__':
    sys.exit(leave(main()))
