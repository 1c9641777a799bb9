# Copyright 2026 edge_infer contributors. Apache-2.0.
"""``edge_infer bringup``: the graph of config/graph.yaml as processes, driven to active.

    edge_infer bringup [--camera-topic T] [--objective latency|energy|edp]
                       [--executor-policy P] [--nodes detector,classifier]
                       [--namespace NS] [--no-activate] [--bag DIR [--rate R]]
                       [--respawn true|false] [--respawn-delay S] [--respawn-max N]

What ``ros2 launch edge_infer perception.launch.py`` does on a robot, for a
machine without the launch packages: the same plan (edge_infer.graph), each
process started with its params file and remappings, then every lifecycle
node configured and activated through lifecycle_msgs services in the
graph's order. A process that crashes is started again and its nodes
driven to active again, by the launch's rule (edge_infer.supervise: the
same ``respawn*`` settings). Ctrl-C or SIGTERM shuts everything down
cleanly; if the bring-up itself is killed, its processes get SIGTERM from
the kernel.
"""

import argparse
import pathlib
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, List, Optional, Tuple

from . import graph as graph_mod
from . import procs
from .supervise import RespawnPolicy, Supervisor

MODULES = {'perception_container': 'edge_infer.nodes.container_entry'}


class Running:
    """The started processes of a plan."""

    def __init__(self, plans: List[graph_mod.ProcessPlan], env: Dict[str, str],
                 log_dir: pathlib.Path, log=print, policy: Optional[RespawnPolicy] = None):
        self.plans, self.env, self.log_dir, self.log = plans, env, log_dir, log
        self.policy = policy or RespawnPolicy()     # what supervise() does about an exit
        self.shm_cleaned: Optional[Dict[str, int]] = None
        self.procs: List[Tuple[graph_mod.ProcessPlan, subprocess.Popen]] = []
        self.watch: Dict[str, Supervisor] = {}     # each process's crash count (supervise)

    def start(self) -> 'Running':
        """Start every process of the plan (after removing what killed ones left in /dev/shm)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.shm_cleaned = procs.clean_stale_shm(self.env, log=self.log)
        for p in self.plans:
            self.procs.append((p, self._spawn(p)))
        return self

    def _spawn(self, p: graph_mod.ProcessPlan) -> subprocess.Popen:
        pfile = p.write_params(self.log_dir / f'{p.name}.params.yaml')
        ros_args = ['--ros-args', '--params-file', str(pfile)]
        for src, dst in p.remappings.items():
            ros_args += ['-r', f'{src}:={dst}']
        if p.namespace:
            ros_args += ['-r', f'__ns:=/{p.namespace.strip("/")}']
        module = MODULES.get(p.executable)
        if module is None:
            raise graph_mod.GraphError(f'no module known for executable {p.executable}')
        log = self.log_dir / f'{p.name}.log'
        if log.exists():    # a restart: the crashed run's output stays beside it
            log.replace(log.with_suffix(f'.{int(time.time())}.log'))
        self.watch.setdefault(p.name, Supervisor(p.name, self.policy)).started()
        return procs.spawn(module, ros_args, self.env, log)

    def restart(self, index: int) -> None:
        """Start process ``index`` again (it exited)."""
        p, _ = self.procs[index]
        self.procs[index] = (p, self._spawn(p))

    def node_names(self, only: Optional[graph_mod.ProcessPlan] = None) -> List[str]:
        """Return the fully qualified lifecycle nodes in bring-up order (of ``only``)."""
        out = []
        for p in self.plans if only is None else [only]:
            ns = f'/{p.namespace.strip("/")}' if p.namespace else ''
            out += [f'{ns}/{n}' for n in p.lifecycle_nodes]
        return out

    def activate(self, ros_node, executor=None, timeout: float = 60.0,
                 only: Optional[graph_mod.ProcessPlan] = None) -> None:
        """Configure and activate every lifecycle node (of ``only``), in order."""
        from .nodes.lifecycle_client import LifecycleClient
        lc = LifecycleClient(ros_node, executor)
        for name in self.node_names(only):
            lc.bring_up(name, timeout=timeout)

    def supervise(self, ros_node, activate: bool, log=print) -> int:
        """Wait while the processes run; restart a crashed one; return the exit code.

        Each exit is decided by :class:`~edge_infer.supervise.Supervisor`, as
        the launch file does: a crash restarts the process (and drives its
        nodes to active again), a clean exit ends with 0, anything final or a
        crash loop with 1.
        """
        watch = self.watch
        while True:
            time.sleep(0.5)
            for i, (p, proc) in enumerate(self.procs):
                code = proc.poll()
                if code is None:
                    continue
                decision = watch[p.name].exited(code, requested=False)
                log(decision.line)
                if decision.action != 'restart':
                    return 0 if decision.action == 'stop' else 1
                time.sleep(decision.delay_s)
                self.restart(i)
                if activate:
                    self.activate(ros_node, only=p)
                    log('active again: ' + ', '.join(self.node_names(p)))

    def stop(self, timeout: float = 10.0) -> Dict[str, int]:
        """Stop every process (SIGINT, then SIGKILL after ``timeout`` s); return exit codes."""
        return {p.name: procs.stop(proc, timeout) for p, proc in reversed(self.procs)}


def main(argv: Optional[List[str]] = None) -> int:
    """Bring the graph up and keep it running until Ctrl-C."""
    ap = argparse.ArgumentParser(prog='edge_infer bringup', description=__doc__.splitlines()[0])
    ap.add_argument('--camera-topic', default='')
    ap.add_argument('--cameras', default='',
                    help="comma-separated camera topics every perception node serves ('' = one)")
    ap.add_argument('--objective', default='')
    ap.add_argument('--executor-policy', default=None)
    ap.add_argument('--nodes', default='', help='comma-separated perception nodes to host')
    ap.add_argument('--namespace', default='')
    ap.add_argument('--params-file', type=pathlib.Path, default=None)
    ap.add_argument('--no-activate', action='store_true', help='leave the nodes unconfigured')
    ap.add_argument('--bag', type=pathlib.Path, default=None, help='play this bag once active')
    ap.add_argument('--rate', type=float, default=1.0)
    ap.add_argument('--log-dir', type=pathlib.Path, default=None)
    ap.add_argument('--respawn', choices=('true', 'false'), default='true',
                    help='start a crashed process again (as the launch argument)')
    ap.add_argument('--respawn-delay', type=float, default=RespawnPolicy.delay_s)
    ap.add_argument('--respawn-max', type=int, default=RespawnPolicy.max_crashes)
    args = ap.parse_args(argv)
    policy = RespawnPolicy(enabled=args.respawn == 'true', delay_s=args.respawn_delay,
                           max_crashes=args.respawn_max)
    try:
        cams = [t for t in args.cameras.split(',') if t]
        plans = graph_mod.plan(args.camera_topic, args.objective, args.executor_policy,
                               [n for n in args.nodes.split(',') if n], args.namespace,
                               args.params_file,
                               node_params={'image_topics': cams} if cams else None)
    except (graph_mod.GraphError, OSError) as exc:
        print(f'edge_infer bringup: {exc}', file=sys.stderr)
        return 2
    import rclpy
    from rclpy.signals import SignalHandlerOptions
    procs.use_ros_env_here()
    env = procs.ros_env()
    log_dir = args.log_dir or pathlib.Path(tempfile.mkdtemp(prefix='edge_infer_bringup_'))
    stopping = _stop_on_signals()
    running = Running(plans, env, log_dir, policy=policy)
    player = None
    try:
        running.start()
        print(f'started {", ".join(p.name for p in plans)}; logs in {log_dir}', flush=True)
        # SIGINT and SIGTERM are ours (_stop_on_signals): rclpy's handlers would
        # only end its context, and this loop would never see SIGTERM
        rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
        node = rclpy.create_node('edge_infer_bringup')
        if not args.no_activate:
            running.activate(node)
            print('active: ' + ', '.join(running.node_names()), flush=True)
        if args.bag:
            player = procs.start_player(args.bag, env, ['--rate', str(args.rate)])
        print('running: Ctrl-C or SIGTERM stops every process', flush=True)
        return running.supervise(node, not args.no_activate,
                                 log=lambda line: print(line, file=sys.stderr, flush=True))
    except KeyboardInterrupt:
        return 0
    except Exception as exc:  # LifecycleError and the like: one line
        print(f'edge_infer bringup: {exc}', file=sys.stderr)
        return 1
    finally:
        stopping.set()      # a second signal now waits for the stop below
        if player is not None:
            procs.stop(player)
        codes = running.stop()
        print('stopped: ' + ', '.join(f'{k}={v}' for k, v in codes.items()), flush=True)
        rclpy.try_shutdown()


def _stop_on_signals() -> threading.Event:
    """Make SIGINT and SIGTERM raise KeyboardInterrupt once; later ones wait for the stop.

    Returns the event the caller sets when it starts stopping. (A killed
    bring-up cannot stop anything: its children get SIGTERM from the kernel,
    procs.spawn.)
    """
    stopping = threading.Event()

    def handler(signum, frame):
        if stopping.is_set():
            print(f'{signal.Signals(signum).name}: already stopping', file=sys.stderr,
                  flush=True)
            return
        stopping.set()
        print(f'{signal.Signals(signum).name}: stopping every process', flush=True)
        raise KeyboardInterrupt
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler)
    return stopping


if __name__ == '__main__':
    sys.exit(main())
