# Copyright 2026 edge_infer contributors. Apache-2.0.
"""``edge_infer backends`` and ``edge_infer profile``: the backend manager for people.

    edge_infer backends [--no-cache]
    edge_infer profile MODEL [--objective latency|energy|edp] [--max-latency-ms X]
                       [--budget S] [--no-cache] [--energy] [--png FILE]
                       [--remote-servers grpc://host:port,...]

The nodes run the same code (BackendManager.choose); these print what it
found: a table (backend, status, run p50/p90/max, the CPU preprocessing per
frame its input kind needs (``pre``: the latency objective ranks on run +
pre), runs ('cut' when timing
stopped early because the candidate was clearly slower than the best so far),
energy per inference, accuracy vs the CPU fp32 reference, chosen) and write a
bar chart.
"""

import argparse
import math
import pathlib
import sys
from typing import List

from .config import load_config
from .manager import BackendManager
from .measure.profiling import CandidateResult
from .measure.selection import OBJECTIVES


def _fmt(v: float, spec: str = '.2f') -> str:
    return format(v, spec) if isinstance(v, float) and math.isfinite(v) else '-'


def table(results: List[CandidateResult]) -> str:
    """Return the results as an aligned text table."""
    rows = [('backend', 'status', 'p50 ms', 'p90 ms', 'max ms', 'pre ms', 'runs', 'J/inf',
             '+-J', 'accuracy', 'chosen', 'reason')]
    for r in results:
        runs = str(r.runs or '-') + (' cut' if r.cut_short else '')
        rows.append((r.backend, r.status, _fmt(r.p50_ms), _fmt(r.p90_ms), _fmt(r.max_ms),
                     _fmt(r.preprocess_ms), runs,
                     _fmt(r.energy_j, '.4f'), _fmt(r.energy_error_j, '.4f'),
                     _fmt(r.accuracy, '.3f'), '*' if r.chosen else '',
                     r.reason if r.status != 'ok' else r.accuracy_detail))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for k, row in enumerate(rows):
        cells = [c.ljust(w) if i in (0, 1) else c.rjust(w) for i, (c, w) in
                 enumerate(zip(row, widths))]
        lines.append('  '.join(cells) + '  ' + row[-1])
        if k == 0:
            lines.append('-' * (sum(widths) + 2 * len(widths) + 6))
    return '\n'.join(lines)


def bar_chart(path: pathlib.Path, model: str, results: List[CandidateResult],
              objective: str) -> str:
    """Write a PNG: p50 latency (p90 as whisker) and energy per candidate that ran.

    Return '' when written, else why not (matplotlib is optional: the table
    above is the result; the chart only draws it).
    """
    try:
        import matplotlib
    except ImportError as exc:
        return f'not drawn: matplotlib not installed ({exc}); pip install matplotlib'
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    ran = [r for r in results if math.isfinite(r.p50_ms)]
    if not ran:
        return 'not drawn: no candidate ran'
    energy = any(math.isfinite(r.energy_j) for r in ran)
    size = (11 if energy else 7, 0.5 * len(ran) + 1.8)
    fig, axes = plt.subplots(1, 2 if energy else 1, figsize=size, squeeze=False)
    names = [r.backend + ('  *' if r.chosen else '') for r in ran]
    colours = ['tab:green' if r.chosen else ('tab:red' if r.status != 'ok' else 'tab:blue')
               for r in ran]
    ax = axes[0][0]
    ax.barh(names, [r.p50_ms for r in ran], color=colours,
            xerr=[[0] * len(ran), [max(0.0, r.p90_ms - r.p50_ms) for r in ran]])
    ax.set_xlabel('latency p50 (ms), whisker to p90')
    ax.invert_yaxis()
    ax.set_title(f'{model}, objective {objective}: green = chosen, red = rejected',
                 fontsize=10)
    if energy:
        ax2 = axes[0][1]
        ax2.barh(names, [r.energy_j if math.isfinite(r.energy_j) else 0 for r in ran],
                 color=colours, xerr=[r.energy_error_j if math.isfinite(r.energy_error_j)
                                      else 0 for r in ran])
        ax2.invert_yaxis()
        src = next((r.energy_source for r in ran if r.energy_source), '')
        ax2.set_xlabel(f'energy per inference (J), source {src}')
        ax2.set_title('energy per inference (+- error bound)')
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return ''


