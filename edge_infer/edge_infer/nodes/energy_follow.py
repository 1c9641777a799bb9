# Copyright 2026 edge_infer contributors. Apache-2.0.
"""~/energy follows the result: a perception node's EnergyRecord per model run.

A result never waits for its energy, and every record goes out one way:
the meter integrates the run on its sampler thread once the first power
sample after it is in (up to one sample period; the estimator's as a
sensor's), the result goes out with joules NaN, source 'pending', and the
record follows on ~/energy from the meter's callback, with the result's
header. A record not delivered in time is counted
``energy_missing`` and published saying no power sample covered the run;
one that comes after ~/energy was deactivated or destroyed is dropped and
counted ``energy_after_stop``.

:class:`EnergyFollow` is a part of :class:`~.perception_node.PerceptionNode`
(it owns one); it needs no rclpy: the node hands it the publisher, its clock
conversion and its context check.
"""

from collections import deque
import threading
import time
from typing import Any, Callable, Deque, Optional

from edge_infer_msgs.msg import Energy, EnergyRecord

from ..core.stream import StreamStats
from ..telemetry.ledger import RunMarks
from ..telemetry.meter import RunEnergy

NAN = float('nan')
INF = float('inf')


def energy_msg(rec: Optional[RunEnergy]) -> Energy:
    """Return the Energy message of a meter record (joules NaN when there is none)."""
    if rec is None:
        return Energy(joules=NAN, error_j=NAN, average_watts=NAN)
    return Energy(joules=float(rec.joules), error_j=float(rec.error_j),
                  average_watts=float(rec.average_w), source=rec.source,
                  measured=bool(rec.measured), sample_rate_hz=float(rec.sample_rate_hz),
                  n_samples=int(rec.n_samples), rail_names=list(rec.rail_joules),
                  rail_joules=[float(v) for v in rec.rail_joules.values()])


class Pending:
    """One model run's energy record: delivered by the meter, then published on ~/energy.

    ``deliver`` is the meter's end() callback: it runs on the sampler thread
    once the first sample after the run is in (or as the meter stops).
    ``arrived(self)`` then publishes the record if the
    frame's result is already out (``out`` set); EnergyFollow's lock decides
    who publishes, ``done`` that it happens once.
    """

    __slots__ = ('event', 'record', 'arrived', 'out', 'deadline', 'done')

    def __init__(self, arrived: Callable[['Pending'], None]):
        self.event = threading.Event()
        self.record: Optional[RunEnergy] = None
        self.arrived = arrived
        self.out = None             # the frame's result, once published
        self.deadline = INF         # time.monotonic() after which the record counts as missing
        self.done = False           # its EnergyRecord went out (or was dropped and counted)

    def deliver(self, record: Optional[RunEnergy]) -> None:
        self.record = record
        self.event.set()
        self.arrived(self)


