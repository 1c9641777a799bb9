# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The package's import graph: no circles, the parameter checks without ROS nodes, tools apart.

Every ``import`` of the package counts, those inside functions too: an
import moved into a function to dodge a circle is still a circle (graph.py
and validate.py were one, nodes/container.py and nodes/stopping.py another).
"""

import pathlib
from typing import Dict, List, Set

from edge_infer.testing import import_walk

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / 'edge_infer'


def _modules() -> Dict[str, pathlib.Path]:
    return import_walk.modules(PACKAGE)


def _graph() -> Dict[str, Set[str]]:
    return import_walk.graph(PACKAGE)


def test_the_package_has_no_import_circle():
    graph = _graph()
    assert len(graph) > 100 and sum(map(len, graph.values())) > 200   # the walk found them
    assert import_walk.circles(graph) == []
    # the check itself: a circle made on purpose is found
    assert import_walk.circles({**graph, 'edge_infer.paths': graph['edge_infer.paths'] | {
        'edge_infer.graph'}}) != []


def test_checking_parameters_imports_no_ros_node():
    """Check parameters from the tables (nodes/*_params.py), never from a node module."""
    graph = _graph()
    seen, todo = set(), ['edge_infer.validate']
    while todo:
        for target in graph[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    modules = _modules()
    with_nodes = sorted(m for m in seen if any(
        f'from rclpy.{what} import' in modules[m].read_text()
        for what in ('node', 'lifecycle')))
    assert with_nodes == []
    assert {'edge_infer.nodes.container_params', 'edge_infer.nodes.perception_params',
            'edge_infer.nodes.telemetry_params'} <= seen


# backends/ in four parts; imports run one way (the root: manager, candidates,
# config and the CLI may use every part)
BACKEND_PARTS = ('libs', 'measure', 'precision', 'live')
ALLOWED = {('measure', 'libs'), ('precision', 'measure'), ('precision', 'libs'),
           ('live', 'measure')}


def _part(module: str):
    parts = module.split('.')
    if parts[:2] != ['edge_infer', 'backends']:
        return None
    return parts[2] if len(parts) > 2 and parts[2] in BACKEND_PARTS else 'root'


def _part_links(graph: Dict[str, Set[str]]) -> Set[tuple]:
    return {(_part(a), _part(b)) for a, targets in graph.items() for b in targets
            if _part(a) and _part(b) and _part(a) != _part(b)}


def test_the_backend_parts_import_one_way():
    graph = _graph()
    assert {_part(m) for m in graph} >= set(BACKEND_PARTS) | {'root'}
    links = _part_links(graph)
    assert ('live', 'measure') in links and ('measure', 'libs') in links    # the walk saw them
    assert {link for link in links if link[0] != 'root'} <= ALLOWED, links
    # the check itself: an import running back up is found
    up = {**graph, 'edge_infer.backends.libs.ort': graph['edge_infer.backends.libs.ort'] | {
        'edge_infer.backends.live.choice'}}
    assert ('libs', 'live') in _part_links(up)


TESTING = 'edge_infer.testing'


def test_the_installed_package_imports_no_test_helper():
    """edge_infer.testing is not installed (setup.py): no other module may import it."""
    graph = _graph()
    helpers = {m for m in graph if m == TESTING or m.startswith(TESTING + '.')}
    assert 'edge_infer.testing.simulated' in helpers

    def users(graph):
        return {m: sorted(graph[m] & helpers) for m in graph
                if m not in helpers and graph[m] & helpers}
    assert users(graph) == {}
    # the check itself: a module that imports one is found
    planted = {**graph, 'edge_infer.executor.core': graph['edge_infer.executor.core'] | {
        'edge_infer.testing.load'}}
    assert users(planted) == {'edge_infer.executor.core': ['edge_infer.testing.load']}


# The set-up tools (edge_infer/tools/: model conversion and `model add`, the
# ARM check, the bag tools) run beside the runtime, never inside it. Only these
# entry points may import them: the CLI's verbs and `prepare`; and the test and
# benchmark support (edge_infer/testing/, never installed nor imported by the
# runtime: its Triton servers are made with the tools).
TOOLS = 'edge_infer.tools'
TOOL_ENTRY_POINTS = frozenset({'edge_infer.cli', 'edge_infer.data'})


def _is_tool(module: str) -> bool:
    return module == TOOLS or module.startswith(TOOLS + '.')


def _imports_of_tools(graph: Dict[str, Set[str]]) -> Dict[str, List[str]]:
    """Return {module: the tools it imports} for every module outside the tools."""
    return {name: sorted(t for t in targets if _is_tool(t))
            for name, targets in sorted(graph.items())
            if not _is_tool(name) and not name.startswith(TESTING + '.') and
            any(map(_is_tool, targets))}


def test_the_runtime_imports_no_set_up_tool(tmp_path):
    graph = _graph()
    assert {m for m in graph if _is_tool(m)} >= {
        'edge_infer.tools.models.user', 'edge_infer.tools.armcheck.check',
        'edge_infer.tools.bag.record'}
    found = _imports_of_tools(graph)
    assert set(found) >= {'edge_infer.cli'}         # the walk sees the verbs' imports
    assert {m: t for m, t in found.items() if m not in TOOL_ENTRY_POINTS} == {}
    # the check itself: an import inside a function of a runtime module is found
    planted = tmp_path / 'quantize.py'
    planted.write_text('def frames():\n    from ...tools.bag import record\n')
    name = 'edge_infer.backends.precision.quantize'
    imports = import_walk.imports(name, planted, _modules())
    assert 'edge_infer.tools.bag.record' in imports
    assert _imports_of_tools({**graph, name: graph[name] | imports}) != found
