# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Stops of the perception container at any moment, in a loop: outcomes counted (issue 56).

    ./run.sh exec python bench/product/stop_loop.py [--stops 500] [--seed 1]
                                                    [--max-delay-s 8] [--nodes detector]
    python3 bench/product/stop_loop.py --launch ...   # on a robot (ros2 launch)

Each round starts the perception container on config/perception.yaml with
``autostart`` on (``--nodes``: the graph's nodes it hosts; default all),
waits a random 0.2 s to ``--max-delay-s`` (seeded: while it imports, during
autostart's configure and activate, or while it serves), then sends SIGINT
(odd rounds, a terminal's Ctrl-C) or SIGTERM (even rounds, systemd's stop
without ``KillSignal``) to its process group, and waits for its exit (30 s,
then SIGKILL: *hung*). Per round:

- the exit code (docs/robot.md: 0 for a requested stop);
- an abort: exit -6 / 134, or ``Aborted`` / ``terminate called`` / ``Fatal
  Python error`` in its output; a traceback;
- what it left in /dev/shm that no live process owns (Fast DDS file sets,
  edge_infer.shm.stale; Triton regions), read after it exited; and what is
  still there 3 s or more after the next round's container started (it
  cleans at start, and again 2.5 s later).

With ``--launch`` each round is ``ros2 launch edge_infer perception.launch.py
autostart:=true`` instead (a robot, or the stand-in of ../shared/robot),
stopped as docs/robot.md says a person or a supervisor stops it: odd rounds
a terminal's Ctrl-C (SIGINT to the process group: exit 0, the container
"finished cleanly"), even rounds SIGTERM to the launch alone (systemd
without ``KillSignal=SIGINT``: the launch dies of it, -15, and the
container, told by the kernel, stops by itself). Each round also counts what
it left (edge_infer.testing.launching.leftovers: processes still running
30 s later, /dev/shm files no live process owns, its temporary directory).

