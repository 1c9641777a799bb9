# Copyright 2026 edge_infer contributors. Apache-2.0.
"""One configuration of the user's graph, brought up and probed at a rate.

The graph is the one ``edge_infer bringup`` starts (config/graph.yaml and
the params file), unchanged but for the configuration under test: ``auto``
leaves every node's ``backend`` as the params file says; a static
configuration sets every perception node's ``backend`` to one candidate
(``openvino/cpu/t1``). Its processes run in a ROS domain of their own.

:meth:`GraphRun.probe` plays frames at a rate into it (:mod:`.probe`).
"""

import pathlib
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .monitor import Monitor, Watched
from .probe import _tree, BenchmarkError, cpu_seconds, Feeder, probe, ProbeResult  # noqa: I101
from ... import graph as graph_mod
from ... import paths, procs
from ...bringup import Running

AUTO = 'auto'
STANDARD_TOPICS = {'detection': ('~/vision/detections', 'vision_msgs.msg', 'Detection2DArray'),
                   'classification': ('~/vision/classification', 'vision_msgs.msg',
                                      'Classification'),
                   'segmentation': ('~/mask', 'sensor_msgs.msg', 'Image')}
EDGE_TYPES = {'detection': 'DetectionArray', 'classification': 'Classification',
              'pose': 'PoseDetectionArray', 'segmentation': 'Segmentation'}


def watched_nodes(plans: List[graph_mod.ProcessPlan]) -> List[Watched]:
    """Return the perception nodes of ``plans`` with their result topics."""
    import importlib

    from ...core.registry import load_models
    from ...nodes.tasks import DEFAULT_TOPICS
    out = []
    for p in plans:
        ns = f'/{p.namespace.strip("/")}' if p.namespace else ''
        own = _section(p.params, p.name, ns)
        registry = load_models(own.get('registry') or None)
        for name in own.get('nodes', []):
            params = _section(p.params, name, ns)
            model = params.get('model', '')
            if model not in registry:
                raise BenchmarkError(f"node {name}: model '{model}' is not registered")
            task = registry[model].task
            fq = f'{ns}/{name}'
            if params.get('result_messages', 'both') == 'standard' and task in STANDARD_TOPICS:
                topic, module, kind = STANDARD_TOPICS[task]
                times = False
            else:
                topic = params.get('output_topic') or DEFAULT_TOPICS[task]
                module, kind, times = 'edge_infer_msgs.msg', EDGE_TYPES[task], True
            topic = fq + topic[1:] if topic.startswith('~') else topic
            out.append(Watched(fq, topic, getattr(importlib.import_module(module), kind), times))
    return out


def parse_config(config: str) -> Tuple[Dict[str, object], Dict[str, object]]:
    """Return (every perception node's parameters, every container's) of a configuration.

    ``auto``: the graph as configured; ``openvino/cpu/t1``: every perception
    node pinned to that backend; either may be followed by ``+key=value``
    settings, for the container when it has that parameter
    (``auto+frame_order=arrival``), else for every perception node
    (``auto+tracker=none``). Values are read as YAML scalars.
    """
    import yaml

    from ...nodes.container_params import PARAMETERS as CONTAINER
    base, *sets = config.split('+')
    nodes: Dict[str, object] = {} if base in ('', AUTO) else {'backend': base}
    container: Dict[str, object] = {}
    for item in sets:
        key, eq, value = item.partition('=')
        if not eq or not key:
            raise ValueError(f"'{item}': use key=value")
        (container if key in CONTAINER else nodes)[key] = yaml.safe_load(value)
    # graph=FILE (a graph file, e.g. graph_two_processes.yaml) rides with the nodes' values
    return nodes, container


def _config_path(name: str) -> pathlib.Path:
    """Return a graph file: as given, or by its name in the package's config folder."""
    path = pathlib.Path(name)
    return path if path.is_file() else paths.config_dir() / name


