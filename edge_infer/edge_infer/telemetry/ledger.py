# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Energy per inference: the runs marked on a power meter and what each is given.

:class:`.meter.PowerMeter` samples; this part of it keeps the runs that
``begin()`` / ``end()`` mark, finds those that overlap each one, and turns
the meter's samples into a :class:`.attribution.RunEnergy` (the rules and the
error bound: the meter's module text). It shares the meter's lock and ring:
every method here that says "lock held" runs under ``meter._cv``.
"""

import itertools
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from edge_infer.telemetry.attribution import attribute, method_text, Run, RunEnergy

INF = float('inf')


class EnergyLedger:
    """The runs marked on one PowerMeter, and the energy attributed to each."""

    def __init__(self, meter, history_s: float,
                 model_rails: Optional[Dict[str, Sequence[str]]], max_wait_s: float,
                 wait_for_tail: Optional[bool], log: Callable[[str], None]) -> None:
        self._m = meter     # its lock, ring, period and sources (read under its lock)
        self._history_s = float(history_s)
        self._model_rails = {k: tuple(v) for k, v in (model_rails or {}).items()}
        self._max_wait_s = float(max_wait_s)
        self._wait_for_tail = wait_for_tail     # None: wait only for measured sources
        self._log = log
        self._runs: Dict[int, Run] = {}      # by token = start order (t0 never decreases)
        self._open: Dict[int, Run] = {}      # runs begun, not yet ended
        self._longest = 0.0                   # longest run seen (s): how far back overlaps reach
        self._next_prune = 0.0
        self._pending: List[Run] = []
        self._tokens = itertools.count(1)

    def begin(self, model: str, rails: Optional[Sequence[str]] = None) -> int:
        """Mark the start of a model run now; return the token for end(). Thread-safe."""
        t0 = time.monotonic()
        claim = tuple(rails) if rails else self._model_rails.get(model)
        with self._m._cv:
            token = next(self._tokens)
            self._runs[token] = self._open[token] = Run(token, model, t0, claim or None)
            self._prune(t0)
        return token

    def end(self, token: int, callback=None) -> Optional[RunEnergy]:
        """Mark the end of the run now (:meth:`.meter.PowerMeter.end` says how it waits)."""
        t1 = time.monotonic()
        wait = callback is None and (self._wait_for_tail if self._wait_for_tail is not None
                                     else self._m.measured)    # a callback never waits
        with self._m._cv:
            run = self._runs.get(token)
            if run is None or run.t1 is not None:
                return None
            run.t1 = t1
            self._open.pop(token, None)
            self._longest = max(self._longest, t1 - run.t0)
            self._prune(t1)
            if callback is not None:    # the sampler thread integrates: the caller never waits
                run.callback = callback
                self._pending.append(run)
                return None
            if not wait:
                prepared = self._prepare(run)
        if not wait:
            return self._finish(run, prepared)
        with self._m._cv:
            deadline = t1 + min(1.5 * self._m._period, self._max_wait_s)
            while not self._m._ring or self._m._ring[-1].sample.t < t1:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._m._thread is None:
                    break
                self._m._cv.wait(remaining)
            prepared = self._prepare(run)
        return self._finish(run, prepared)

    def _prepare(self, run: Run):
        """Copy what the integration needs (lock held)."""
        # newest first; runs are kept in start order (up to the lock wait: begin()
        # reads the clock before taking the lock, hence the 50 ms of slack), so
        # none that began more than the longest run ago can reach into this one,
        # except one still open
        reach = run.t0 - self._longest - 0.05
        overlapping = []
        for r in reversed(self._runs.values()):
            if r.t0 < reach:
                break
            if r.t0 < run.ended and (r.t1 is None or r.t1 > run.t0):
                overlapping.append(r)
        overlapping += [r for r in self._open.values() if r.t0 < reach]
        overlapping.reverse()
        overlapping = [Run(r.token, r.model, r.t0, r.rails, r.t1) for r in overlapping]
        return self._m.entries_since(run.t0), overlapping, self._m._period

    def _finish(self, run: Run, prepared) -> Optional[RunEnergy]:
        entries, overlapping, period = prepared
        res = attribute(entries, run, overlapping, period)
        if res is None:
            return None
        joules, used, notes = res['joules'], res['used'], res['notes']
        idx = sorted({e.src for e in used})
        srcs = [self._m._sources[i] for i in idx]
        acc_frac = max(float(s.accuracy_frac) for s in srcs)
        acc_w = max(float(s.accuracy_w) for s in srcs)
        duration = run.ended - run.t0
        p_mean = abs(joules) / duration if duration > 0 else 0.0
        error = res['edge_s'] * p_mean + acc_frac * abs(joules) + acc_w * res['t_share']
        n_used = len(used)
        if n_used >= 2 and used[-1].sample.t > used[0].sample.t:
            rate = (n_used - 1) / (used[-1].sample.t - used[0].sample.t)
        else:
            rate = 1.0 / period
        method = method_text(res['rails'], len(overlapping) - 1, acc_frac, acc_w, tuple(notes))
        return RunEnergy(
            model=run.model, t0=run.t0, t1=run.ended, joules=joules,
            rail_joules=res['rail_joules'],
            source='+'.join(s.name for s in srcs), measured=all(s.measured for s in srcs),
            sample_rate_hz=rate, n_samples=n_used, error_j=error, method=method)

    def _prune(self, now: float) -> None:
        """Forget ended runs older than the history and drop runs left open that long.

        At most once a second: a scan of every run kept (1,800 at 60 runs/s)
        on each begin/end cost ~0.2 ms per call.
        """
        if now < self._next_prune:
            return
        self._next_prune = now + 1.0
        horizon = now - self._history_s
        for token, r in list(self._runs.items()):
            if r.t1 is not None and r.t1 < horizon and r not in self._pending:
                del self._runs[token]
            elif r.t1 is None and r.t0 < horizon:
                del self._runs[token]
                self._open.pop(token, None)
                self._log(f'WARNING power meter: run of {r.model} begun {now - r.t0:.0f} s ago '
                          f'never ended; dropped from the overlap accounting')

    def deliver(self, force: bool = False) -> None:
        """Call end() callbacks whose window is covered (or overdue / forced)."""
        if not self._pending:  # unlocked peek: a callback added now is seen next loop
            return
        with self._m._cv:
            if not self._pending:
                return
            last_t = self._m._ring[-1].sample.t if self._m._ring else -INF
            overdue = time.monotonic() - max(2.0 * self._m._period, 0.1)
            ready = [r for r in self._pending
                     if force or r.ended <= last_t or r.ended < overdue]
            if not ready:
                return
            self._pending = [r for r in self._pending if r not in ready]
            jobs = [(r, self._prepare(r)) for r in ready]
        for run, prepared in jobs:
            assert run.callback is not None     # only end(callback=...) leaves a run pending
            try:
                run.callback(self._finish(run, prepared))
            except Exception as exc:  # a user callback must not kill the sampler
                self._log(f'WARNING power meter: end() callback for {run.model} raised: {exc}')


class RunMarks:
    """Each run of one model marked on a ledger: ``Model.infer``'s ``around_run``.

    ``records()`` returns a fresh record per run; its ``deliver`` is the
    ledger's end() callback. The last run's record waits in :meth:`take`
    (a frame run again after a fallback: the run that gave the result).
    """

    def __init__(self, ledger: EnergyLedger, model: str, records: Callable[[], Any]):
        self._ledger, self._model, self._records = ledger, model, records
        self._last: Any = None

    def __call__(self) -> Callable[[], object]:
        """Mark a run's start now; return what marks its end."""
        self._last = record = self._records()
        token = self._ledger.begin(self._model)
        return lambda: self._ledger.end(token, callback=record.deliver)

    def take(self) -> Any:
        """Return the last run's record, once (None: no run since)."""
        record, self._last = self._last, None
        return record


