# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Bring up edge_infer's graph (config/graph.yaml) on a robot with ROS 2.

    ros2 launch edge_infer perception.launch.py
    ros2 launch edge_infer perception.launch.py camera_topic:=/front/image_raw
        objective:=energy nodes:=detector namespace:=robot1 autostart:=false
    (one command line)

The processes, executables, parameters and remappings come from
edge_infer.graph.plan(), the same function `edge_infer bringup` uses, so the
two cannot drift apart. With autostart:=true (default) the container
configures and activates its lifecycle nodes itself and then logs
`autostart: all N nodes active`; with false they stay unconfigured for a
lifecycle manager (`ros2 lifecycle set /detector configure`, or `edge_infer
lifecycle`). The Fast DDS profile for camera-sized samples is exported unless
FASTRTPS_DEFAULT_PROFILES_FILE is already set.

Each process's params file is written to ``<data home>/launch/<process>-<hash
of its content>.yaml`` (ProcessPlan.stored_params): the same arguments reuse
the same file, so no launch, however it ends, leaves a folder behind. The
executables run with $EDGE_INFER_PYTHON, else
with the active virtual environment's python (README.md: the pip-only modules
live there), else with their own `#!` line (edge_infer.procs.launch_python).

Before anything starts, every argument and every parameter of the params
file is checked (edge_infer.validate): a bad one gets one line naming it and
the launch exits 1. Supervision (edge_infer.supervise, docs/robot.md): a
container that crashes is started again after ``respawn_delay`` (doubled for
each further crash in a row); after ``respawn_max`` crashes in a row, after
a bad parameter, or when not every node became active with
``keep_partial:=false``, the launch ends with one line and exit code 1, so
that systemd's ``Restart=on-failure`` (config/edge_infer.service) can tell
it from a requested stop (exit 0).
"""

import atexit
import os
import pathlib
import signal

from edge_infer import graph, paths, procs
from edge_infer.backends.remote_config import from_argument
from edge_infer.supervise import RespawnPolicy, Supervisor
from edge_infer.validate import check_arguments
from launch import LaunchDescription
from launch.actions import (DeclareLaunchArgument, EmitEvent, OpaqueFunction,
                            RegisterEventHandler, SetEnvironmentVariable, TimerAction)
from launch.event_handlers import OnProcessExit, OnProcessStart
from launch.events import Shutdown
from launch.logging import get_logger
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

ARGUMENTS = {
    'camera_topic': ('/camera/image_raw', 'camera topic (sensor_msgs/Image); '
                     '<topic>/compressed feeds the JPEG nodes'),
    'cameras': ('', 'comma-separated camera topics: every perception node serves them all with '
                "one session, each camera's results on ~/<camera>/... ('' = camera_topic "
                'alone; docs/ros_interface.md)'),
    'camera_names': ('', "comma-separated names of the cameras in their topics ('' = camera0, "
                     'camera1, ...)'),
    'objective': ('', 'backend objective of every perception node: latency | energy | edp '
                  "('' = the params file's)"),
    'executor_policy': ('-', "shared executor policy of every perception node ('-' = the "
                        "params file's, '' = off)"),
    'tracker': ('-', 'tracker of every node with boxes: bytetrack, ocsort, sort or none '
                "('-' = the params file's)"),
    'depth_topic': ('-', "aligned depth image for 3D on ~/vision/detections_3d ('' = off, "
                    "'-' = the params file's)"),
    'camera_info_topic': ('-', "the depth camera's CameraInfo ('' = beside depth_topic, "
                          "'-' = the params file's)"),
    'remote_servers': ('-', 'comma-separated Triton servers (grpc://host:port) of every '
                       "perception node ('' = none, '-' = the params file's; docs/triton.md)"),
    'nodes': ('', "comma-separated perception nodes to host ('' = the params file's)"),
    'namespace': ('', 'namespace of every node'),
    'params_file': ('', "params file ('' = the package's config/perception.yaml)"),
    'autostart': ('true', 'configure and activate the lifecycle nodes at start'),
    'keep_partial': ('true', 'autostart: when some node cannot be made active, run on with '
                     'the others (true) or end the launch with exit code 1 (false)'),
    'respawn': ('true', 'start a crashed container again (false: the launch ends, exit 1)'),
    'respawn_delay': ('0.2', 'seconds before the first restart; doubled for each further '
                      'crash in a row'),
    'respawn_max': ('5', 'crashes in a row (each within 10 s of its start) before the '
                    'launch gives up with exit code 1'),
}


class PerceptionDown(RuntimeError):
    """Perception is down for good: ros2 launch prints this line and exits 1."""


def _supervised(make_node, supervisor: Supervisor) -> list:
    """Return the actions that run ``make_node()``'s process under ``supervisor``."""
    log = get_logger('edge_infer.supervise')
    current = {}

    def start():
        current['action'] = make_node()
        return current['action']

    def on_start(event, context):
        if event.action is current.get('action'):
            supervisor.started()

    def on_exit(event, context):
        if event.action is not current.get('action'):
            return None
        decision = supervisor.exited(event.returncode, requested=context.is_shutdown)
        if decision.action == 'restart':
            log.warning(decision.line)
            return [TimerAction(period=decision.delay_s, actions=[start()])]
        if decision.action == 'stop':
            log.info(decision.line)
            return [EmitEvent(event=Shutdown(reason=decision.line))]
        if decision.action == 'give_up':
            raise PerceptionDown(decision.line)
        return None
    return [RegisterEventHandler(OnProcessStart(on_start=on_start)),
            RegisterEventHandler(OnProcessExit(on_exit=on_exit)), start()]


