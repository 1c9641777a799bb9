#!/usr/bin/env python3
# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The package's shape, for a tree then and now: import links, circles, mypy debt, big files.

    ./run.sh exec python bench/product/code_shape.py [TREE ...]    # default: this checkout

Each TREE is a checkout's root (e.g. a `git worktree add /tmp/old <commit>`).
Prints, per tree: product modules and lines, the package's internal import
links (and how many sit inside functions), links between backends/ files
and between its parts, import circles, links from the runtime into the
set-up tools, mypy ``ignore_errors`` sections and files over 500 lines.
The walker (edge_infer/testing/import_walk.py) is the one test_import_graph.py
checks the rules with. Writes ``code_shape.csv`` (one row per tree) and
``code_shape.md`` (the trees side by side) through benchlib.
"""

import argparse
import ast
import configparser
import pathlib
from typing import Dict, Set

import benchlib
from edge_infer.testing import import_walk     # one walker: the rules' test's too

HERE = pathlib.Path(__file__).resolve().parents[2]     # the checkout


def _in_functions(path: pathlib.Path, known: Dict[str, pathlib.Path]) -> int:
    """Return how many of the package's imports in ``path`` sit inside a function."""
    count = 0
    for fn in ast.walk(ast.parse(path.read_text())):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and (node.level or (
                        node.module or '').startswith('edge_infer')):
                    count += 1
                elif isinstance(node, ast.Import) and any(
                        a.name.startswith('edge_infer') for a in node.names):
                    count += 1
    return count


def shape(tree: pathlib.Path) -> Dict[str, object]:
    """Return the figures of the checkout at ``tree``."""
    package = tree / 'edge_infer' / 'edge_infer'
    known = import_walk.modules(package)
    graph = import_walk.graph(package)
    product = {n: p for n, p in known.items() if '.testing' not in n}
    tools = ('edge_infer.tools', 'edge_infer.models', 'edge_infer.bag', 'edge_infer.armcheck')
    lines = {n: len(p.read_text().splitlines()) for n, p in product.items()}
    flat = 'edge_infer.backends.'

    def part(name: str) -> str:
        rest = name[len(flat):].split('.')
        return rest[0] if len(rest) > 1 else '(root)'
    in_backends = [(a, b) for a, deps in graph.items() for b in deps
                   if a.startswith(flat) and b.startswith(flat)]
    between_parts: Set[tuple] = {(part(a), part(b)) for a, b in in_backends
                                 if part(a) != part(b)}
    entry = ('edge_infer.cli', 'edge_infer.data')
    into_tools = sorted(f'{a} -> {b}' for a, deps in graph.items() for b in deps
                        if b.startswith(tools) and not a.startswith(tools + entry))
    cfg = configparser.ConfigParser()
    cfg.read(tree / 'edge_infer' / 'setup.cfg')
    ignored = [s for s in cfg.sections()
               if s.startswith('mypy-') and cfg[s].get('ignore_errors', '').lower() == 'true']
    return {
        'product modules': len(product),
        'product lines': sum(lines.values()),
        'of them set-up tools': sum(n for m, n in lines.items() if m.startswith(tools)),
        'internal import links': sum(len(v) for v in graph.values()),
        'imports inside functions': sum(_in_functions(p, known) for p in product.values()),
        'links between backends/ files': len(in_backends),
        'links between backends/ parts': len(between_parts),
        'import circles': len(import_walk.circles(graph)),
        'runtime -> tools links': len(into_tools),
        'mypy ignore_errors sections': len(ignored),
        'files over 500 lines': sum(1 for n in lines.values() if n > 500),
        'largest file': max(lines.items(), key=lambda kv: kv[1]),
    }


def main() -> None:
    """Print and save the figures of each tree side by side."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('trees', nargs='*', type=pathlib.Path, default=[HERE])
    benchlib.common_args(ap)
    args = ap.parse_args()
    res = benchlib.Results('code_shape', "The package's shape: import links, circles, mypy "
                           'debt, big files', '(product)', args.machine, args.out)
    results = [(t, shape(t.resolve())) for t in args.trees]
    print('| | ' + ' | '.join(str(t) for t, _ in results) + ' |')
    print('|---|' + '---|' * len(results))
    for key in results[0][1]:
        print(f'| {key} | ' + ' | '.join(str(r[key]) for _, r in results) + ' |')
    for t, r in results:
        res.add(tree=benchlib.shown_path(str(t)), **{k: str(v) if isinstance(v, tuple) else v
                                                     for k, v in r.items()})
    cols = [f'tree{i}' for i in range(len(results))]
    md_rows = [{'figure': key, **{c: str(r[key]) for c, (_, r) in zip(cols, results)}}
               for key in results[0][1]]
    res.note('product modules: edge_infer/edge_infer without testing/; set-up tools: tools, '
             'models, bag, armcheck')
    res.write(['figure'] + cols, [''] + [benchlib.shown_path(str(t)) for t, _ in results],
              md_rows=md_rows)


if __name__ == '__main__':
    main()
