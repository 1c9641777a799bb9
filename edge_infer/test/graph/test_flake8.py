# Copyright 2026 edge_infer contributors. Apache-2.0.
"""ROS-style lint: ament_flake8 over the package (as `colcon test` runs it).

flake8 forks worker processes; in the test process other tests have left
threads (DDS, inference thread pools), and a fork there once hung the run
for good (children waiting for work that never came). So it runs in a
fresh interpreter of its own.
"""

import json
import pathlib
import subprocess
import sys

import pytest

PKG = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.flake8
@pytest.mark.linter
def test_flake8():
    paths = [PKG / 'edge_infer', PKG / 'test', PKG / 'setup.py', PKG / 'launch']
    bench = PKG.parent / 'bench'        # the repository's benchmarks (absent once installed)
    if bench.is_dir():
        paths.append(bench)
    code = ('import json, sys; from ament_flake8.main import main_with_errors; '
            'rc, errors = main_with_errors(argv=sys.argv[1:]); '
            'print(json.dumps([rc, errors]))')
    out = subprocess.run([sys.executable, '-c', code, *map(str, paths)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    rc, errors = json.loads(out.stdout.strip().splitlines()[-1])
    assert rc == 0, f'Found {len(errors)} code style errors / warnings:\n' + '\n'.join(errors)
