# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The shape of the code: files of one job each, and each naming its copyright."""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]     # the repository
PACKAGE = ROOT / 'edge_infer' / 'edge_infer'
HEADER = '# Copyright 2026 edge_infer contributors. Apache-2.0.'
MAX_LINES = 500


def test_no_product_file_is_over_500_lines():
    """A file past ~500 lines is usually doing two jobs (split it, as backends/ did)."""
    files = sorted(PACKAGE.rglob('*.py'))
    assert len(files) > 100
    long = {str(f.relative_to(ROOT)): n for f in files
            if (n := len(f.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_every_python_file_names_its_copyright():
    """The package, its tests and launch files, the benchmarks and the CI scripts."""
    files = [f for where in ('edge_infer/edge_infer', 'edge_infer/test', 'edge_infer/launch',
                             'bench')
             for f in sorted((ROOT / where).rglob('*.py')) if f.stat().st_size]
    assert len(files) > 150
    missing = [str(f.relative_to(ROOT)) for f in files
               if HEADER not in f.read_text().splitlines()[:3]]
    assert missing == []
