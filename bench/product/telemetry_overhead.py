# Copyright 2026 edge_infer contributors. Apache-2.0.
"""CPU cost of the power sampler, and the rate it achieves.

    ./run.sh exec python bench/product/telemetry_overhead.py [--rate 100] [--seconds 10]

Runs the PowerMeter on the best source this machine has (the estimator where
there is no sensor) and reports the process's CPU time per wall second
(psutil; user + system) with the sampler running, against the same idle
process without it, measured side by side in one run. Writes
``telemetry_overhead.csv`` / ``.md`` (benchlib).
"""

import argparse
import time

import benchlib
from edge_infer.telemetry import discover, PowerMeter
import psutil


def cpu_fraction(seconds: float) -> float:
    """Return this process's CPU seconds per wall second over ``seconds``."""
    proc = psutil.Process()
    c0, w0 = proc.cpu_times(), time.monotonic()
    time.sleep(seconds)
    c1, w1 = proc.cpu_times(), time.monotonic()
    return (c1.user + c1.system - c0.user - c0.system) / (w1 - w0)


def main() -> None:
    """Measure; print and save the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--rate', type=float, default=100.0, help='sampling rate, Hz')
    ap.add_argument('--seconds', type=float, default=10.0, help='measurement length')
    benchlib.common_args(ap)
    args = ap.parse_args()
    seconds = min(args.seconds, 2.0) if args.quick else args.seconds
    res = benchlib.Results('telemetry_overhead', 'CPU cost of the power sampler, and the rate '
                           'it achieves', '(product)', args.machine, args.out)
    idle = cpu_fraction(seconds / 2)
    meter = PowerMeter(discover(log=lambda s: None), rate_hz=args.rate, log=print)
    meter.start()
    time.sleep(0.5)
    busy = cpu_fraction(seconds)
    rate = meter.achieved_rate_hz(window_s=seconds)
    meter.stop()
    print(f'source {meter.source_name}, requested {args.rate:g} Hz, achieved {rate:.1f} Hz '
          f'over {seconds:g} s')
    print(f'process CPU: {100 * idle:.2f} % of one core idle, {100 * busy:.2f} % with the '
          f'sampler -> sampler cost {100 * (busy - idle):.2f} % of one core '
          f'({1e6 * (busy - idle) / max(rate, 1e-9):.0f} us CPU per sample)')
    res.add(source=meter.source_name, requested_hz=args.rate, achieved_hz=rate,
            seconds=seconds, idle_cpu_pct=100 * idle, sampler_cpu_pct=100 * busy,
            cost_pct=100 * (busy - idle), us_per_sample=1e6 * (busy - idle) / max(rate, 1e-9))
    res.note(f'process CPU time (psutil, user + system) per wall second: idle over '
             f'{seconds / 2:g} s, then with the sampler over {seconds:g} s; % of one core')
    res.write(['source', 'requested_hz', 'achieved_hz', 'idle_cpu_pct', 'sampler_cpu_pct',
               'cost_pct', 'us_per_sample'],
              ['source', 'requested Hz', 'achieved Hz', 'CPU idle %', 'CPU with sampler %',
               'sampler cost %', 'us CPU per sample'])


if __name__ == '__main__':
    main()
