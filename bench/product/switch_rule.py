# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The online switch rule on a simulated clock: false switches between equals, time to follow.

    ./run.sh exec python bench/product/switch_rule.py [--minutes 30] [--seeds 6]

Two candidates of equal speed serve frames at 10 fps (the demo bag's rate)
for ``--minutes`` simulated minutes per seed, through the real
:class:`edge_infer.backends.live.LiveChoice` (runners-up sampled, served
frames, the switch rule) with :mod:`edge_infer.testing.simulated` sessions:
every switch is a false one. Two noise models:

- ``iid``: 10 % log-normal noise per run, independent;
- ``bursts``: the same, times a load shared by both candidates that
  flips between calm (1.0x) and busy (1.4-1.8x) every 0.5-4 s (as the other
  models of a four-model container come and go): a served frame is judged
  against the chosen one's frames around it (until 2026-11-27: the
  frames before it alone, which a burst's edge biased).

Then the time to follow a real change: the chosen one becomes 2x slower at
t = 60 s (``iid`` noise): seconds until the other one serves.

Each rule is run on the same seeds: ``before`` (one look after every
pair, margin 3 %, no dwell: the rule until 2026-11-26) and ``after`` (the
defaults: a first look, then one confirming look on fresh pairs, margin
4 %, twice the margin for going back within 60 s). Prints false switches
per 10 minutes and the follow time (median and max over seeds), and writes
them to ``switch_rule.csv`` / ``.md`` through benchlib.
"""

import argparse
import math
import random
import sys

import benchlib
import cv2
from edge_infer import paths
from edge_infer.backends.live.choice import LiveChoice, LiveSettings
from edge_infer.backends.measure.profiling import calibration_frames, CandidateResult, ProfileRun
from edge_infer.core.image import Frame
from edge_infer.core.registry import load_registry
from edge_infer.testing.simulated import Clock, SimBackend, SimManager

RULES = {
    'before': {'min_margin': 0.03, 'confirm_pairs': 0, 'dwell_s': 0.0},
    'after': {},
}


def bursts(seed: int):
    """Return load(t): a factor shared by both candidates, calm or busy in turns."""
    rng = random.Random(seed)
    edges = []
    t, busy = 0.0, False
    while t < 1e5:
        edges.append((t, rng.uniform(1.4, 1.8) if busy else 1.0))
        t += rng.uniform(0.5, 4.0)
        busy = not busy
    import bisect
    times = [e[0] for e in edges]

    def load(now: float) -> float:
        return edges[bisect.bisect_right(times, now - 1000.0) - 1][1]
    return load


def noisy(base_ms: float, sigma: float, seed: int, load=None, slow_after=None):
    rng = random.Random(seed)

    def latency(t: float) -> float:
        ms = base_ms * (load(t) if load else 1.0)
        if slow_after is not None and t >= slow_after:
            ms *= 2.0
        return ms * math.exp(rng.gauss(0.0, sigma))
    return latency


def simulate(rule: dict, a, b, seconds: float, frames, spec, model_path,
             fps: float = 10.0):
    """Serve ``seconds`` of frames on candidates a, b (a chosen); return (live, served)."""
    clock = Clock()
    backends = [SimBackend('fake/a', clock, a, 1), SimBackend('fake/b', clock, b, 1)]
    run = ProfileRun(model=spec.name, chosen='fake/a', why='bench')
    run.results = [CandidateResult(x.name, status='ok', p50_ms=5.0, p90_ms=5.0, p99_ms=5.0,
                                   runs=20, accuracy=1.0) for x in backends]
    live = LiveChoice(SimManager(backends), spec, model_path,
                      settings=LiveSettings(drift_threshold=0, **rule), log=lambda s: None,
                      clock=clock)
    live.start(backend=backends[0], run=run)
    for th in live.background.threads:
        th.join()
    served = []
    end, k = clock.t + seconds, 0
    t0 = clock.t
    while clock.t < end:
        start = clock.t
        live.infer(frames[k % len(frames)])
        served.append((clock.t - t0, live.backend_name))
        live.after_frame()
        clock.t = max(clock.t, start + 1.0 / fps)
        k += 1
    live.close()
    return live, served


def main() -> int:
    """Run both rules on the same seeds; print and save the table."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--minutes', type=float, default=30.0)
    ap.add_argument('--seeds', type=int, default=6)
    benchlib.common_args(ap)
    args = ap.parse_args()
    if args.quick:
        args.minutes, args.seeds = min(args.minutes, 2.0), min(args.seeds, 2)
    res = benchlib.Results('switch_rule', 'The online switch rule on a simulated clock: '
                           'false switches between equals, time to follow', '(product)',
                           args.machine, args.out)
    spec = load_registry(paths.config_dir() / 'models.yaml')['mobilenet_v2']
    size = (spec.input_spec.width, spec.input_spec.height)
    frames = [Frame(cv2.resize(f.pixels, size), f.color) for f in calibration_frames(2)[0]]
    model_path = paths.data_home() / 'models' / spec.file
    print(f'{args.seeds} seeds x {args.minutes:g} simulated minutes, 10 fps, equal candidates')
    for noise in ('iid', 'bursts'):
        for name, rule in RULES.items():
            rates, pairs = [], 0
            for seed in range(args.seeds):
                load = bursts(seed) if noise == 'bursts' else None
                live, _ = simulate(rule, noisy(5.0, 0.1, 2 * seed + 1, load),
                                   noisy(5.0, 0.1, 2 * seed + 2, load),
                                   args.minutes * 60, frames, spec, model_path)
                rates.append(len(live.switches) / args.minutes * 10)
                pairs += live.shadow_runs
            s = benchlib.summary(rates)
            print(f'{noise:6s} {name:6s}: false switches per 10 min: median '
                  f'{s["median"]:.2f}, max {s["max"]:.2f} '
                  f'({sum(rates) * args.minutes / 10:.0f} in all; {pairs} runner-up samples)',
                  flush=True)
            res.add(case=f'equal candidates, {noise} noise', rule=name,
                    figure='false switches per 10 min', median=s['median'], max=s['max'],
                    in_all=round(sum(rates) * args.minutes / 10), runner_up_samples=pairs)
    for name, rule in RULES.items():
        follow = []
        for seed in range(args.seeds):
            live, served = simulate(rule, noisy(5.0, 0.1, 2 * seed + 1, slow_after=1060.0),
                                    noisy(5.0, 0.1, 2 * seed + 2), 120.0, frames, spec,
                                    model_path)
            t = next((t for t, n in served if t >= 60.0 and n == 'fake/b'
                      and all(m == 'fake/b' for s, m in served if s >= t)), float('nan'))
            follow.append(t - 60.0)
        s = benchlib.summary(follow)
        print(f'2x slowdown {name:6s}: followed in median {s["median"]:.1f} s, '
              f'max {s["max"]:.1f} s (for good)', flush=True)
        res.add(case='chosen one 2x slower at 60 s, iid noise', rule=name,
                figure='s until the other serves for good', median=s['median'], max=s['max'])
    res.note(f'{args.seeds} seeds x {args.minutes:g} simulated minutes, 10 fps, equal '
             'candidates (5 ms, 10 % log-normal noise); median and max over seeds')
    res.note('before: one look after every pair, margin 3 %, no dwell (the rule until '
             '2026-11-26); after: the LiveSettings defaults')
    res.write(['case', 'rule', 'figure', 'median', 'max', 'in_all', 'runner_up_samples'],
              ['case', 'rule', 'figure', 'median', 'max', 'in all', 'runner-up samples'])
    return 0


if __name__ == '__main__':
    sys.exit(main())
