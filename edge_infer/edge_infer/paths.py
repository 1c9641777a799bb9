# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Where edge_infer finds its configuration and keeps its data.

- Configuration (model registry, node parameters, labels) ships with the
  package: ``share/edge_infer/config`` after ``colcon build``, or the source
  tree's ``edge_infer/config`` in a development (editable) install;
  ``$EDGE_INFER_CONFIG`` names it for a process that has neither (the
  aarch64 worker of ``edge_infer arm-check`` runs an installed package's
  sources in an emulated Python with no ament index).
- Data made at set-up time (converted models, recorded bags, caches) lives in
  ``$EDGE_INFER_HOME`` (default ``~/.cache/edge_infer``); ``run.sh`` points it
  at the clone's ``.data/``.
"""

import os
import pathlib

_SRC_CONFIG = pathlib.Path(__file__).resolve().parents[1] / 'config'


def config_dir() -> pathlib.Path:
    """Return the directory holding models.yaml, the params files and labels."""
    env = os.environ.get('EDGE_INFER_CONFIG')
    if env:
        return pathlib.Path(env)
    if _SRC_CONFIG.is_dir():
        return _SRC_CONFIG
    try:
        from ament_index_python.packages import get_package_share_directory
        return pathlib.Path(get_package_share_directory('edge_infer')) / 'config'
    except Exception as exc:  # ament index missing or package not installed there
        raise FileNotFoundError(
            f'edge_infer config not found next to the sources ({_SRC_CONFIG}) '
            f'nor in the ament index: {exc}') from exc


def fastdds_profile() -> pathlib.Path:
    """Return the Fast DDS profile that carries camera-sized samples (see the file)."""
    return config_dir() / 'fastdds_large_frames.xml'


def fastdds_container_profile() -> pathlib.Path:
    """Return the perception container's Fast DDS profile: frames in, results out."""
    return config_dir() / 'fastdds_container.xml'


def data_home() -> pathlib.Path:
    """Return the root of edge_infer's data (models, bags, caches)."""
    env = os.environ.get('EDGE_INFER_HOME')
    return pathlib.Path(env) if env else pathlib.Path.home() / '.cache' / 'edge_infer'


def models_dir() -> pathlib.Path:
    """Return the directory of converted model files."""
    return data_home() / 'models'


def bags_dir() -> pathlib.Path:
    """Return the directory of recorded bags."""
    return data_home() / 'bags'


def cache_dir() -> pathlib.Path:
    """Return the download cache (source packages of models and footage)."""
    return data_home() / 'cache'


def command() -> str:
    """Return how the ``edge_infer`` tool is run here, for hints: on PATH, or ``ros2 run``.

    ``colcon build`` installs ament_python scripts to ``lib/edge_infer``, not on
    PATH: on a robot the tool is ``ros2 run edge_infer edge_infer``.
    """
    import shutil
    return 'edge_infer' if shutil.which('edge_infer') else 'ros2 run edge_infer edge_infer'
