# Copyright 2026 edge_infer contributors. Apache-2.0.
"""ament_python package of edge_infer (also pip-installable without ROS)."""

from glob import glob
import os

from setuptools import find_packages, setup

package_name = 'edge_infer'


def share_tree(folder):
    """Return data_files entries installing every file under ``folder`` to share/<package>."""
    by_dir = {}
    for path in sorted(glob(os.path.join(folder, '**', '*'), recursive=True)):
        if os.path.isfile(path) and '__pycache__' not in path:
            by_dir.setdefault(os.path.join('share', package_name, os.path.dirname(path)),
                              []).append(path)
    return list(by_dir.items())


# edge_infer.testing: the tests' and benchmarks' helpers (simulated clock, load
# generators, launch helpers), which the package never imports. They are not
# installed; the tests import them from the source tree, as they import the
# package itself: with ./run.sh's editable install, and under `colcon test`, which
# runs `python -m pytest` in this folder (its edge_infer/ comes first on sys.path).
NOT_INSTALLED = ['edge_infer.testing', 'edge_infer.testing.*']

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', *NOT_INSTALLED]),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml', 'pip-requirements.txt']),
        *share_tree('launch'),
        *share_tree('config'),      # every file: executor_profiles/, labels/, ...
        *share_tree('systemd'),     # edge_infer.service (README: run it as a service)
    ],
    install_requires=['setuptools'],
    extras_require={'test': ['pytest']},
    zip_safe=True,
    maintainer='edge_infer contributors',
    maintainer_email='dev@edge-infer.invalid',
    description='Measured per-model inference backend choice for ROS 2 perception.',
    license='Apache-2.0',
    tests_require=['pytest'],
    entry_points={
        'console_scripts': [
            'edge_infer = edge_infer.cli:main',
            'perception_container = edge_infer.nodes.container_entry:container_main',
            'bag_play = edge_infer.tools.bag.play:main',
            'bag_record = edge_infer.tools.bag.record:main',
        ],
    },
)
