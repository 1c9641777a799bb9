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

The executors are rclpy's EventsExecutor (``executor: events``, the
default; in Jazzy since rclpy 7.1.4, under ``rclpy.experimental``): it waits
and dispatches in C++, where the SingleThreadedExecutor rebuilds its wait set
in Python on every wake-up. Measured with bench/exp6_ros_pipeline.py
(MobileNetV2, 768x576 frames, one frame in flight): publish to the node's
callback 0.6-0.8 ms instead of 1.6 ms, the callback to the node's worker thread
0.1-0.2 ms instead of 0.95 ms (the Python executor held the GIL while it went
back to waiting). ``executor: single`` selects the SingleThreadedExecutor;
where rclpy has no EventsExecutor (Jazzy before 7.1.4) the container says so
in one line and uses it.
"""

import signal
import sys
import threading
import time
from typing import List

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.node import Node

from .base import set_shared_logger, shared_log
from .perception_node import PerceptionNode
from .telemetry_node import TelemetryNode
from .. import procs
from ..backends.manager import shared_manager
from ..host_budget import apply_budget


EXECUTORS = ('events', 'single')
WAIT_S = 120.0      # how long a shutdown waits for a callback still running


def check_executor_kind(kind: str) -> None:
    """Raise ValueError naming the ``executor`` parameter unless ``kind`` is one of EXECUTORS."""
    if kind not in EXECUTORS:
        raise ValueError(f"parameter 'executor' must be one of {', '.join(EXECUTORS)}: "
                         f"'{kind}'")


def new_executor(kind: str = 'events', context=None, log=None):
    """Return an executor of ``kind`` ('events' or 'single') on ``context``.

    'events' falls back to the SingleThreadedExecutor, with one ``log`` line,
    where this rclpy has no EventsExecutor.
    """
    check_executor_kind(kind)
    if kind == 'events':
        try:
            from rclpy.experimental import EventsExecutor
        except ImportError as exc:
            if log is not None:
                log(f'executor: events unavailable in this rclpy ({exc}); '
                    f'using the SingleThreadedExecutor')
        else:
            return EventsExecutor(context=context)
    return SingleThreadedExecutor(context=context)


class PerceptionContainer:
    """Creates and owns the perception nodes named by the ``nodes`` parameter."""

    def __init__(self, executor=None, name: str = 'perception_container',
                 executor_per_node: bool = False):
        """Create the nodes; add them to ``executor``, or each to its own (``executors``).

        ``executor=None``: one of the kind the ``executor`` parameter names.
        """
        self.node = Node(name)
        # process-wide objects (power meter, backend manager) log under the container
        set_shared_logger(self.node.get_logger())
        self.node.declare_parameter('nodes', ['detector', 'classifier', 'pose', 'segmenter'])
        self.node.declare_parameter('autostart', False)
        self.node.declare_parameter('telemetry', 'telemetry')
        self.node.declare_parameter('thread_budget', 0)
        self.node.declare_parameter('executor', 'events')
        kind = str(self.node.get_parameter('executor').value)
        check_executor_kind(kind)
        log = self.node.get_logger().warning
        if executor is None:
            executor = new_executor(kind, log=log)
        names: List[str] = list(self.node.get_parameter('nodes').value)
        telemetry = self.node.get_parameter('telemetry').value
        if len(set(names)) != len(names) or not all(names) or telemetry in names:
            raise ValueError(f"parameter 'nodes' must hold distinct non-empty names, other "
                             f"than the telemetry node's ('{telemetry}'): {names}")
        # the nodes' manager, capped at this process's share of the host's cores
        self.lease = apply_budget(shared_manager(log=shared_log), len(names),
                                  int(self.node.get_parameter('thread_budget').value),
                                  self.node.get_logger().info, log)
        self.telemetry = TelemetryNode(telemetry) if telemetry else None
        self.perception: List[PerceptionNode] = [PerceptionNode(n) for n in names]
        self.lifecycle_nodes = ([self.telemetry] if self.telemetry else []) + self.perception
        executor.add_node(self.node)
        self.executors = [executor]     # [the container node's, then one per node if asked]
        for n in self.lifecycle_nodes:
            if executor_per_node:
                self.executors.append(new_executor(kind, executor.context, log))
            self.executors[-1 if executor_per_node else 0].add_node(n)
        hosted = [n.get_name() for n in self.lifecycle_nodes]
        self.node.get_logger().info(f"hosting {len(hosted)} nodes: {', '.join(hosted)} "
                                    f'(executor: {type(self.executors[-1]).__name__})')
        if self.node.get_parameter('autostart').value:
            self.autostart()

    def autostart(self) -> None:
        """Configure and activate every node; a node that fails stays unconfigured.

        Ends with one line that says whether every node is active: launch files
        and tests wait for it (``autostart: all N nodes active``) instead of
        guessing how long choosing the backends takes.
        """
        active = []
        for n in self.lifecycle_nodes:
            if n.trigger_configure() == TransitionCallbackReturn.SUCCESS and \
                    n.trigger_activate() == TransitionCallbackReturn.SUCCESS:
                active.append(n.get_name())
        names = [n.get_name() for n in self.lifecycle_nodes]
        if len(active) == len(names):
            self.node.get_logger().info(
                f"autostart: all {len(names)} nodes active ({', '.join(names)})")
        else:
            self.node.get_logger().error(
                f'autostart: {len(active)} of {len(names)} nodes active; not active: '
                f"{', '.join(n for n in names if n not in active)} (see their lines above)")

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
        for n in self.perception:
            n.join_background()
        for n in reversed(self.lifecycle_nodes):
            try:
                n.trigger_shutdown()
            except Exception:  # already finalized or mid-transition
                pass
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


def _to_stderr(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError:     # the launcher that read our output is gone
        pass


class StopSignals:
    """SIGINT / SIGTERM handling of a ROS process: the first one stops it, later ones wait.

    A terminal's Ctrl-C reaches every process of the foreground group, and
    ``ros2 launch`` then sends its own SIGINT to each child: the container
    gets two, the second while it shuts down. Python's default handler raised
    ``KeyboardInterrupt`` wherever that second one landed (a thread join, an
    executor's shutdown), the process died with a traceback and exit code -2,
    and its Fast DDS shared memory stayed in /dev/shm. Installed before
    ``rclpy.init()``, this handler is the one rclpy's own signal handler
    (which shuts the ROS context down, so every spin loop ends) calls after
    it: it never raises. Later signals are counted and said once, and the
    shutdown already under way goes on to its end.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, log=None):
        """``log``: called once with a line when a second signal arrives (default stderr)."""
        self.count = 0
        self.log = log or _to_stderr
        self._previous = {}

    def install(self) -> 'StopSignals':
        """Handle SIGINT and SIGTERM in this (main) thread; return self."""
        for sig in self.SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def restore(self) -> None:
        """Put the handlers back as they were."""
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}

    def _handle(self, signum, frame) -> None:
        self.count += 1
        if self.count == 1:
            # rclpy's handler shut the context down already when it is installed
            # (rclpy.init's default); without it, do it here
            rclpy.try_shutdown()
        elif self.count == 2:
            self.log(f'{signal.Signals(signum).name} again: the shutdown already under way '
                     f'goes on (nodes released, then exit)')


def main(args=None) -> int:
    """Run the container until Ctrl-C, SIGTERM or an external shutdown; exit 0 after either."""
    stop = StopSignals().install()      # before rclpy.init: rclpy's handler chains to it
    procs.stop_with_parent()            # a killed `ros2 launch` leaves no orphan behind
    dds = procs.use_large_frame_profile()   # also when started by hand
    rclpy.init(args=args)
    container = None
    threads = []
    try:
        container = PerceptionContainer(executor_per_node=True)
        executor = container.executors[0]
        log_error = container.node.get_logger().error
        stop.log = container.node.get_logger().info
        container.node.get_logger().info(dds)
        threads = [_spin_thread(ex, log_error) for ex in container.executors[1:]]
        spin(executor, log_error)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except ValueError as exc:
        print(f'perception_container: {exc}', file=sys.stderr)
        return 2
    finally:
        if threads and container is not None:
            join_spinners(threads, WAIT_S, container.node.get_logger().warning)
        for ex in (container.executors if container is not None else []):
            ex.shutdown()
        if container is not None:   # waits for a callback still running (a long transition)
            container.shutdown()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
