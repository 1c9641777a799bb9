# Copyright 2026 edge_infer contributors. Apache-2.0.
"""ROS-style lint: ament_pep257 docstring conventions."""

import pathlib

from ament_pep257.main import main
import pytest

PKG = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257():
    # ament's default wants the summary on the docstring's second line (D213);
    # this package keeps PEP 257's own layout (summary on the first line).
    rc = main(argv=[str(PKG / 'edge_infer'), str(PKG / 'test'), str(PKG / 'launch'),
                    '--add-ignore', 'D213'])
    assert rc == 0, 'Found code style errors / warnings'