class EnergyFollow:
    """Publishes each result's EnergyRecord on ~/energy once the meter delivers it.

    ``stats`` counts ``energy_missing`` and ``energy_after_stop``;
    ``ros_time`` turns a time.monotonic() instant into a builtin_interfaces
    Time; ``context_ok`` says whether the ROS context still runs; ``joules``
    keeps the joules of the last 1000 records delivered (the node's diagnostics).
    ``pub`` is the ~/energy lifecycle publisher (None: not configured); it is
    used, and destroyed (:meth:`release`), under a lock, since the sampler
    thread publishes too.
    """

    def __init__(self, stats: StreamStats, ros_time: Callable[[float], Any],
                 context_ok: Callable[[], bool]):
        self.stats = stats
        self.pub: Any = None
        self._ros_time = ros_time
        self._context_ok = context_ok
        self.joules: Deque[float] = deque(maxlen=1000)
        # records the meter has yet to deliver, in frame order (_cv)
        self._due: Deque[Pending] = deque()
        self._cv = threading.Condition()
        self._lock = threading.Lock()
        self.marks: Optional[RunMarks] = None   # Model.infer's around_run: each run marked

    def mark_runs(self, meter, model: str) -> None:
        """Mark each run of ``model`` on ``meter``'s ledger (None: no meter, nothing marked)."""
        self.marks = RunMarks(meter.ledger, model, self.pending) if meter is not None else None

    def on_result(self, p: Optional[Pending]) -> Energy:
        """Return the Energy of a result whose run's record is ``p`` (None: no meter).

        The result never waits for its energy: the meter needs the first power
        sample after the run (up to one period, 10 ms at 100 Hz), so the result
        goes out with joules NaN, source 'pending', and the record follows on
        ~/energy, keyed by the same header (:meth:`follows`). A record already
        delivered (the meter stopped and delivered it) rides on the result.
        """
        delivered = p is not None and p.event.is_set()
        energy = energy_msg(p.record if p is not None and delivered else None)
        if p is not None and not delivered:
            energy.source = 'pending'
        return energy

    def pending(self) -> Pending:
        """Return the record of one model run to come (its ``deliver`` is end()'s callback)."""
        return Pending(self._arrived)

    def release(self, destroy: Callable[[Any], None]) -> None:
        """Destroy ~/energy's publisher with ``destroy``, once no record is on its way out."""
        with self._lock:
            if self.pub is not None:
                destroy(self.pub)
                self.pub = None

    def follows(self, out, p: Pending, timeout_s: float) -> None:
        """Have ``p``'s record published on ~/energy when it comes (frame thread; no wait).

        Already delivered (a sample that landed since the result was built,
        or the meter stopped): published now. Otherwise the meter's callback publishes it; not
        delivered within ``timeout_s`` it counts as missing (:meth:`sweep`).
        """
        with self._cv:
            p.out = out
            if not p.event.is_set():
                p.deadline = time.monotonic() + timeout_s
                self._due.append(p)
                return
            p.done = True
        self.publish(out, p.record, out.energy if out.energy.source != 'pending' else None)

    def _arrived(self, p: Pending) -> None:
        """Publish a delivered record whose result is out (the meter's callback: keep it short).

        Before the result is out (``out`` unset: the record came while the
        result was being built) the frame thread publishes it instead
        (:meth:`follows`).
        """
        with self._cv:
            if p.out is None or p.done:
                return
            p.done = True
            self._cv.notify_all()
        self.sweep()    # older records overdue: counted now, off the frame thread
        self.publish(p.out, p.record)

    def sweep(self, everything: bool = False) -> None:
        """Count and publish as missing the records not delivered in time (``everything``: all).

        Runs when a record arrives, at each diagnostics tick and when the node
        stops; the EnergyRecord then says no power sample covered the run
        (joules NaN), as before, and a record the meter delivers later is not
        published (one EnergyRecord per result).
        """
        now = time.monotonic()
        missing = []
        with self._cv:
            due = self._due
            while due and (due[0].done or everything or due[0].deadline <= now):
                p = due.popleft()
                if not p.done:
                    p.done = True
                    missing.append(p)
            self._cv.notify_all()
        for p in missing:
            self.stats.count('energy_missing')
            self.publish(p.out, None)

    def drain(self) -> None:
        """Wait until the records of the results published are out, at most until they are due.

        The old frame thread waited for each record before its result, so a
        deactivation never lost one; this keeps that (<= one sample period).
        """
        with self._cv:
            last = max((p.deadline for p in self._due if not p.done), default=None)
            if last is not None and self._context_ok():     # else none can be published
                self._cv.wait_for(lambda: all(p.done for p in self._due),
                                  timeout=max(0.0, last - time.monotonic()))
        self.sweep(everything=True)

    def publish(self, out, r: Optional[RunEnergy], energy: Optional[Energy] = None) -> None:
        """Publish ~/energy's EnergyRecord of the frame whose result ``out`` is (any thread).

        A record that comes after ~/energy was deactivated or destroyed, or the
        ROS context ended, is dropped and counted (``energy_after_stop``).
        """
        if r is not None:
            self.joules.append(r.joules)
        try:
            rec = EnergyRecord(header=out.header, model=out.model, backend=out.backend,
                               latency_ms=out.inference_ms,
                               energy=energy if energy is not None else energy_msg(r),
                               method='no power sample covered the run')
            if r is not None:
                rec.latency_ms, rec.method = r.duration_s * 1e3, r.method
                rec.window_start = self._ros_time(r.t0)
            with self._lock:        # release() destroys the publisher under it
                pub = self.pub
                if pub is None or not pub.is_activated or not self._context_ok():
                    self.stats.count('energy_after_stop')
                    return
                pub.publish(rec)
        except Exception:   # the node or the context went while the record was on its way
            if self._context_ok():
                raise
            self.stats.count('energy_after_stop')