The output of every round that did not end as expected is kept in full
beside the table (``stop_loop_rounds/``). Through benchlib: ``stop_loop.csv``
/ ``.md`` (``stop_loop_launch`` with ``--launch``). No camera frames are
sent: the rounds are about stopping, not serving.
"""

import argparse
import collections
import os
import pathlib
import random
import signal
import subprocess
import sys
import tempfile
import time

from edge_infer import paths, procs, shm
import yaml

try:
    import benchlib
except ImportError:     # run as a file: bench/ is not on the path
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    import benchlib

ABORT = ('Aborted', 'terminate called', 'Fatal Python error', 'core dumped')
EXIT_TIMEOUT_S = 30.0


def params_file(folder: pathlib.Path, nodes) -> pathlib.Path:
    """Write perception.yaml with autostart on (and only ``nodes``, if given) into ``folder``."""
    params = yaml.safe_load((paths.config_dir() / 'perception.yaml').read_text())
    container = params['perception_container']['ros__parameters']
    container['autostart'] = True
    if nodes:
        container['nodes'] = list(nodes)
    out = folder / 'perception.yaml'
    out.write_text(yaml.safe_dump(params))
    return out


def left_in_shm() -> int:
    """Return the Fast DDS file sets and Triton regions in /dev/shm no live process owns."""
    return len(shm.stale(min_age_s=0.0)) + len(shm.stale_triton(min_age_s=0.0))


def one_round(k: int, env: dict, params: pathlib.Path, delay_s: float, folder: pathlib.Path):
    """Start, wait ``delay_s``, stop (SIGINT odd, SIGTERM even); return the round's row."""
    sig = signal.SIGINT if k % 2 else signal.SIGTERM
    log = folder / f'round_{k:04d}.log'
    t0 = time.monotonic()
    proc = procs.start_container(env, params, log_path=log)
    time.sleep(delay_s)
    # what the previous round left, once this one cleaned (it cleans at start, and
    # once more 2.5 s later for sets too young to judge at first)
    after_start = left_in_shm() if delay_s >= 3.0 else None
    state = 'running' if proc.poll() is None else f'exited early ({proc.returncode})'
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    t_sig = time.monotonic()
    hung = False
    try:
        proc.wait(EXIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        hung = True
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    stop_s = time.monotonic() - t_sig
    text = log.read_text(errors='replace')
    rc = proc.returncode
    aborted = rc in (-6, 134) or any(w in text for w in ABORT)
    row = {'round': k, 'signal': sig.name, 'delay_s': round(delay_s, 2), 'state': state,
           'rc': rc, 'stop_s': round(stop_s, 2), 'hung': hung, 'aborted': aborted,
           'traceback': 'Traceback' in text, 'left_in_shm': left_in_shm(),
           'left_after_next_start': None, 'wall_s': round(time.monotonic() - t0, 1),
           'prev_left_after_start': after_start}
    if rc == 0 and not aborted and not row['traceback']:
        log.unlink()            # kept only where something went wrong
    return row


def outcome(r: dict) -> str:
    """Return one round's outcome: abort, hung, died, traceback, left something or clean."""
    return ('abort' if r['aborted'] else 'hung' if r['hung'] else
            'died' if r.get('died') else 'traceback' if r['traceback'] else
            'left something' if r.get('left') else 'clean')


def say(k: int, stops: int, row: dict, left: str) -> None:
    """Print one round's line: signal, when, exit code, what went wrong, what it left."""
    flags = ''.join(f' {word}' for key, word in (
        ('aborted', 'ABORT'), ('died', 'DIED'), ('hung', 'HUNG'), ('traceback', 'traceback'))
        if row.get(key))
    odd = '' if row.get('rc_expected', True) else ' (NOT AS DOCUMENTED)'
    print(f"[{k}/{stops}] {row['signal']} after {row['delay_s']} s ({row['state']}): rc "
          f"{row['rc']}{odd} in {row['stop_s']} s{flags}; {left}", flush=True)


def summarise(res, rows: list, what: str) -> list:
    """Note the outcome counts and the stop times; return the summary rows."""
    counts = collections.Counter((r['signal'], r['rc'], outcome(r)) for r in rows)
    summary = [{'signal': s, 'rc': rc, 'outcome': o, 'rounds': n}
               for (s, rc, o), n in sorted(counts.items(), key=str)]
    res.note(f'{len(rows)} stops{what}; outcomes: ' + '; '.join(
        f"{d['signal']} rc {d['rc']} {d['outcome']}: {d['rounds']}" for d in summary))
    stops = [r['stop_s'] for r in rows if not r['hung']]
    res.note('stop time (signal to exit), s: median {median:.2f}, max {max:.2f}'.format(
        **benchlib.summary(stops)))
    return summary


def launch_round(k: int, domain: int, nodes, delay_s: float, folder: pathlib.Path):
    """Start ``ros2 launch``, wait ``delay_s``, stop it (Ctrl-C odd, SIGTERM even); a row."""
    from edge_infer.testing import launching
    sig = signal.SIGINT if k % 2 else signal.SIGTERM
    before = launching.snapshot()
    t0 = time.monotonic()
    run = launching.LaunchRun(domain, ['autostart:=true'] +
                              ([f"nodes:={','.join(nodes)}"] if nodes else []))
    time.sleep(delay_s)
    state = ('active' if run.count('nodes active') else 'starting') \
        if run.proc.poll() is None else f'exited early ({run.proc.returncode})'
    if sig == signal.SIGINT:
        run.interrupt(times=1)          # the terminal's; the launch then sends its own
    else:
        run.proc.send_signal(sig)
    t_sig = time.monotonic()
    hung = False
    try:
        rc = run.wait_exit(EXIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        hung = True
        run.kill()
        rc = run.proc.returncode
    stop_s = time.monotonic() - t_sig
    left = launching.leftovers(run, before)
    text = run.text
    expected = {0} if sig == signal.SIGINT else {-signal.SIGTERM}
    started = '[launch]' in text or 'process started' in text
    if sig == signal.SIGINT and not started:    # in ros2cli's own start-up (docs/robot.md)
        expected |= {signal.SIGINT, -signal.SIGINT}
    aborted = any(w in text for w in ABORT)
    died = 'process has died' in text
    row = {'round': k, 'signal': sig.name, 'delay_s': round(delay_s, 2), 'state': state,
           'rc': rc, 'rc_expected': rc in expected, 'launch_started': started,
           'stop_s': round(stop_s, 2), 'hung': hung,
           'aborted': aborted, 'traceback': 'Traceback' in text, 'died': died,
           'left': len(left), 'wall_s': round(time.monotonic() - t0, 1)}
    if not row['rc_expected'] or aborted or died or row['traceback'] or left or hung:
        (folder / f'launch_round_{k:04d}.log').write_text(text + '\nleft: ' + repr(left))
    return row


def main_launch(args, res, rng, nodes, keep) -> None:
    """Run the rounds under ``ros2 launch``; print and write the outcome counts."""
    from edge_infer.testing.launching import ros2_launch_missing
    if ros2_launch_missing():
        raise SystemExit(f'--launch: {ros2_launch_missing()}')
    domain = procs.free_domain_id()
    rows = []
    end = time.monotonic() + args.max_minutes * 60 if args.max_minutes else float('inf')
    for k in range(1, args.stops + 1):
        if time.monotonic() > end:
            res.note(f'--max-minutes {args.max_minutes:g}: ended after {k - 1} rounds')
            break
        row = launch_round(k, domain, nodes, rng.uniform(0.2, args.max_delay_s), keep)
        rows.append(res.add(**row))
        say(k, args.stops, row, f"left {row['left']}")
    summary = summarise(res, rows, ' of ros2 launch')
    res.note('exit code as docs/robot.md says (Ctrl-C 0, SIGTERM -15; a Ctrl-C in the '
             "ros2 command's start-up, before the launch file: 2 or -2): "
             f"{sum(r['rc_expected'] for r in rows)} of {len(rows)}")
    res.write(['signal', 'rc', 'outcome', 'rounds'], md_rows=summary)


def main() -> None:
    """Run the rounds, print and write the outcome counts."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--stops', type=int, default=500)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--max-delay-s', type=float, default=8.0)
    ap.add_argument('--nodes', default='', help='comma-separated nodes (default: all)')
    ap.add_argument('--launch', action='store_true', help='stop ros2 launch (on a robot)')
    ap.add_argument('--max-minutes', type=float, default=0.0,
                    help='end after the round under way at this time (0: all --stops)')
    benchlib.common_args(ap)
    args = ap.parse_args()
    name = 'stop_loop_launch' if args.launch else 'stop_loop'
    res = benchlib.Results(name, 'The perception container stopped at any moment' +
                           (' (ros2 launch)' if args.launch else ''),
                           f'--stops {args.stops} --seed {args.seed}', args.machine, args.out)
    rng = random.Random(args.seed)
    nodes = [n for n in args.nodes.split(',') if n]
    keep = res.dir / 'stop_loop_rounds'
    keep.mkdir(parents=True, exist_ok=True)
    if args.launch:
        main_launch(args, res, rng, nodes, keep)
        return
    with tempfile.TemporaryDirectory() as tmp:
        env = procs.ros_env(procs.free_domain_id())
        params = params_file(pathlib.Path(tmp), nodes)
        rows = []
        for k in range(1, args.stops + 1):
            row = one_round(k, env, params, rng.uniform(0.2, args.max_delay_s), keep)
            if rows:
                rows[-1]['left_after_next_start'] = row.pop('prev_left_after_start')
            else:
                row.pop('prev_left_after_start')
            rows.append(res.add(**row))
            say(k, args.stops, row, f"/dev/shm left {row['left_in_shm']}")
    summary = summarise(res, rows, '')
    left = [r['left_in_shm'] for r in rows]
    after = [r['left_after_next_start'] for r in rows if r['left_after_next_start'] is not None]
    res.note(f'/dev/shm sets no live process owns right after a stop: {sum(left)} in '
             f'{sum(1 for v in left if v)} round(s); still there after the next start: '
             f'{sum(after)} in {sum(1 for v in after if v)} round(s)')
    res.write(['signal', 'rc', 'outcome', 'rounds'], md_rows=summary)


if __name__ == '__main__':
    main()
