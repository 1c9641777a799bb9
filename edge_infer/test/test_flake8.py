# Copyright 2026 edge_infer contributors. Apache-2.0.
"""ROS-style lint: ament_flake8 over the package (as `colcon test` runs it)."""

import pathlib

from ament_flake8.main import main_with_errors
import pytest

PKG = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8():
    rc, errors = main_with_errors(argv=[str(PKG / 'edge_infer'), str(PKG / 'test'),
                                        str(PKG / 'setup.py'), str(PKG / 'launch')])
    assert rc == 0, f'Found {len(errors)} code style errors / warnings:\n' + '\n'.join(errors)
