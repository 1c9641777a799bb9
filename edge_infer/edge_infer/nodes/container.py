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
"""

import os
import sys
from typing import List

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.node import Node

from .perception_node import PerceptionNode
from .telemetry_node import TelemetryNode
from ..backends.manager import set_thread_budget


class PerceptionContainer:
    """Creates and owns the perception nodes named by the ``nodes`` parameter."""

    def __init__(self, executor, name: str = 'perception_container'):
        self.node = Node(name)
        self.node.declare_parameter('nodes', ['detector', 'classifier'])
        self.node.declare_parameter('autostart', False)
        self.node.declare_parameter('telemetry', 'telemetry')
        self.node.declare_parameter('thread_budget', 0)
        names: List[str] = list(self.node.get_parameter('nodes').value)
        telemetry = self.node.get_parameter('telemetry').value
        if len(set(names)) != len(names) or not all(names) or telemetry in names:
            raise ValueError(f"parameter 'nodes' must hold distinct non-empty names, other "
                             f"than the telemetry node's ('{telemetry}'): {names}")
        budget = int(self.node.get_parameter('thread_budget').value)
        cores = os.cpu_count() or 1
        if budget == 0 and len(names) > 1:
            budget = max(1, cores // len(names))
        if budget > 0:
            why = f'{len(names)} models share {cores} cores in this process'
            set_thread_budget(budget, why)
            self.node.get_logger().info(f'inference thread budget {budget} per model ({why})')
        self.telemetry = TelemetryNode(telemetry) if telemetry else None
        self.perception: List[PerceptionNode] = [PerceptionNode(n) for n in names]
        self.lifecycle_nodes = ([self.telemetry] if self.telemetry else []) + self.perception
        executor.add_node(self.node)
        for n in self.lifecycle_nodes:
            executor.add_node(n)
        hosted = [n.get_name() for n in self.lifecycle_nodes]
        self.node.get_logger().info(f"hosting {len(hosted)} nodes: {', '.join(hosted)}")
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

    def shutdown(self) -> None:
        """Shut every node down and destroy them."""
        for n in self.perception:
            n.join_background()
        for n in reversed(self.lifecycle_nodes):
            try:
                n.trigger_shutdown()
            except Exception:  # already finalized or mid-transition
                pass
            n.destroy_node()
        self.node.destroy_node()


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


def main(args=None) -> int:
    """Run the container until Ctrl-C or an external shutdown."""
    rclpy.init(args=args)
    executor = SingleThreadedExecutor()
    container = None
    try:
        container = PerceptionContainer(executor)
        spin(executor, container.node.get_logger().error)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except ValueError as exc:
        print(f'perception_container: {exc}', file=sys.stderr)
        return 2
    finally:
        if container is not None:
            container.shutdown()
        executor.shutdown()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
