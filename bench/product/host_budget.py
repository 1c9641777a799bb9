# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Launches side by side on one host: the inference threads they run in all (issue 29).

On a robot with ROS 2, or the stand-in (../shared/robot/README.md), after
``ros2 run edge_infer edge_infer prepare``, in the sourced workspace::

    python3 bench/product/host_budget.py                          # 2 launches, detector each
    python3 bench/product/host_budget.py --launches 3 --modes lease

Each mode starts ``--launches`` ``ros2 launch edge_infer perception.launch.py
namespace:=rK nodes:=NODES`` at once (a ROS domain and a lease directory of
their own), waits for each container's ``autostart: all N nodes active`` and
for every node's backend to settle (``backend_provisional`` False on
/diagnostics), plays the demo bag once into all, then stops them with
SIGINT. Modes: ``lease`` (``thread_budget: 0``, the host-wide lease) and
``alone`` (``thread_budget: -1``: every process as if alone, the behaviour
before the lease). Per launch it reports the budget line, each node's
backend and the threads that backend runs (``/tN`` of its name; OpenCV DNN
runs the budget), the threads that run at once (the fair share's limit on
frames at once, from its ``inference share`` line, times the models'
threads), the cores the container used during the bag and its threads that
were busy (over ``--busy`` of a core, from /proc; DDS and executor threads
included, so an upper bound), and the ``latency drift`` lines. The
inference threads in all are the sum of the backends' threads. The table
goes to ``host_budget.csv`` / ``.md`` (benchlib; bench/ is put on the path
when the script is run as a file); ``--quick`` runs the first mode only.
"""

import argparse
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

from edge_infer import paths, procs
import yaml

try:
    import benchlib
except ImportError:     # run as a file (python3 bench/product/...): bench/ is not on the path
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    import benchlib

ACTIVE = re.compile(r'autostart: all \d+ nodes active')
BUDGET = re.compile(r'inference thread budget: [^\n\x1b]*')    # up to a colour code
SHARE = re.compile(r'inference share: (?:at most (\d+) of|no limit)')
TICK = os.sysconf('SC_CLK_TCK')


class Launch:
    """One ``ros2 launch`` in a process group of its own; its output collected."""

    def __init__(self, env, ns, nodes, params):
        self.ns = ns
        self.proc = subprocess.Popen(
            ['ros2', 'launch', 'edge_infer', 'perception.launch.py', f'namespace:={ns}',
             f'nodes:={nodes}', f'params_file:={params}'], env=env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        self.lines = []
        threading.Thread(target=lambda: self.lines.extend(self.proc.stdout), daemon=True).start()

    @property
    def text(self):
        return ''.join(self.lines)

    def container_pid(self):
        """Return the pid of the container (perception_container in the launch's session)."""
        for pid in os.listdir('/proc'):
            try:
                stat = pathlib.Path(f'/proc/{pid}/stat').read_text()
                cmd = pathlib.Path(f'/proc/{pid}/cmdline').read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(')', 1)[1].split()[3]) == self.proc.pid and \
                    b'perception_container' in cmd:
                return int(pid)
        return None

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def thread_cpu(pid):
    """Return {tid: CPU seconds} of a process's threads."""
    out = {}
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            f = pathlib.Path(f'/proc/{pid}/task/{tid}/stat').read_text().rsplit(')', 1)[1].split()
        except OSError:
            continue
        out[tid] = (int(f[11]) + int(f[12])) / TICK
    return out


def backend_threads(backend, budget_line):
    """Return the threads a backend name runs (its /tN; OpenCV DNN: the budget)."""
    m = re.search(r'/t(\d+)\b', backend)
    if m:
        return int(m.group(1))
    m = re.search(r'budget: (\d+) per model', budget_line or '')
    return int(m.group(1)) if backend.startswith('opencv-dnn') and m else None


