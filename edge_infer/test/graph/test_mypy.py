# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Static types: mypy over the package finds no error (configuration: setup.cfg [mypy]).

Annotations that disagree with the code (a None where a value is assumed, a
list where an array is passed) fail here rather than on a robot. mypy is a
test tool of the pinned set (requirements.txt); where it is not installed (a
robot that skipped it) the test is skipped with the reason.
"""

import pathlib

import pytest

PKG = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.linter
@pytest.mark.mypy
def test_mypy(tmp_path):
    try:
        from mypy import api
    except ImportError as e:
        pytest.skip(f'mypy is not installed ({e}); pip install -r requirements.txt has it')
    # a fresh cache: nothing is written into the source tree, no stale result is reused
    stdout, stderr, status = api.run([
        '--config-file', str(PKG / 'setup.cfg'), '--cache-dir', str(tmp_path / 'cache'),
        '--no-error-summary', '--show-error-codes', str(PKG / 'edge_infer')])
    errors = [line for line in stdout.splitlines() if ': error:' in line]
    assert status == 0 and not errors, (
        f'mypy found {len(errors)} error(s) (exit {status}):\n' + '\n'.join(errors) + stderr)
