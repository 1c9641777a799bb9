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
"""

import os
import pathlib

from edge_infer import graph, paths, procs
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

ARGUMENTS = {
    'camera_topic': ('/camera/image_raw', 'camera topic (sensor_msgs/Image); '
                     '<topic>/compressed feeds the JPEG nodes'),
    'objective': ('', 'backend objective of every perception node: latency | energy | edp '
                  "('' = the params file's)"),
    'executor_policy': ('-', "shared executor policy of every perception node ('-' = the "
                        "params file's, '' = off)"),
    'nodes': ('', "comma-separated perception nodes to host ('' = the params file's)"),
    'namespace': ('', 'namespace of every node'),
    'params_file': ('', "params file ('' = the package's config/perception.yaml)"),
    'autostart': ('true', 'configure and activate the lifecycle nodes at start'),
}


def _processes(context):
    def arg(name):
        return LaunchConfiguration(name).perform(context)
    policy = arg('executor_policy')
    plans = graph.plan(camera_topic=arg('camera_topic'), objective=arg('objective'),
                       executor_policy=None if policy == '-' else policy,
                       nodes=[n for n in arg('nodes').split(',') if n],
                       namespace=arg('namespace'),
                       params_file=pathlib.Path(arg('params_file')) if arg('params_file')
                       else None,
                       autostart=arg('autostart').lower() in ('true', '1', 'yes'))
    python = procs.launch_python()
    actions = []
    for p in plans:
        params = p.stored_params()
        extra = {'prefix': python} if python else {}
        # No `name=`: it would rename every node of the process.
        actions.append(Node(package=p.package, executable=p.executable,
                            namespace=p.namespace, output='screen', emulate_tty=True,
                            parameters=[str(params)], remappings=list(p.remappings.items()),
                            **extra))
    return actions


def generate_launch_description():
    """Return the launch description."""
    actions = [DeclareLaunchArgument(k, default_value=v, description=d)
               for k, (v, d) in ARGUMENTS.items()]
    if 'FASTRTPS_DEFAULT_PROFILES_FILE' not in os.environ:
        actions.append(SetEnvironmentVariable('FASTRTPS_DEFAULT_PROFILES_FILE',
                                              str(paths.fastdds_profile())))
    actions.append(OpaqueFunction(function=_processes))
    return LaunchDescription(actions)
