# Copyright 2026 edge_infer contributors. Apache-2.0.
"""ROS-style lint: ament_flake8 over the package (as `colcon test` runs it)."""

import pathlib

from ament_flake8.main import main_with_errors
import pytest

PKG = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8():
    paths = [PKG / 'edge_infer', PKG / 'test', PKG / 'setup.py', PKG / 'launch']
    bench = PKG.parent / 'bench'        # the repository's benchmarks (absent once installed)
    if bench.is_dir():
        paths.append(bench)
    rc, errors = main_with_errors(argv=[str(p) for p in paths])
    assert rc == 0, f'Found {len(errors)} code style errors / warnings:\n' + '\n'.join(errors)