def _section(params: dict, name: str, ns: str) -> dict:
    for key in (f'{ns}/{name}', name, f'/{name}'):
        if key in params:
            return params[key].get('ros__parameters', {})
    return {}


class GraphRun:
    """The graph in one configuration: started, settled, probed, stopped."""

    def __init__(self, config: str, bag: pathlib.Path, out: pathlib.Path,
                 params_file: Optional[pathlib.Path] = None, frames: int = 100,
                 log=print):
        self.config, self.bag, self.out, self.log = config, bag, out, log
        try:
            node_params, container = parse_config(config)
            graph_file = node_params.pop('graph', None)
            graph = graph_mod.load_graph(_config_path(str(graph_file))) if graph_file else None
            if container:
                params_file = self._with_container_params(params_file, container, graph)
            self.plans = graph_mod.plan(params_file=params_file, node_params=node_params,
                                        graph=graph)
        except (graph_mod.GraphError, OSError, ValueError) as exc:
            raise BenchmarkError(f'configuration {config}: {exc}') from None
        self.watched = watched_nodes(self.plans)
        if not self.watched:
            raise BenchmarkError('the graph hosts no perception node')
        self.frames = frames
        self.running: Optional[Running] = None
        self.feeder: Optional[Feeder] = None
        self.monitor: Optional[Monitor] = None
        self._context: Optional[Any] = None
        self._spinner: Optional[threading.Thread] = None
        self.idle_cpu: Dict[str, float] = {}
        self.started_s = 0.0

    def _with_container_params(self, params_file: Optional[pathlib.Path],
                               values: Dict[str, object],
                               graph: Optional[dict]) -> pathlib.Path:
        """Return a copy of the params file with ``values`` set on every container."""
        import yaml
        src = params_file or paths.config_dir() / 'perception.yaml'
        params = yaml.safe_load(pathlib.Path(src).read_text()) or {}
        for proc in (graph or graph_mod.load_graph())['processes']:
            section = params.setdefault(proc['name'], {'ros__parameters': {}})
            section.setdefault('ros__parameters', {}).update(values)
        self.out.mkdir(parents=True, exist_ok=True)
        out = self.out / 'params.yaml'
        out.write_text(yaml.safe_dump(params))
        return out

    # ------------------------------------------------------------ bring-up
    def start(self, settle_timeout: float = 180.0) -> None:
        """Start the processes in a domain of their own, activate, wait for the choices."""
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        t0 = time.monotonic()
        domain = procs.free_domain_id()
        env = procs.ros_env(domain)
        self.out.mkdir(parents=True, exist_ok=True)
        procs.use_ros_env_here()
        self._context = rclpy.Context()
        rclpy.init(args=['--ros-args'], context=self._context, domain_id=domain)
        self.running = Running(self.plans, env, self.out, log=self.log).start()
        lc_node = rclpy.create_node('edge_infer_benchmark_lifecycle', context=self._context)
        lc_exec = SingleThreadedExecutor(context=self._context)
        lc_exec.add_node(lc_node)
        mon_node = rclpy.create_node('edge_infer_benchmark_monitor', context=self._context)
        self.monitor = Monitor(mon_node, self.watched)
        mon_exec = SingleThreadedExecutor(context=self._context)
        mon_exec.add_node(mon_node)
        self._spinner = threading.Thread(target=self._spin, args=(mon_exec,), daemon=True,
                                         name='benchmark-monitor')
        self._spinner.start()
        remap = self.plans[0].remappings
        self.feeder = Feeder(self.bag, env, self.frames, remap, self.out / 'feeder.log')
        try:
            self.running.activate(lc_node, lc_exec, timeout=120.0)
        except Exception as exc:  # LifecycleError and the like
            raise BenchmarkError(f'{self.config}: bring-up failed: {exc} '
                                 f'(logs in {self.out})') from None
        lc_node.destroy_node()
        self._settle(settle_timeout)
        self.started_s = time.monotonic() - t0

    def _spin(self, executor) -> None:
        while self._context is not None and self._context.ok():
            try:
                executor.spin_once(timeout_sec=0.1)
            except Exception:  # the context ended under the spin: the run is over
                return

    def _settle(self, timeout: float) -> None:
        """Wait until every node reported a measured choice and no measuring child runs."""
        assert self.monitor is not None and self.running is not None
        deadline = time.monotonic() + timeout
        quiet_since = None
        while time.monotonic() < deadline:
            reports = [self.monitor.report(w.name) for w in self.watched]
            measured = all(r is not None and r.trigger != 'provisional' for r in reports)
            children = sum(len(_tree(proc.pid)) - 1 for _, proc in self.running.procs)
            if measured and children == 0:
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since >= 2.0:
                    return
            else:
                quiet_since = None
            self._check_alive()
            if not measured and self.feeder is not None:
                self.feeder.play(10.0, 1.0)     # a first start profiles on real frames
            else:
                time.sleep(0.2)
        self.log(f'[benchmark] {self.config}: not settled within {timeout:.0f} s; '
                 f'measuring as it is')

    def _check_alive(self) -> None:
        assert self.running is not None
        dead = [f'{p.name} (exit code {proc.returncode})' for p, proc in self.running.procs
                if proc.poll() is not None]
        if dead:
            raise BenchmarkError(f"{self.config}: {', '.join(dead)} ended; logs in {self.out}")

    def pids(self) -> Dict[str, int]:
        """Return the processes to account for: each of the graph's, the feeder, this one."""
        import os
        assert self.running is not None and self.feeder is not None
        out = {p.name: proc.pid for p, proc in self.running.procs}
        out['feeder'] = self.feeder.proc.pid
        out['benchmark'] = os.getpid()     # itself only: the others are its children
        return out

    def measure_idle(self, seconds: float = 3.0) -> Dict[str, float]:
        """Return (and keep) each process's CPU in cores with no frame coming."""
        pids = self.pids()
        t0 = time.monotonic()
        c0 = {k: cpu_seconds(p, k != 'benchmark') for k, p in pids.items()}
        time.sleep(seconds)
        dt = time.monotonic() - t0
        self.idle_cpu = {k: (cpu_seconds(p, k != 'benchmark') - c0[k]) / dt
                         for k, p in pids.items()}
        return self.idle_cpu

    # --------------------------------------------------------------- probe
    def probe(self, rate: float, seconds: float) -> ProbeResult:
        """Play at ``rate`` Hz for ``seconds`` (after 1 s unscored) and measure."""
        assert self.monitor is not None and self.feeder is not None
        self._check_alive()
        return probe(self.feeder, self.monitor, self.pids(), rate, seconds)

    def alone_cost_ms(self) -> Dict[str, float]:
        """Return each node's chosen candidate's frame cost alone (run + preprocess, ms)."""
        assert self.monitor is not None
        out = {}
        for w in self.watched:
            r = self.monitor.report(w.name)
            chosen = [c for c in (r.candidates if r is not None else []) if c.chosen]
            if chosen:
                c = chosen[0]
                pre = c.preprocess_ms if np.isfinite(c.preprocess_ms) else 0.0
                out[w.name] = float(c.latency_p50_ms + pre)
        return out

    def chosen(self) -> Dict[str, str]:
        """Return each node's chosen backend (its latest report)."""
        assert self.monitor is not None
        return {w.name: getattr(self.monitor.report(w.name), 'chosen', '?')
                for w in self.watched}

    def stop(self) -> Dict[str, int]:
        """Stop the feeder and the graph's processes; return their exit codes."""
        import rclpy
        codes: Dict[str, int] = {}
        if self.feeder is not None:
            self.feeder.close()
        if self.running is not None:
            codes = self.running.stop()
        if self._context is not None:
            rclpy.try_shutdown(context=self._context)
        if self._spinner is not None:
            self._spinner.join(timeout=2.0)
        self._context = None
        return codes
