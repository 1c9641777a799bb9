# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The shape of the code: files of one job each, and each naming its copyright."""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[3]     # the repository
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


def test_docs_layout_names_every_module_and_nothing_that_is_gone():
    """docs/layout.md is kept by hand: this keeps it from drifting from the tree."""
    import re
    doc = (ROOT / 'docs' / 'layout.md').read_text()
    modules = [p for p in PACKAGE.rglob('*.py') if p.name != '__init__.py']
    assert len(modules) > 100
    unnamed = sorted(str(p.relative_to(PACKAGE)) for p in modules
                     if not re.search(rf'\b{re.escape(p.stem)}\b', doc))
    assert unnamed == [], f'docs/layout.md does not name {unnamed}'
    packages = sorted(p.name for p in PACKAGE.rglob('*') if (p / '__init__.py').is_file())
    assert [d for d in packages if not re.search(rf'\b{d}/', doc)] == []
    tree = {p.name for d in (PACKAGE, ROOT / 'edge_infer' / 'test', ROOT / 'edge_infer' / 'launch',
                             ROOT / 'bench', ROOT / 'tools') for p in d.rglob('*.py')}
    named = set(re.findall(r'\b([a-z_0-9]+\.py)\b', doc))
    assert sorted(named - tree) == [], 'docs/layout.md names files that are gone'
