# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Bring up the perception container (detector + classifier) on a robot with ROS 2.

    ros2 launch edge_infer perception.launch.py
    ros2 launch edge_infer perception.launch.py camera_topic:=/front/image_raw \
        namespace:=robot1 autostart:=false

All nodes live in one process (so they can share the inference executor);
with autostart:=true the container configures and activates them itself,
otherwise drive them with `ros2 lifecycle set /detector configure` etc.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    """Return the launch description."""
    camera = LaunchConfiguration('camera_topic')
    return LaunchDescription([
        DeclareLaunchArgument(
            'params_file',
            default_value=PathJoinSubstitution(
                [FindPackageShare('edge_infer'), 'config', 'perception.yaml']),
            description='parameters of the container and its nodes'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='namespace of every node'),
        DeclareLaunchArgument('camera_topic', default_value='/camera/image_raw',
                              description='camera topic (sensor_msgs/Image); '
                                          '<topic>/compressed for the JPEG stream'),
        DeclareLaunchArgument('autostart', default_value='true',
                              description='configure and activate the nodes at start'),
        # No `name=`: it would rename every node of the process.
        Node(package='edge_infer', executable='perception_container',
             namespace=LaunchConfiguration('namespace'), output='screen', emulate_tty=True,
             parameters=[LaunchConfiguration('params_file'),
                         {'autostart': ParameterValue(LaunchConfiguration('autostart'),
                                                      value_type=bool)}],
             remappings=[('/camera/image_raw', camera),
                         ('/camera/image_raw/compressed', [camera, '/compressed'])]),
    ])
