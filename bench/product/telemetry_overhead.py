# Copyright 2026 edge_infer contributors. Apache-2.0.
"""CPU cost of the power sampler, and the rate it achieves.

    ./run.sh exec python bench/product/telemetry_overhead.py [--rate 100] [--seconds 10]

Runs the PowerMeter on the best source this machine has (the estimator where
there is no sensor) and reports the process's CPU time per wall second
(psutil; user + system) with the sampler running, against the same idle
process without it, measured side by side in one run.
"""

import argparse
import time

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
    """Measure and print."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--rate', type=float, default=100.0, help='sampling rate, Hz')
    ap.add_argument('--seconds', type=float, default=10.0, help='measurement length')
    args = ap.parse_args()
    idle = cpu_fraction(args.seconds / 2)
    meter = PowerMeter(discover(log=lambda s: None), rate_hz=args.rate, log=print)
    meter.start()
    time.sleep(0.5)
    busy = cpu_fraction(args.seconds)
    rate = meter.achieved_rate_hz(window_s=args.seconds)
    meter.stop()
    print(f'source {meter.source_name}, requested {args.rate:g} Hz, achieved {rate:.1f} Hz '
          f'over {args.seconds:g} s')
    print(f'process CPU: {100 * idle:.2f} % of one core idle, {100 * busy:.2f} % with the '
          f'sampler -> sampler cost {100 * (busy - idle):.2f} % of one core '
          f'({1e6 * (busy - idle) / max(rate, 1e-9):.0f} us CPU per sample)')


if __name__ == '__main__':
    main()
