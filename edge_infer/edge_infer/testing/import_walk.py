# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The package's import graph, walked from its source files (no import runs).

One definition for the rules' test (test/graph/test_import_graph.py) and for
bench/product/code_shape.py, which counts the same graph for any checkout. Every
``import`` counts, those inside functions too.
"""

import ast
import pathlib
from typing import Dict, List, Set


def modules(package: pathlib.Path) -> Dict[str, pathlib.Path]:
    """Return {dotted module name: file} of the package folder ``package``."""
    out = {}
    for path in package.rglob('*.py'):
        parts = list(path.relative_to(package.parent).with_suffix('').parts)
        if parts[-1] == '__init__':
            parts = parts[:-1]
        out['.'.join(parts)] = path
    return out


def imports(name: str, path: pathlib.Path, known: Dict[str, pathlib.Path]) -> Set[str]:
    """Return the package's modules that ``name`` imports, anywhere in its file."""
    package = name.split('.') if path.name == '__init__.py' else name.split('.')[:-1]
    found: Set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = '.'.join(base + ([node.module] if node.module else []))
            targets = [f'{module}.{a.name}' for a in node.names] + [module]
        else:
            continue
        for target in targets:
            while target not in known and '.' in target:
                target = target.rsplit('.', 1)[0]
            if target in known and target != name and not name.startswith(target + '.'):
                found.add(target)
    return found


def graph(package: pathlib.Path) -> Dict[str, Set[str]]:
    """Return {module: the package's modules it imports} for the folder ``package``."""
    known = modules(package)
    return {name: imports(name, path, known) for name, path in known.items()}


def circles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Return the strongly connected parts of more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    out: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(sorted(part))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out
