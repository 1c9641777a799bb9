# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The demo's plots: latency per frame and model, power over time with the inference windows."""

import pathlib


def plot_latency(path: pathlib.Path, results: dict, stamp_ns) -> None:
    """Plot each model's per-frame latency and its distribution (results: node -> [msg])."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for name, msgs in results.items():
        if not msgs:
            continue
        t0 = stamp_ns(msgs[0].header)
        t = [(stamp_ns(m.header) - t0) / 1e9 for m in msgs]
        inf = [m.inference_ms for m in msgs]
        tot = [m.preprocess_ms + m.inference_ms + m.postprocess_ms for m in msgs]
        ax1.plot(t, tot, '.', ms=3, label=f'{msgs[0].model} frame total')
        ax1.plot(t, inf, '-', lw=0.8, label=f'{msgs[0].model} inference')
        ax2.hist(tot, bins=40, alpha=0.6, label=msgs[0].model)
    ax1.set_xlabel('frame stamp (s from first result)')
    ax1.set_ylabel('ms')
    ax1.set_title('per-frame latency in the container')
    ax1.legend(fontsize=7)
    ax2.set_xlabel('frame total (ms)')
    ax2.set_ylabel('frames')
    ax2.set_title('latency distribution')
    ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_power(path: pathlib.Path, power: list, energy: dict, stamp_ns) -> None:
    """Plot power over time, with each model's inference windows drawn under it."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    if not power:
        return
    t0 = stamp_ns(power[0].header)
    fig, (ax, ax_e) = plt.subplots(2, 1, figsize=(11, 6), sharex=True,
                                   gridspec_kw={'height_ratios': [3, 1]})
    t = [(stamp_ns(p.header) - t0) / 1e9 for p in power]
    ax.plot(t, [p.total_watts for p in power], '-', lw=1, color='k',
            label='total (mean per message)')
    ax.fill_between(t, [p.min_watts for p in power],
                    [p.max_watts for p in power], color='0.8',
                    label='min-max of internal samples')
    src = power[-1]
    kind = 'measured' if src.measured else 'ESTIMATED'
    ax.set_title(f"board power, source '{src.source}' ({kind}), "
                 f'{src.sample_rate_hz:.0f} Hz internal sampling')
    ax.set_ylabel('W')
    ax.legend(fontsize=7, loc='upper right')
    colours = ('tab:blue', 'tab:orange', 'tab:green', 'tab:red')
    for row, (name, recs) in enumerate(energy.items()):
        c = colours[row % len(colours)]
        spans = [((stamp_ns(r.window_start) - t0) / 1e9, r.latency_ms / 1e3)
                 for r in recs if stamp_ns(r.window_start) > 0]
        if spans:
            ax_e.broken_barh(spans, (row + 0.1, 0.8), color=c)
        ax_e.text(0, row + 0.5, f' {recs[0].model if recs else name}', va='center',
                  fontsize=7)
    ax_e.set_yticks([])
    ax_e.set_xlabel('time (s from first power message)')
    ax_e.set_title('inference windows (metered)', fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
