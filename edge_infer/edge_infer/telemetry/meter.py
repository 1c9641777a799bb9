# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Power meter: a sampler thread over a power source, cumulative energy, energy per inference.

The attribution of energy to runs is in :mod:`.attribution`; the rules are here.

Sampling
    A daemon thread reads the first source of the list at ``rate_hz``, capped
    at the source's ``max_rate_hz`` (reading faster than the sensor refreshes
    only repeats values). Deadlines are absolute (``t0 + k / rate``), so the
    mean rate holds even when a read takes part of the period; after falling
    more than one period behind, the schedule restarts instead of bursting.
    Samples go to a ring buffer bounded to ``history_s * rate_hz`` entries.

Failover
    When ``read()`` raises, the meter logs ONE warning naming the failed
    source and the error, probes the next source(s) in the list, switches to
    the first that answers, records the switch (``switches``) and goes on: the
    stream does not stop. Sources are only ever abandoned, never retried
    (the list should end with the estimator, which does not fail). If the
    last source fails, one warning says so and it is retried once a second.

Cumulative energy
    Trapezoid rule between consecutive samples, for the total and each rail
    (a rail only between two samples that both have it), from the first
    sample on; the gap across a source switch is bridged.

Energy per inference (``begin(model)`` ... ``end(token)``)
    The window [t0, t1] is integrated over the samples linearly interpolated
    at the window edges (and at every instant another run begins or ends), so
    the whole window is covered, not just the samples inside it.

    Overlap: the power at each instant is split EQUALLY among the runs active
    at that instant ("energy split by overlap time"). A run alone gets all of
    the power of its window; two runs that fully overlap get half each; a run
    that overlaps another for half its length gets P*T/2 + P*T/4. The split
    is exact for the interpolated power (breakpoints at all sample times and
    all run starts/ends).

    Rail hook: ``begin(model, rails=[...])`` (or ``model_rails={model: [...]}``
    at construction) attributes only the named rails' power to the run, shared
    among the runs that claim the same rail (e.g. the GPU rail to a GPU run).
    Default: total power, shared among the runs using total power. Do not mix
    the two modes on one board: a total-power run and a rail run would both
    count the claimed rail. If a claimed rail is missing from the samples the
    record falls back to total power and says so in ``method``.

``end()`` waits (choice documented here)
    The window's tail needs the first sample after t1. ``end(token)`` waits
    for it, at most ``min(1.5 sample periods, max_wait_s)`` (15 ms at
    100 Hz, never above 50 ms by default); if it does not come in time (a slow
    source such as a 1 Hz battery) the tail is extrapolated by holding the
    last sample and the error grows accordingly (``method`` says "tail held").
    ``end(token, callback=fn)`` does not wait, whatever the source: it returns
    None and ``fn(record)`` is called from the sampler thread once the covering
    sample arrives (keep ``fn`` short), or when the meter stops. The caller's
    thread (a node's frame thread) neither waits nor integrates: the
    estimator's record once came inside end(), 82 us p50 and up to 4 ms on the
    frame thread here (2-core EPYC), and the result then carried it; now every
    record goes out one way, after its result (nodes/energy_follow.py).

    Exception for ``end(token)`` without a callback (``wait_for_tail``,
    default: only for measured sources): when the source is the CPU-load
    estimator, a model with +-50 % uncertainty, waiting buys no accuracy worth
    having, and it cost a node up to one sample period per frame (mobilenet_v2
    in the container: 19.5 ms per frame vs 10.3 ms bare). There the tail is
    held at once (``method`` says "tail held"; the error bound grows by one
    period of mean power).

Error estimate (``RunEnergy.error_j``, a conservative bound, not 1 sigma)::

    error_j = (dt_start + dt_end) * P_mean            # sampling: window edges
            + accuracy_frac * |E| + accuracy_w * T_share   # the source's own

    dt_start / dt_end: the length of the sample interval containing the
    window's start / end (about 1/rate each, so ~ 2 * dt * P_mean): where in
    that interval the power actually changed is unknown (typically the run
    itself causes the step). An edge not bracketed by samples (before the
    first sample or after the last) counts its uncovered time plus one period.
    P_mean = E / (t1 - t0), the mean attributed power. accuracy_frac /
    accuracy_w are the source's (sensors: INA3221/INA231 5 %, RAPL 10 %,
    battery 10 %, NVML 5 W per GPU; estimator: the model's uncertainty, e.g.
    30 %); T_share = the run's share of the window time (integral of 1/n).
    So the sampling term is ~ 2 / (rate * T) of E: at 100 Hz a 100 ms run has
    >= 20 % error, a 10 ms run cannot be resolved (~200 %), and the figures
    say so: every record carries ``sample_rate_hz`` and ``error_j`` next to
    ``joules``. (A study on the Odroid-XU4 needed >= 350 Hz sampling to match
    a reference meter; 1 Hz gave up to 80 % error.)

