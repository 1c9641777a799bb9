# Copyright 2026 edge_infer contributors. Apache-2.0.
r"""Supervision of the perception container under the real ``ros2 launch`` (issue 29's goals).

On a robot with ROS 2, or the stand-in (../shared/robot), after
``ros2 run edge_infer edge_infer prepare``::

    source ROBOT/ros_setup.bash && source ROBOT/ws/venv/bin/activate \\
        && source ROBOT/ws/install/setup.bash
    cd ROBOT/ws/src/edge_infer_repo     # the repository: edge_infer.testing is not installed
    PYTHONPATH=edge_infer:$PYTHONPATH python3 bench/product/launch_supervision.py \\
        --kills 20 --stops 20 \\
        [--json out.json]

Measures, with ``ros2 launch edge_infer perception.launch.py nodes:=detector``
and the demo bag's frames published at 10 Hz by this script:

1. **kill -9 of the container mid-stream**, ``--kills`` times in a row in one
   launch: seconds from the kill to the first detection of the restarted
   container (the goal: under 5 s every time). Before each kill the
   container serves longer than the supervisor's stable time (10 s), so each
   crash starts a fresh series, as on a robot where crashes are rare;
2. **double-SIGINT stops**, ``--stops`` launches: a terminal's Ctrl-C (SIGINT
   to the whole group) and a second one 0-0.5 s later; exit code, traceback,
   and what was left: processes, Fast DDS files no live process owns, folders
   in the temporary directory (the kill -9 launch is checked the same way);
3. **exit codes** of ros2 launch for each failure: a bad argument, a
   container that dies at start every time (a crash loop), a segfault with
   ``respawn:=false``, a node that cannot start with ``keep_partial:=false``;
   and a requested stop (0).

The summary goes to ``launch_supervision.csv`` / ``.md`` through benchlib
(bench/ is put on the path when the script is run as a file), the raw
figures to ``launch_supervision.json`` beside them (and to ``--json FILE``).
``--quick``: 2 kills and 2 stops.
"""

import argparse
import json
import os
import pathlib
import random
import signal
import sys
import tempfile
import time

from edge_infer import paths, procs
from edge_infer.testing.launching import Camera, LaunchRun, leftovers, snapshot, wait_for

try:
    import benchlib
except ImportError:     # run as a file (python3 bench/product/...): bench/ is not on the path
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    import benchlib

STABLE_S = 10.0     # edge_infer.supervise.RespawnPolicy.stable_s
BAD = ('Traceback', 'KeyboardInterrupt')


def _replaced(run: LaunchRun, old_pid: int):
    """Return the container that replaced ``old_pid``, or None."""
    c = run.container()
    return c if c is not None and c.pid != old_pid else None


def kills(domain: int, n: int) -> dict:
    """Kill the serving container ``n`` times; return the seconds to the next detection."""
    before = snapshot()
    cam = Camera(domain, paths.bags_dir() / 'demo')
    run = LaunchRun(domain, ['nodes:=detector'])
    resumed, active, problems, rc = [], [], [], None
    try:
        assert wait_for(lambda: cam.first_after(0.0), 300), run.text[-2000:]
        for i in range(n):
            old = run.container()
            # serve past the stable time: each crash is a fresh series
            wait_for(lambda: time.time() - old.create_time() > STABLE_S + 0.5, 60)
            t_kill = time.monotonic()
            old.send_signal(signal.SIGKILL)
            new = wait_for(lambda: _replaced(run, old.pid), 30)
            t_new = time.monotonic()
            got = wait_for(lambda: cam.first_after(t_new), 60)
            if new is None or got is None:
                problems.append(f'kill {i + 1}: no detection within 60 s')
                break
            resumed.append(got - t_kill)
            said = run.said_at('nodes active', i + 2)
            active.append(said - t_kill if said else float('nan'))
            print(f'kill {i + 1}: active again after {active[-1]:.2f} s, detections again '
                  f'after {got - t_kill:.2f} s', flush=True)
        run.interrupt(2)
        rc = run.wait_exit(60)
    finally:
        cam.close()
        left = leftovers(run, before)
        run.kill()
    return {'resumed_s': resumed, 'active_s': active, 'problems': problems, 'stop_rc': rc,
            'left': left, 'traceback': any(b in run.text for b in BAD)}


def stops(domain: int, n: int) -> dict:
    """Start and stop a launch with two SIGINTs ``n`` times; return codes and leftovers."""
    out = {'rc': [], 'left': [], 'traceback': 0, 'died': 0}
    for i in range(n):
        before = snapshot()
        run = LaunchRun(domain, ['nodes:=detector'])
        try:
            assert run.wait_active(), run.text[-2000:]
            run.interrupt(2, gap_s=random.uniform(0.0, 0.5))
            out['rc'].append(run.wait_exit(60))
        finally:
            out['left'] += leftovers(run, before)
            run.kill()
        out['traceback'] += any(b in run.text for b in BAD)
        out['died'] += 'process has died' in run.text
        print(f"stop {i + 1}: rc {out['rc'][-1]}", flush=True)
    return out