def wait(pred, timeout, what, launches=()):
    deadline = time.monotonic() + timeout
    while not pred():
        for launch in launches:
            if launch.proc.poll() is not None:
                sys.exit(f'{launch.ns}: launch ended ({what}):\n{launch.text[-3000:]}')
        if time.monotonic() > deadline:
            sys.exit(f'timed out: {what}')
        time.sleep(0.2)


def run_mode(mode, args, env):
    """Run the launches of one mode; return one row per launch."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    params = yaml.safe_load((paths.config_dir() / 'perception.yaml').read_text())
    params['perception_container']['ros__parameters']['thread_budget'] = \
        0 if mode == 'lease' else -1
    pfile = pathlib.Path(tempfile.mkdtemp(prefix='host_budget_')) / f'{mode}.yaml'
    pfile.write_text(yaml.safe_dump(params))
    env = dict(env, EDGE_INFER_CORE_LEASE_DIR=tempfile.mkdtemp(prefix='edge_infer-cores-'))
    diag = {}
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=int(env['ROS_DOMAIN_ID']))
    node = rclpy.create_node('host_budget_bench', context=ctx)
    node.create_subscription(DiagnosticArray, '/diagnostics', lambda m: diag.update(
        {s.name: {kv.key: kv.value for kv in s.values} for s in m.status}), 50)
    from rclpy.executors import SingleThreadedExecutor
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)

    def spin():
        while ctx.ok():
            try:
                executor.spin_once(timeout_sec=0.2)
            except Exception:   # the context went down meanwhile
                return
    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    launches = [Launch(env, f'r{k + 1}', args.nodes, pfile) for k in range(args.launches)]
    try:
        wait(lambda: all(ACTIVE.search(x.text) for x in launches), args.timeout,
             'every node active', launches)
        names = [f'/{x.ns}/{n}: perception' for x in launches for n in args.nodes.split(',')]
        wait(lambda: all(diag.get(n, {}).get('backend_provisional') == 'False' for n in names),
             args.timeout, 'backends settled', launches)
        pids = {x.ns: x.container_pid() for x in launches}
        before = {ns: thread_cpu(pid) for ns, pid in pids.items()}
        t0 = time.monotonic()
        subprocess.run([sys.executable, '-m', 'edge_infer.tools.bag.play', str(args.bag),
                        '--topics', *args.topics, '--rate', str(args.rate), '-q'], env=env,
                       check=True, timeout=args.timeout)
        seconds = time.monotonic() - t0
        after = {ns: thread_cpu(pid) for ns, pid in pids.items()}
        rows = []
        for x in launches:
            budget = BUDGET.search(x.text)
            line = budget.group(0) if budget else '(no budget line)'
            shares = sorted(((after[x.ns][t] - before[x.ns].get(t, 0.0)) / seconds
                             for t in after[x.ns]), reverse=True)
            status = [diag[f'/{x.ns}/{n}: perception'] for n in args.nodes.split(',')]
            nodes = [(n, st.get('backend', '?')) for n, st in zip(args.nodes.split(','), status)]
            threads = [backend_threads(b, line) for _, b in nodes]
            shares_said = SHARE.findall(x.text)     # the fair share in force at the end
            limit = int(shares_said[-1] or 0) if shares_said else 0
            ranked = sorted((t or 0 for t in threads), reverse=True)
            rows.append({'mode': mode, 'launch': x.ns, 'budget': line,
                         'backends': nodes, 'threads': threads,
                         'at_once': sum(ranked[:limit] if limit else ranked),
                         'cores_used': round(sum(shares), 2),
                         'busy': sum(s >= args.busy for s in shares),
                         'top': [round(s, 2) for s in shares[:4]],
                         'drift_lines': x.text.count('latency drift'),
                         'frames': '; '.join(f"{st.get('processed')} processed, "
                                             f"{st.get('dropped')} dropped, p50 "
                                             f"{st.get('latency_p50_ms')} ms" for st in status)})
        return rows
    finally:
        for x in launches:
            x.stop()
        rclpy.try_shutdown(context=ctx)
        spinner.join(5)     # no thread left in rclpy at exit
        executor.shutdown()
        node.destroy_node()


def main(argv=None):
    """Run the modes; print and save one table."""
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--launches', type=int, default=2)
    p.add_argument('--nodes', default='detector', help="each launch's nodes:= argument")
    p.add_argument('--modes', nargs='+', default=['lease', 'alone'], choices=['lease', 'alone'])
    p.add_argument('--bag', type=pathlib.Path, default=paths.bags_dir() / 'demo')
    p.add_argument('--rate', type=float, default=1.0, help='bag playback speed')
    p.add_argument('--topics', nargs='+', default=['/camera/image_raw',
                                                   '/camera/image_raw/compressed'],
                   help='bag topics played (the classifier takes the compressed one)')
    p.add_argument('--busy', type=float, default=0.1,
                   help='a thread counts as busy over this share of a core')
    p.add_argument('--timeout', type=float, default=300.0)
    benchlib.common_args(p)
    args = p.parse_args(argv)
    if args.quick:
        args.modes = args.modes[:1]
    res = benchlib.Results('host_budget', 'Launches side by side on one host: the inference '
                           'threads they run in all', 'issue 29 (one core budget per host)',
                           args.machine, args.out)
    env = procs.ros_env(procs.free_domain_id(os.getpid() + 11))
    res.note(f'host: {os.cpu_count()} cores; {args.launches} launches of nodes:={args.nodes}; '
             f'bag {args.bag.name} at rate {args.rate:g}; busy: a thread over {args.busy:g} of '
             'a core during the bag (DDS and executor threads included: an upper bound)')
    print('| mode | launch | budget line | backend (threads) | threads at once (fair share) '
          f'| cores used | busy threads (>= {args.busy:g} core; top shares) | drift lines | '
          'frames |')
    print('|---|---|---|---|---|---|---|---|---|')
    for mode in args.modes:
        rows = run_mode(mode, args, env)
        for r in rows:
            pairs = zip(r['backends'], r['threads'])
            backends = ', '.join(f'{n} {b} ({t})' for (n, b), t in pairs)
            print(f"| {mode} | {r['launch']} | {r['budget']} | {backends} | {r['at_once']} | "
                  f"{r['cores_used']} | {r['busy']} ({r['top']}) | {r['drift_lines']} | "
                  f"{r['frames']} |")
            res.add(mode=mode, launch=r['launch'], budget=r['budget'], backends=backends,
                    threads=sum(t or 0 for t in r['threads']), at_once=r['at_once'],
                    cores_used=r['cores_used'], busy=f"{r['busy']} ({r['top']})",
                    drift_lines=r['drift_lines'], frames=r['frames'])
        total = sum(t or 0 for r in rows for t in r['threads'])
        print(f'| {mode} | all | | inference threads in all: {total} | '
              f"{sum(r['at_once'] for r in rows)} | "
              f"{round(sum(r['cores_used'] for r in rows), 2)} | "
              f"{sum(r['busy'] for r in rows)} | {sum(r['drift_lines'] for r in rows)} | |")
        res.add(mode=mode, launch='all', budget='', backends='inference threads in all',
                threads=total, at_once=sum(r['at_once'] for r in rows),
                cores_used=round(sum(r['cores_used'] for r in rows), 2),
                busy=sum(r['busy'] for r in rows),
                drift_lines=sum(r['drift_lines'] for r in rows), frames='')
    res.write(['mode', 'launch', 'budget', 'backends', 'threads', 'at_once', 'cores_used',
               'busy', 'drift_lines', 'frames'],
              ['mode', 'launch', 'budget line', 'backend (threads)', 'inference threads',
               'threads at once (fair share)', 'cores used',
               f'busy threads (>= {args.busy:g} core; top shares)', 'drift lines', 'frames'])
    return 0


if __name__ == '__main__':
    sys.exit(main())
