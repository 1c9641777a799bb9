# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The node graph, described once (config/graph.yaml), for launch files and bring-up.

``launch/perception.launch.py`` (robots with ROS 2) and ``edge_infer bringup``
(here, without launch) both call :func:`plan`: which processes, which
executables, which parameters (the params file with the arguments applied),
which remappings, and the lifecycle nodes in bring-up order. They cannot
drift apart because neither has its own copy.
"""

import copy
from dataclasses import dataclass, field
import hashlib
import os
import pathlib
from typing import Dict, List, Optional, Sequence

import yaml

from . import paths
from .backends.measure.selection import OBJECTIVES
from .executor.core import POLICIES
from .validate import check_params, GraphError

__all__ = ['GraphError', 'load_graph', 'plan', 'ProcessPlan', 'qualify_params']

CONTAINER = 'perception_container'      # the container executable's node name


@dataclass
class ProcessPlan:
    """One process of the graph, ready to start."""

    name: str
    package: str
    executable: str
    params: dict    # the params-file content, arguments applied, keys qualified by namespace
    remappings: Dict[str, str]
    namespace: str
    lifecycle_nodes: List[str] = field(default_factory=list)   # bring-up order

    def write_params(self, path: pathlib.Path) -> pathlib.Path:
        """Write the params file this process starts with; return its path."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(self.params, sort_keys=False))
        return path

    def stored_params(self, folder: Optional[pathlib.Path] = None) -> pathlib.Path:
        """Write the params file under a name made of its content; return its path.

        For launch files: the same arguments give the same file, so nothing is
        left to clean up when a launch ends, however it ends (Ctrl-C, SIGTERM,
        SIGKILL, a crash), and two launches never share a file they could
        disagree on. ``folder``: default ``<data home>/launch``.
        """
        text = yaml.safe_dump(self.params, sort_keys=False)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        folder = pathlib.Path(folder) if folder else paths.data_home() / 'launch'
        path = folder / f'{self.name}-{digest}.yaml'
        if not (path.is_file() and path.read_text() == text):
            folder.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f'.{path.name}.{os.getpid()}')
            tmp.write_text(text)
            os.replace(tmp, path)       # atomic: a concurrent launch reads all or nothing
        return path


def load_graph(path: Optional[pathlib.Path] = None) -> dict:
    """Return the graph description (config/graph.yaml)."""
    path = pathlib.Path(path) if path else paths.config_dir() / 'graph.yaml'
    data = yaml.safe_load(path.read_text()) or {}
    if not data.get('processes'):
        raise GraphError(f'{path}: no processes')
    return data


def plan(camera_topic: str = '', objective: str = '', executor_policy: Optional[str] = None,
         nodes: Optional[Sequence[str]] = None, namespace: str = '',
         params_file: Optional[pathlib.Path] = None, autostart: bool = False,
         graph: Optional[dict] = None, keep_partial: Optional[bool] = None,
         node_params: Optional[Dict[str, object]] = None) -> List[ProcessPlan]:
    """Return the processes to start, with every argument applied.

    ``camera_topic``: remaps the camera (raw, and ``<topic>/compressed``);
    ``objective``: backend objective of every perception node; ``nodes``: the
    perception nodes to host (a subset of the params file's); ``autostart``:
    the container configures and activates its nodes itself; ``keep_partial``:
    whether it runs on when some node could not be made active (None: the
    params file's); ``node_params``: parameters set on every hosted perception
    node (the launch file's tracker, depth_topic, camera_info_topic). Every
    parameter is then checked (edge_infer.validate):
    the first bad one raises ArgumentError, a GraphError, before anything starts.
    """
    graph = graph or load_graph()
    if objective and objective not in OBJECTIVES:
        raise GraphError(f"objective '{objective}': use one of {', '.join(OBJECTIVES)}")
    if executor_policy and executor_policy not in POLICIES:
        raise GraphError(f"executor policy '{executor_policy}': use one of "
                         f"{', '.join(POLICIES)}")
    out = []
    for proc in graph['processes']:
        pfile = pathlib.Path(params_file) if params_file else \
            paths.config_dir() / proc['params']
        params = yaml.safe_load(pfile.read_text()) or {}
        if proc['name'] not in params and CONTAINER in params:    # a second container
            params[proc['name']] = copy.deepcopy(params[CONTAINER])
        own = params.setdefault(proc['name'], {'ros__parameters': {}})['ros__parameters']
        for key in ('nodes', 'telemetry'):      # the graph file's split of the nodes
            if key in proc:
                own[key] = proc[key]
        hosted = list(own.get('nodes', []))
        if nodes:
            unknown = [n for n in nodes if n not in params]
            if unknown:
                raise GraphError(f'nodes {unknown} have no section in {pfile.name} '
                                 f'(known: {", ".join(k for k in params if k != proc["name"])})')
            hosted = list(nodes)
            own['nodes'] = hosted
        own['autostart'] = bool(autostart)
        if keep_partial is not None:
            own['keep_partial'] = bool(keep_partial)
        for n in hosted:
            p = params[n]['ros__parameters']
            if objective:
                p['objective'] = objective
            if executor_policy is not None:
                p['executor_policy'] = executor_policy
            p.update(node_params or {})
        check_params(params, proc['name'], pfile.name)
        remap = {}
        default_cam = graph.get('camera_topic', '/camera/image_raw')
        if camera_topic and camera_topic != default_cam:
            remap = {default_cam: camera_topic,
                     f'{default_cam}/compressed': f'{camera_topic}/compressed'}
        if proc['name'] != CONTAINER:   # the executable's node, renamed (its params' key)
            remap[f'{CONTAINER}:__node'] = proc['name']
        telemetry = own.get('telemetry', 'telemetry')
        order = ([telemetry] if telemetry else []) + hosted
        out.append(ProcessPlan(proc['name'], proc.get('package', 'edge_infer'),
                               proc['executable'], qualify_params(params, namespace), remap,
                               namespace, order))
    return out


def qualify_params(params: dict, namespace: str) -> dict:
    """Return ``params`` with its bare node keys qualified by ``namespace``.

    A params-file key ``detector:`` matches only the node ``/detector``: the
    node ``/robot1/detector`` needs ``/robot1/detector:`` (or ``/**/detector:``),
    so in a namespace every node would start without its parameters. Keys that
    already start with ``/`` (``/**``, qualified names) are kept as they are.
    """
    ns = namespace.strip('/')
    if not ns:
        return params
    return {key if str(key).startswith('/') else f'/{ns}/{key}': value
            for key, value in params.items()}