def failures(domain: int) -> dict:
    """Return ros2 launch's exit code (and its last line) for each failure."""
    work = pathlib.Path(tempfile.mkdtemp(prefix='supervision_bench_'))
    segv = work / 'segv_python'
    segv.write_text('#!/bin/sh\nkill -SEGV $$\n')      # a container that dies at start
    segv.chmod(0o755)
    partial = work / 'partial.yaml'
    partial.write_text('perception_container:\n  ros__parameters:\n    nodes: [detector]\n'
                       f'detector:\n  ros__parameters:\n    model: nanodet\n'
                       f'    models_dir: {work}\n')
    cases = {
        'bad argument': (["camera_topic:=''"], {}, None),
        'crash loop at start': (['respawn_delay:=0.1', 'respawn_max:=2'],
                                {'EDGE_INFER_PYTHON': str(segv)}, None),
        'segfault, respawn:=false': (['nodes:=detector', 'respawn:=false'], {}, signal.SIGSEGV),
        'node cannot start, keep_partial:=false': ([f'params_file:={partial}',
                                                    'keep_partial:=false'], {}, None),
        'requested stop (double SIGINT)': (['nodes:=detector'], {}, signal.SIGINT),
    }
    out = {}
    try:
        for name, (args, env, sig) in cases.items():
            run = LaunchRun(domain, args, env)
            try:
                if sig == signal.SIGINT:
                    run.wait_active()
                    run.interrupt(2)
                elif sig is not None:
                    run.wait_active()
                    run.container().send_signal(sig)
                rc = run.wait_exit(120)
            finally:
                run.kill()
            last = [ln for ln in run.lines if 'ERROR' in ln or 'supervise' in ln]
            out[name] = {'rc': rc, 'line': (last[-1].strip() if last else '')[:300]}
            print(f'{name}: rc {rc}: {out[name]["line"]}', flush=True)
    finally:
        for f in work.iterdir():
            f.unlink()
        work.rmdir()
    return out


def main(argv=None) -> int:
    """Run the three measurements; print and save a summary; exit 1 when a goal is missed."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--kills', type=int, default=20)
    ap.add_argument('--stops', type=int, default=20)
    ap.add_argument('--skip-failures', action='store_true')
    ap.add_argument('--json', type=pathlib.Path, help='also write the raw figures here')
    benchlib.common_args(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.kills, args.stops = min(args.kills, 2), min(args.stops, 2)
    out = benchlib.Results('launch_supervision', 'Supervision of the perception container '
                           'under the real ros2 launch', "issue 29's goals", args.machine,
                           args.out)
    domain = procs.free_domain_id(os.getpid())
    res = {'kills': kills(domain, args.kills) if args.kills else None,
           'stops': stops(domain, args.stops) if args.stops else None,
           'failures': None if args.skip_failures else failures(domain)}
    ok = True
    if res['kills']:
        k = res['kills']
        r = k['resumed_s']
        s, a = benchlib.summary(r), benchlib.summary(k['active_s'])
        said = (f'detections again after median {s["median"]:.2f} s, '
                f'max {s["max"]:.2f} s (active again: median {a["median"]:.2f}'
                f' s); under 5 s: {sum(x < 5 for x in r)} of {args.kills}; '
                f"stop rc {k['stop_rc']}; left: {k['left'] or 'nothing'}")
        print(f'kill -9 x{len(r)}: {said}')
        met = sum(x < 5 for x in r) == args.kills and not k['left'] and k['stop_rc'] == 0
        ok &= met
        out.add(what=f'kill -9 of the container mid-stream, x{len(r)}', figure=said,
                goal='every one under 5 s; stop rc 0; nothing left', met=met,
                resumed_median_s=s['median'], resumed_max_s=s['max'],
                active_median_s=a['median'], under_5_s=sum(x < 5 for x in r),
                problems='; '.join(k['problems']))
    if res['stops']:
        s = res['stops']
        said = (f'exit codes {sorted(set(s["rc"]))}, '
                f"tracebacks {s['traceback']}, 'process has died' {s['died']}, "
                f"left: {s['left'] or 'nothing'}")
        print(f'double-SIGINT stops x{len(s["rc"])}: {said}')
        met = set(s['rc']) == {0} and not s['traceback'] and not s['left']
        ok &= met
        out.add(what=f'double-SIGINT stops, x{len(s["rc"])}', figure=said,
                goal='exit 0, no traceback, nothing left', met=met)
    if res['failures']:
        for name, f in res['failures'].items():
            want_zero = name.startswith('requested')
            ok &= (f['rc'] == 0) == want_zero
            out.add(what=f'exit code: {name}', figure=f"rc {f['rc']}: {f['line']}",
                    goal='0' if want_zero else 'not 0', met=(f['rc'] == 0) == want_zero)
    out.note(f'ros2 launch edge_infer perception.launch.py nodes:=detector, the demo bag at '
             f'10 Hz; each kill after {STABLE_S:g} s of serving; every goal met: {ok}')
    out.write(['what', 'figure', 'goal', 'met'])
    (out.dir / 'launch_supervision.json').write_text(json.dumps(res, indent=1))
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
