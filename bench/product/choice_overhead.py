#!/usr/bin/env python3
# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What the run-time choice adds to a frame, for checkouts then and now.

    ./run.sh exec python bench/product/choice_overhead.py [TREE ...] [--rounds 7] [--frames 2000]

Each TREE is a checkout's root (default: this one; e.g. a ``git worktree
add /tmp/old <commit>``). In each round, each tree runs in a fresh process
(interleaved, in turn): MobileNetV2's real preprocessing and a session that
returns at once (:mod:`edge_infer.testing.simulated`, zero latency), once
through ``Model.infer`` alone, once through ``LiveChoice.infer`` with
the default settings, online re-selection on, two runners-up open (what
choosing adds before the frame's result: ``path``), and once through
``infer`` then ``after_frame`` (what it adds to the frame thread in all:
``whole``; a runner-up timed within the duty included). Medians over
rounds, with p90 and max.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

import benchlib

HERE = pathlib.Path(__file__).resolve().parents[2]     # the checkout

ROUND = r"""
import json, sys, time
import cv2
from edge_infer import paths
from edge_infer.backends.live.choice import LiveChoice
from edge_infer.backends.live.rule import LiveSettings
from edge_infer.backends.measure.profiling import CandidateResult, ProfileRun
from edge_infer.core.image import Frame
from edge_infer.core.registry import load_registry
from edge_infer.testing.simulated import SimBackend, SimManager
frames_n = int(sys.argv[1])
spec = load_registry(paths.config_dir() / 'models.yaml')['mobilenet_v2']
img = cv2.resize(cv2.imread(sys.argv[2]), (spec.input_spec.width, spec.input_spec.height))
frame = Frame(img, 'bgr')
class Wall:     # the sessions' clock: real time (a simulated run adds 0 to its t)
    t = 0.0
    monotonic, perf_counter = staticmethod(time.monotonic), staticmethod(time.perf_counter)
backends = [SimBackend(n, Wall(), lambda t: 0.0, 1) for n in ('sim/a', 'sim/b', 'sim/c')]
run = ProfileRun(model=spec.name, chosen='sim/a', why='bench')
run.results = [CandidateResult(b.name, status='ok', p50_ms=ms, p90_ms=ms, p99_ms=ms, runs=20,
                               accuracy=1.0) for b, ms in zip(backends, (1.0, 1.2, 1.5))]
live = LiveChoice(SimManager(backends), spec, paths.models_dir() / spec.file,
                  settings=LiveSettings(drift_threshold=1.5), log=lambda s: None)
live.start(backend=backends[0], run=run)
threads = getattr(live, 'background', None)
for t in (threads.threads if threads is not None else live._threads):
    t.join()
model = live.model
for _ in range(200):
    model.infer(frame); live.infer(frame); live.after_frame()
t0 = time.perf_counter()
for _ in range(frames_n):
    model.infer(frame)
bare = (time.perf_counter() - t0) / frames_n * 1e6
t0 = time.perf_counter()
for _ in range(frames_n):
    live.infer(frame)
chosen = (time.perf_counter() - t0) / frames_n * 1e6
t0 = time.perf_counter()
for _ in range(frames_n):
    live.infer(frame); live.after_frame()
whole = (time.perf_counter() - t0) / frames_n * 1e6
live.close()
print(json.dumps({'bare_us': bare, 'choice_us': chosen, 'whole_us': whole}))
"""


def p90(values):
    """Return the 90th percentile of ``values`` (nearest rank)."""
    v = sorted(values)
    return v[min(len(v) - 1, int(round(0.9 * (len(v) - 1))))]


def main(argv=None) -> int:
    """Run the interleaved rounds; print and save the table."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('trees', nargs='*', default=[str(HERE)])
    ap.add_argument('--rounds', type=int, default=7)
    ap.add_argument('--frames', type=int, default=2000)
    benchlib.common_args(ap)
    args = ap.parse_args(argv)
    rounds, frames = (2, 300) if args.quick else (args.rounds, args.frames)
    sys.path.insert(0, str(HERE / 'edge_infer'))
    from edge_infer import paths
    photo = str(paths.cache_dir() / 'photos' / 'astronaut.png')
    res = benchlib.Results('choice_overhead', 'What the run-time choice adds to a frame',
                           'issue 53 (unchanged or better)', args.machine, args.out)
    added = {t: [] for t in args.trees}
    whole = {t: [] for t in args.trees}
    for r in range(rounds):
        for tree in args.trees:
            env = dict(os.environ, PYTHONPATH=str(pathlib.Path(tree) / 'edge_infer'))
            out = subprocess.run([sys.executable, '-c', ROUND, str(frames), photo], env=env,
                                 capture_output=True, text=True, timeout=600, cwd='/tmp')
            if out.returncode != 0:
                print(out.stderr[-2000:], file=sys.stderr)
                return 1
            got = json.loads(out.stdout.strip().splitlines()[-1])
            added[tree].append(got['choice_us'] - got['bare_us'])
            whole[tree].append(got['whole_us'] - got['bare_us'])
            print(f'round {r + 1} {tree}: bare {got["bare_us"]:.1f} us, through the choice '
                  f'{got["choice_us"]:.1f} us, with after_frame {got["whole_us"]:.1f} us')
    for tree, vals in added.items():
        s = benchlib.summary(vals)
        w = benchlib.summary(whole[tree])
        res.add(tree=benchlib.shown_path(tree), rounds=len(vals), path_us_p50=s['median'],
                path_us_p90=p90(vals), path_us_max=s['max'], whole_us_p50=w['median'],
                whole_us_p90=p90(whole[tree]), whole_us_max=w['max'])
        print(f'{tree}: +{statistics.median(vals):.1f} us per frame before its result, '
              f'+{w["median"]:.1f} us with after_frame (medians of {len(vals)})')
    res.note(f'{frames} frames per round and tree, {rounds} interleaved rounds; load: '
             f'whatever else ran on the machine (see the date)')
    res.write(['tree', 'rounds', 'path_us_p50', 'path_us_p90', 'path_us_max',
               'whole_us_p50', 'whole_us_p90', 'whole_us_max'])
    return 0


if __name__ == '__main__':
    sys.exit(main())