Runs still open ``history_s`` after they began are dropped from the overlap
accounting (their ``end()`` returns None): the ring no longer holds their
samples anyway.
"""

from collections import deque
from dataclasses import dataclass, field
import math
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence

from edge_infer.telemetry.attribution import attribute, Entry, Run, RunEnergy
from edge_infer.telemetry.ledger import EnergyLedger
from edge_infer.telemetry.sources import PowerSource, Sample

INF = float('inf')


@dataclass
class Switch:
    """A source switch: when, from which source to which, and why."""

    t: float
    from_source: str
    to_source: str
    error: str
    skipped: List[str] = field(default_factory=list)


class PowerMeter:
    """Sample a power source on a thread; integrate energy; attribute energy to model runs."""

    def __init__(self, sources: List[PowerSource], rate_hz: float = 100.0,
                 history_s: float = 30.0, log: Callable[[str], None] = print,
                 model_rails: Optional[Dict[str, Sequence[str]]] = None,
                 max_wait_s: float = 0.05, wait_for_tail: Optional[bool] = None):
        if not sources:
            raise ValueError('PowerMeter needs at least one power source')
        if rate_hz <= 0 or history_s <= 0:
            raise ValueError('rate_hz and history_s must be positive')
        self._sources = list(sources)
        self._idx = 0
        self._rate_req = float(rate_hz)
        self._history_s = float(history_s)
        self._log = log
        self._ring: deque = deque(maxlen=max(2, int(math.ceil(history_s * rate_hz))))
        self._cv = threading.Condition()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._period = 1.0 / self._effective_rate(self._sources[0])
        self._e_total = 0.0
        self._e_rails: Dict[str, float] = {}
        self._t_start: Optional[float] = None
        # the runs marked by begin() / end() and the energy each is given
        self._ledger = EnergyLedger(self, history_s, model_rails, max_wait_s, wait_for_tail, log)
        self.switches: List[Switch] = []
        self._dead_logged = False

    # ------------------------------------------------------------------ sampling
    def _effective_rate(self, src: PowerSource) -> float:
        cap = float(getattr(src, 'max_rate_hz', 0.0) or 0.0)
        return min(self._rate_req, cap) if cap > 0 else self._rate_req

    @property
    def source_name(self) -> str:
        """Return the name of the source being sampled."""
        return self._sources[self._idx].name

    @property
    def ledger(self) -> EnergyLedger:
        """Return the ledger of the runs marked on this meter (begin / end)."""
        return self._ledger

    @property
    def measured(self) -> bool:
        """Return False when the current source is the estimator."""
        return bool(self._sources[self._idx].measured)

    @property
    def source(self) -> PowerSource:
        """Return the source being sampled."""
        return self._sources[self._idx]

    @property
    def rate_hz(self) -> float:
        """Return the target rate (requested, capped at the source's max_rate_hz)."""
        return 1.0 / self._period

    def start(self) -> None:
        """Start the sampler thread (probes the first source first)."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name='power_meter', daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the sampler thread and deliver pending end() callbacks."""
        self._stop.set()
        with self._cv:
            self._cv.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
        self._ledger.deliver(force=True)

    def _loop(self) -> None:
        src = self._sources[self._idx]
        ok, why = src.probe()
        if ok:
            with self._cv:
                self._period = 1.0 / self._effective_rate(src)  # probe may refine max_rate_hz
        else:
            self._switch(why)
        next_t = time.monotonic()
        while not self._stop.is_set():
            src = self._sources[self._idx]
            try:
                s = src.read()
            except Exception as exc:  # SourceError or a bug in a reader: fail over either way
                if not self._switch(f'{type(exc).__name__}: {exc}'):
                    self._stop.wait(1.0)
                next_t = time.monotonic()
                self._ledger.deliver()
                continue
            self._add(s)
            self._ledger.deliver()
            next_t += self._period
            now = time.monotonic()
            if next_t < now - self._period:
                next_t = now  # fell behind: restart the schedule, no burst
            self._sleep(next_t - now)

    def _sleep(self, seconds: float) -> None:
        # time.sleep costs about half the CPU of Event.wait per call; stop() then
        # waits at most one short period. Long waits stay interruptible.
        if seconds <= 0:
            return
        if seconds < 0.05:
            time.sleep(seconds)
        else:
            self._stop.wait(seconds)

    def _switch(self, error: str) -> bool:
        """Move to the next source that probes fine; log one warning. False if none left."""
        old = self._sources[self._idx]
        skipped = []
        j = self._idx + 1
        while j < len(self._sources):
            ok, why = self._sources[j].probe()
            if ok:
                break
            skipped.append(f'{self._sources[j].name} ({why})')
            j += 1
        if j >= len(self._sources):
            if not self._dead_logged:
                self._dead_logged = True
                self._log(f'WARNING power meter: source {old.name} failed: {error}; no fallback '
                          f'source left' + (f' (also unavailable: {"; ".join(skipped)})'
                                            if skipped else '') + '; retrying it every 1 s')
            return False
        new = self._sources[j]
        with self._cv:
            self._idx = j
            self._period = 1.0 / self._effective_rate(new)
            self.switches.append(Switch(time.monotonic(), old.name, new.name, error, skipped))
        self._log(f'WARNING power meter: source {old.name} failed: {error}; switched to '
                  f'{new.name} ({"measured" if new.measured else "ESTIMATED"}, '
                  f'{1.0 / self._period:.0f} Hz)'
                  + (f'; skipped {"; ".join(skipped)}' if skipped else ''))
        try:
            old.close()
        except Exception:  # a dead sensor may fail to close too; nothing else to do
            pass
        return True

    def _add(self, s: Sample) -> None:
        with self._cv:
            if self._ring:
                prev = self._ring[-1].sample
                dt = s.t - prev.t
                if dt <= 0:
                    return  # not newer than the last sample: drop it
                if not (math.isnan(prev.total_w) or math.isnan(s.total_w)):
                    self._e_total += 0.5 * (prev.total_w + s.total_w) * dt
                before = {r.name: r.watts for r in prev.rails}
                for r in s.rails:
                    w0 = before.get(r.name)
                    if w0 is not None and not (math.isnan(w0) or math.isnan(r.watts)):
                        self._e_rails[r.name] = (self._e_rails.get(r.name, 0.0)
                                                 + 0.5 * (w0 + r.watts) * dt)
            else:
                self._t_start = s.t
            self._ring.append(Entry(s, self._idx))
            self._cv.notify_all()

    # ------------------------------------------------------------------ queries
    def achieved_rate_hz(self, window_s: float = 2.0) -> float:
        """Return the sample rate achieved over the last ``window_s`` seconds."""
        with self._cv:
            if len(self._ring) < 2:
                return 0.0
            t_last = self._ring[-1].sample.t
            n, t_first = 0, t_last
            for e in reversed(self._ring):
                if e.sample.t < t_last - window_s:
                    break
                n, t_first = n + 1, e.sample.t
        return (n - 1) / (t_last - t_first) if n >= 2 and t_last > t_first else 0.0

    def latest(self) -> Optional[Sample]:
        """Return the newest sample, or None before the first."""
        with self._cv:
            return self._ring[-1].sample if self._ring else None

    def samples_since(self, t: float) -> List[Sample]:
        """Return the buffered samples newer than ``t`` (monotonic seconds), oldest first."""
        with self._cv:
            out = []
            for e in reversed(self._ring):
                if e.sample.t <= t:
                    break
                out.append(e.sample)
        out.reverse()
        return out

    def energy_j(self) -> dict:
        """Return cumulative energy since the first sample: {'total': J, 'rails': {name: J}}."""
        with self._cv:
            return {'total': self._e_total, 'rails': dict(self._e_rails)}

    def elapsed_s(self) -> float:
        """Return the time covered by energy_j(): first sample to newest, seconds."""
        with self._cv:
            if not self._ring or self._t_start is None:
                return 0.0
            return self._ring[-1].sample.t - self._t_start

    def entries_since(self, t0: float) -> List[Entry]:
        """Return the ring's entries from the last one at/before t0 to the newest (lock held)."""
        out = []
        for e in reversed(self._ring):
            out.append(e)
            if e.sample.t <= t0:
                break
        out.reverse()
        return out

    def average_w(self, t0: float, t1: float) -> float:
        """Return the mean total power over [t0, t1] from the buffered samples (NaN if none)."""
        if t1 <= t0:
            return float('nan')
        run = Run(0, '', t0, None, t1)
        with self._cv:
            entries = self.entries_since(t0)
        res = attribute(entries, run, [run], self._period)
        return res['joules'] / (t1 - t0) if res else float('nan')

    # ------------------------------------------------------------------ energy per inference
    def begin(self, model: str, rails: Optional[Sequence[str]] = None) -> int:
        """Mark the start of a model run now; return the token for end(). Thread-safe."""
        return self._ledger.begin(model, rails)

    def end(self, token: int,
            callback: Optional[Callable[[Optional[RunEnergy]], None]] = None
            ) -> Optional[RunEnergy]:
        """Mark the end of the run now; return its RunEnergy (None: unknown token / no data).

        Without ``callback`` this waits at most min(1.5 periods, max_wait_s) for
        the first sample after the end. With ``callback`` it returns None at once
        and ``callback(record)`` runs on the sampler thread when the data is in.
        """
        return self._ledger.end(token, callback)