def _processes(context):
    def arg(name):
        return LaunchConfiguration(name).perform(context)
    checked = check_arguments({k: arg(k) for k in ARGUMENTS})
    policy = arg('executor_policy')
    node_params = {k: arg(k) for k in ('tracker', 'depth_topic', 'camera_info_topic')
                   if arg(k) != '-'}
    for key, param in (('cameras', 'image_topics'), ('camera_names', 'camera_names')):
        listed = [t.strip() for t in arg(key).split(',') if t.strip()]
        if listed:
            node_params[param] = listed
    servers = from_argument(arg('remote_servers'))
    if servers is not None:
        node_params['remote_servers'] = servers
    plans = graph.plan(camera_topic=arg('camera_topic'), objective=arg('objective'),
                       executor_policy=None if policy == '-' else policy,
                       node_params=node_params,
                       nodes=[n for n in arg('nodes').split(',') if n],
                       namespace=arg('namespace'),
                       params_file=pathlib.Path(arg('params_file')) if arg('params_file')
                       else None,
                       autostart=checked['autostart'], keep_partial=checked['keep_partial'])
    respawn = RespawnPolicy(enabled=checked['respawn'], delay_s=checked['respawn_delay'],
                            max_crashes=checked['respawn_max'])
    python = procs.launch_python()
    actions = []
    for p in plans:
        params = p.stored_params()
        extra = {'prefix': python} if python else {}

        # No `name=`: it would rename every node of the process.
        def make(p=p, params=params, extra=extra):
            return Node(package=p.package, executable=p.executable, namespace=p.namespace,
                        output='screen', emulate_tty=True, parameters=[str(params)],
                        remappings=list(p.remappings.items()),
                        # the container stops when this launch is gone, also when it
                        # went before the container could look (procs.stop_with_parent)
                        additional_env={procs.LAUNCH_PID_ENV: str(os.getpid())}, **extra)
        actions += _supervised(make, Supervisor(p.executable, respawn))
    return actions


def _ignore_late_stop_signals() -> None:
    """Ignore SIGINT and SIGTERM from here to the exit of ``ros2 launch``.

    Run at exit (atexit), once the launch has stopped everything: Python's
    finalisation puts the default handlers back, and a terminal's second
    Ctrl-C landing then killed ``ros2 launch`` itself (exit code -2, 1 of 2
    double-SIGINT stops in bench/product/launch_supervision.py) after a clean stop.
    """
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)


def generate_launch_description():
    """Return the launch description."""
    atexit.register(_ignore_late_stop_signals)
    actions = [DeclareLaunchArgument(k, default_value=v, description=d)
               for k, (v, d) in ARGUMENTS.items()]
    if 'FASTRTPS_DEFAULT_PROFILES_FILE' not in os.environ:
        actions.append(SetEnvironmentVariable('FASTRTPS_DEFAULT_PROFILES_FILE',
                                              str(paths.fastdds_profile())))
    actions.append(OpaqueFunction(function=_processes))
    return LaunchDescription(actions)