class BatchMarks:
    """One batch run of several frames marked on a ledger: each frame gets its share.

    Built per batch with each frame's record (``records``: one made per
    frame, in the batch's order); the run's :class:`RunEnergy` is divided
    evenly among them (:func:`share`), so the frames' records add up to the run's.
    """

    def __init__(self, ledger: EnergyLedger, model: str, records: Sequence[Callable[[], Any]]):
        self._ledger, self._model, self._records = ledger, model, list(records)
        self._last: List[Any] = []

    def __call__(self) -> Callable[[], object]:
        """Mark the batch run's start now; return what marks its end."""
        self._last = frames = [make() for make in self._records]
        token = self._ledger.begin(self._model)

        def deliver(record: Optional[RunEnergy]) -> None:
            for frame in frames:
                frame.deliver(share(record, len(frames)))
        return lambda: self._ledger.end(token, callback=deliver)

    def take(self) -> List[Any]:
        """Return the last batch run's records, one per frame, once ([] : no run since)."""
        records, self._last = self._last, []
        return records


def share(record: Optional[RunEnergy], k: int) -> Optional[RunEnergy]:
    """Return 1/``k`` of ``record`` (one frame's of a batch run of ``k``); None stays None."""
    if record is None or k == 1:
        return record
    import dataclasses
    return dataclasses.replace(
        record, joules=record.joules / k, error_j=record.error_j / k,
        rail_joules={name: j / k for name, j in record.rail_joules.items()},
        method=f'{record.method}; 1/{k} of a batch run of {k} frames')
