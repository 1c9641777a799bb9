# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Replay a recorded regret run through LiveChoice on a simulated clock (the rule, real frames).

    ./run.sh exec python bench/product/replay_selection.py \
        [--csv bench/results/<machine>/selection_under_load_mobilenet_v2.csv] \
        [--set duty=0.05 --set reserve_s=4 ...] [--phase-s 20] [--seeds 1]

``bench/product/selection_under_load.py --out`` writes, per frame, what every pinned
candidate took on that frame (their runs side by side, shuffled order). This
replays those frames through :class:`edge_infer.backends.live.LiveChoice`
with simulated sessions (edge_infer.testing.simulated): the chosen one's
run on a frame takes what its pinned session took on it, a runner-up run
what the runner-up's pinned session took, and the clock moves by that
(between frames it jumps to the frame's recorded time). The foreign load it
is told is the generator's nominal share 0.5 s late (the /proc windows see
it 1-2 s after it starts in the real run).

The same recorded frames give every rule variant the same load, so variants
compare without the run-to-run noise of the live benchmark (two runs of it
differ by more than the effects tuned here). It does not replace the live
benchmark: a runner-up run here costs no real CPU, so it cannot slow the
chosen one, and the pace follows recorded times. It prints, per phase, the
regret (the replayed runtime's time / the best pinned candidate's), the
settle time after each load change (the live benchmark's definition), the
switches and the runner-up share of compute, and writes the table through
benchlib (``replay_selection.csv`` / ``.md``; with ``--seeds`` > 1 the spread
over the replays per phase). ``--quick``: one replay.
"""

import argparse
import csv
import math
import pathlib
import statistics

import benchlib
from edge_infer import paths
from edge_infer.backends.live.choice import LiveChoice, LiveSettings
from edge_infer.backends.measure.profiling import calibration_frames, CandidateResult, ProfileRun
from edge_infer.core.registry import load_registry
from edge_infer.testing.observer import RecordingObserver
from edge_infer.testing.simulated import Clock, SimBackend, SimManager

from selection_under_load import analyse

META = {'after', 'before', 'event', 'load', 'phase', 'seconds', 't'}


class Replay:
    """The recorded frame now being served: what each candidate took on it."""

    def __init__(self):
        self.row = {}

    def latency(self, name: str):
        """Return the latency function of candidate ``name``: its time on the frame."""
        return lambda t: self.row[name]


def threads_of(name: str):
    """Return the intra-op threads a candidate's name says (t1, t2), else None."""
    return 1 if '/t1' in name else 2 if '/t2' in name else None


def read(path: pathlib.Path):
    """Return the frame rows (floats for times) and the pinned candidates' names."""
    with open(path, newline='') as f:
        rows = [r for r in csv.DictReader(f) if not r.get('event')]
    names = [k for k in rows[0] if k not in META and ':' not in k]  # the pinned ones
    out = []
    for r in rows:
        row = {'phase': r['phase'], 't': float(r['t']), 'load': float(r['load'] or 0)}
        row.update({n: float(r[n]) for n in names})
        out.append(row)
    return out, names


def replay(rows, names, settings: LiveSettings, model='mobilenet_v2', lag_s=0.5,
           delay_s=0.0):
    """Serve the rows through a LiveChoice; return (rows with 'sim' columns, live).

    ``delay_s``: the first runner-up run waits this long (seeds shift the frames
    the runners-up land on). ``live.selector.observer`` holds its samples and cues.
    """
    clock = Clock()
    spec = load_registry(paths.config_dir() / 'models.yaml')[model]
    frames = calibration_frames(2)[0]
    rep = Replay()
    backends = [SimBackend(n, clock, rep.latency(n), threads_of(n)) for n in names]
    first = rows[0]['phase']
    quiet = {n: benchlib.summary([r[n] for r in rows if r['phase'] == first])['median']
             for n in names}
    ranked = sorted(names, key=quiet.get)
    run = ProfileRun(model=spec.name, chosen=ranked[0], why='replay: quiet phase p50')
    run.results = [CandidateResult(n, status='ok', p50_ms=quiet[n], p90_ms=quiet[n],
                                   p99_ms=quiet[n], runs=20, accuracy=1.0) for n in names]
    loads = []        # (clock time, nominal share) as the phases went

    def foreign():
        seen = [share for t, share in loads if t <= clock.t - lag_s]
        return seen[-1] if seen else 0.0
    live = LiveChoice(SimManager(backends), spec, paths.models_dir() / spec.file,
                      settings=settings, log=lambda s: None, foreign_load=foreign,
                      clock=clock, observer=RecordingObserver())
    live.start(backend=next(b for b in backends if b.name == ranked[0]), run=run)
    for t in live.background.threads:
        t.join()
    live.selector.pacing.next_probe = live.selector.pacing.next_eager = clock.t + delay_s
    out = []
    base, phase, offset = clock.t, None, 0.0
    for r in rows:
        if r['phase'] != phase:     # phases follow one another on the clock
            phase, offset = r['phase'], clock.t - base + 0.5
        at = base + offset + r['t']
        if not loads or loads[-1][1] != r['load']:
            loads.append((at, r['load']))
        clock.t = max(clock.t, at)
        rep.row = r
        res = live.infer(frames[len(out) % len(frames)])
        row = dict(r)
        row['sim'], row['sim:ran'] = res.inference_ms, res.backend
        row['sim:backend'] = live.backend_name      # the choice (after the frame)
        row['t_clock'] = clock.t
        live.after_frame()
        out.append(row)
    return out, live


def phases_of(rows, phase_s: float):
    """Return [(phase, load changes at s into it)] as the live benchmark runs them."""
    seen = []
    for r in rows:
        if r['phase'] not in seen:
            seen.append(r['phase'])
    at = {'0 %': [], '50 %': [0.0], '100 %': [0.0]}
    return [(p, at.get(p, [phase_s / 4, phase_s * 3 / 4])) for p in seen]


def summary(rows, names, settings, phase_s=20.0, delay_s=0.0):
    """Return (table rows of analyse(), runner-up share, switches, runs) for one variant."""
    out, live = replay(rows, names, settings, delay_s=delay_s)
    table = analyse(out, {'sim': None}, dict.fromkeys(names), phases_of(out, phase_s))
    # the whole run's runner-up time / chosen time (overhead() covers the last horizon_s)
    over = live.overhead(since_start=True)
    return table, over, live.switches, len(live.selector.observer.pairs)


def main() -> None:
    """Replay one variant (``--set`` overrides LiveSettings fields); print and save its table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--csv', type=pathlib.Path, default=pathlib.Path(__file__).parents[1] /
                    'results' / 'x86_64-amd-epyc-2cpu' /
                    'selection_under_load_mobilenet_v2.csv')
    ap.add_argument('--set', action='append', default=[], metavar='FIELD=VALUE')
    ap.add_argument('--phase-s', type=float, default=20.0)
    ap.add_argument('--seeds', type=int, default=1,
                    help='replays, the first runner-up run delayed by 0-2 s (evenly)')
    benchlib.common_args(ap)
    args = ap.parse_args()
    if args.quick:
        args.seeds = 1
    res = benchlib.Results('replay_selection', 'A recorded regret run replayed through '
                           'LiveChoice on a simulated clock', 'issue 35 (the rule, real frames)',
                           args.machine, args.out)
    res.notes.append(f'replayed: {benchlib.shown_path(str(args.csv))}; settings changed: '
                     + (', '.join(args.set) or 'none') + f'; phases of {args.phase_s:g} s')
    st = LiveSettings(drift_threshold=0)
    for item in args.set:
        key, _, value = item.partition('=')
        if not hasattr(st, key):
            raise SystemExit(f'--set {item}: LiveSettings has no field {key!r}')
        kind = type(getattr(st, key))
        setattr(st, key, value.lower() in ('1', 'true', 'yes', 'on') if kind is bool
                else kind(value))
    rows, names = read(args.csv)
    if args.seeds > 1:
        return several(rows, names, st, args, res)
    table, over, switches, runs = summary(rows, names, st, args.phase_s)
    res.note(f'{args.csv.name}: {len(rows)} frames; pinned {", ".join(names)}')
    print('| phase | regret | settled after a load change | backends used |')
    print('|---|---|---|---|')
    for r in table:
        settle = '; '.join(f'at {at:.0f} s: ' + (f'{s:.1f} s' if s is not None else 'NOT')
                           for at, _, s in r['settle']) or '-'
        print(f"| {r['phase']} | {r['regret']:.3f} | {settle} | {r['used']} |")
        res.add(phase=r['phase'], regret=r['regret'], settle=settle, used=r['used'],
                frames=r['frames'], choice_regret=r['choice'])
    res.note(f'runner-up share {over:.1%} ({runs} runs); {len(switches)} switch(es)')
    for s in switches:
        res.note(f"switch {s['from']} -> {s['to']}: {s['evidence']}")
    worst = [s for r in table for _, _, s in r['settle']]
    if worst:
        res.note('worst settle: ' + ('NOT settled' if None in worst else
                                     f'{max(worst):.1f} s') + ' (goal 10 s)')
    assert all(math.isfinite(r['regret']) for r in table)
    res.write(['phase', 'regret', 'settle', 'used'],
              ['phase', 'regret', 'settled after a load change', 'backends used'],
              md_rows=[dict(r, regret=f"{r['regret']:.3f}") for r in res.rows])


def several(rows, names, st, args, res) -> None:
    """Replay ``args.seeds`` times (shifted runner-up runs); print and save the spread."""
    settles, regrets, shares, nswitch = [], {}, [], []
    for k in range(args.seeds):
        table, over, switches, _ = summary(rows, names, st, args.phase_s,
                                           delay_s=2.0 * k / args.seeds)
        worst = [s for r in table for _, _, s in r['settle']]
        settles.append(float('inf') if None in worst else max(worst, default=0.0))
        for r in table:
            regrets.setdefault(r['phase'], []).append(r['regret'])
        shares.append(over)
        nswitch.append(len(switches))
    q = statistics.quantiles
    ok = sum(1 for s in settles if s <= 10.0)
    reg = {p: benchlib.summary(v) for p, v in regrets.items()}
    share = benchlib.summary(shares)
    res.note(f'{args.csv.parent.name}/{args.csv.name}, {args.seeds} replays: worst settle '
             f'<= 10 s in {ok}/{args.seeds}, median {benchlib.summary(settles)["median"]:.1f} s; '
             + '; '.join(f'{p} regret median {reg[p]["median"]:.3f} max {reg[p]["max"]:.3f} '
                         f'(> 1.05 in {sum(1 for x in v if x > 1.05)})'
                         for p, v in regrets.items())
             + f'; share median {share["median"]:.1%} max {share["max"]:.1%}; '
             f'switches median {benchlib.summary(nswitch)["median"]:g} '
             f'(p90 {q(nswitch, n=10)[-1]:.0f})')
    for p, v in regrets.items():
        res.add(phase=p, replays=len(v), regret_median=reg[p]['median'], regret_min=reg[p]['min'],
                regret_max=reg[p]['max'], over_1_05=sum(1 for x in v if x > 1.05))
    res.write(['phase', 'replays', 'regret_median', 'regret_min', 'regret_max', 'over_1_05'],
              ['phase', 'replays', 'regret median', 'min', 'max', 'replays over 1.05'],
              md_rows=[dict(r, **{k: f'{r[k]:.3f}' for k in ('regret_median', 'regret_min',
                                                             'regret_max')})
                       for r in res.rows])


if __name__ == '__main__':
    main()