class ProgressBar:
    """A one-line progress bar on a terminal (stderr), redrawn in place."""

    def __init__(self, stream=None, width: int = 24):
        self.stream = stream or sys.stderr
        self.width = width
        self.shown = False

    def __call__(self, ev: dict) -> None:
        """Draw one progress event of BackendManager.profile."""
        done = int(self.width * (ev['step'] - 1) / max(1, ev['total']))
        bar = '#' * done + '.' * (self.width - done)
        line = (f"\r[{bar}] {ev['model']} {ev['step']}/{ev['total']} {ev['what']}: "
                f"{ev['doing']}, ~{ev['left_s']:.0f} s left")
        self.stream.write(line[:160].ljust(160))
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        """End the bar's line."""
        if self.shown:
            self.stream.write('\r' + ' ' * 160 + '\r')
            self.stream.flush()


def backends_main(argv=None) -> int:
    """List every candidate with availability and the reason."""
    ap = argparse.ArgumentParser(prog='edge_infer backends', description=__doc__.splitlines()[0])
    ap.add_argument('--no-cache', action='store_true', help='probe again, ignore cached probes')
    args = ap.parse_args(argv)
    mgr = BackendManager(config=load_config(), log=lambda s: None)
    print('board: ' + ', '.join(f'{k}={v}' for k, v in mgr.board.items() if v))
    rows = mgr.probe_all(use_cache=not args.no_cache)
    w = max(len(b.name) for b, _, _ in rows)
    for b, ok, why in rows:
        print(f"{b.name:<{w}}  {'available  ' if ok else 'unavailable'}  "
              f'{b.device:<8} {b.precision:<5} {why}')
    print(f'{sum(ok for _, ok, _ in rows)} of {len(rows)} candidates available '
          f'(fp16/int8 variants are per model: see edge_infer profile)')
    return 0


def profile_main(argv=None) -> int:
    """Profile one registry model on every candidate; print the table, write the chart."""
    from .. import paths
    from ..core.registry import load_models
    ap = argparse.ArgumentParser(prog='edge_infer profile', description=__doc__.splitlines()[0])
    ap.add_argument('model', help='registry name (config/models.yaml)')
    ap.add_argument('--objective', choices=OBJECTIVES, default='latency')
    ap.add_argument('--max-latency-ms', type=float, default=0.0)
    ap.add_argument('--min-accuracy', type=float, default=0.0)
    ap.add_argument('--budget', type=float, default=None, help='seconds per candidate')
    ap.add_argument('--no-cache', action='store_true', help='measure everything again')
    ap.add_argument('--energy', action='store_true',
                    help='meter energy per inference (power meter at 100 Hz)')
    ap.add_argument('--remote-servers', default='',
                    help='Triton servers as candidates too: grpc://host:port[,...] '
                         '(adds to remote_servers of config/backends.yaml)')
    ap.add_argument('--png', type=pathlib.Path, default=None,
                    help='bar chart path (default: out/profile_<model>.png)')
    args = ap.parse_args(argv)
    reg = load_models()         # the package's models and yours (edge_infer model add)
    if args.model not in reg:
        print(f"edge_infer profile: model '{args.model}' not in the registry "
              f"(known: {', '.join(sorted(reg))})", file=sys.stderr)
        return 2
    spec = reg[args.model]
    meter, meters = None, None
    if args.energy:
        from ..telemetry.process_meter import ProcessMeter, settings
        meters = ProcessMeter()
        meter = meters.acquire(settings(), log=lambda s: None)
    config = {**load_config(), 'make_variants': True}     # a tool may make the files
    if args.budget:
        config['budget_s'] = args.budget
    config['remote_servers'] = list(config['remote_servers'] or []) + [
        u for u in args.remote_servers.split(',') if u]
    # a bar on a terminal, one line per candidate otherwise (never both)
    bar = ProgressBar() if sys.stderr.isatty() else None
    mgr = BackendManager(config=config, log=print, meter=meter)
    try:
        _, run = mgr.choose(spec, paths.models_dir() / spec.file, objective=args.objective,
                            max_latency_ms=args.max_latency_ms, min_accuracy=args.min_accuracy,
                            use_cache=not args.no_cache, progress=bar)
    except Exception as exc:  # BackendError / ValueError: one line, not a traceback
        print(f'edge_infer profile: {exc}', file=sys.stderr)
        return 1
    finally:
        if bar is not None:
            bar.close()
        if meters is not None:
            meters.release()
    print(table(run.results))
    print(f'chosen: {run.why}')
    cached = sum(run.from_cache.values())
    if cached:
        print(f'({cached} of {len(run.results)} rows from the profile cache; --no-cache '
              f'measures again)')
    png = args.png or pathlib.Path('out') / f'profile_{spec.name}.png'
    png.parent.mkdir(parents=True, exist_ok=True)
    why_not = bar_chart(png, spec.name, run.results, args.objective)
    print(f'chart: {why_not or png.resolve()}')
    return 0
