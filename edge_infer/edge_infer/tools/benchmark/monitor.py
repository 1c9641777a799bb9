# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The benchmark's monitor: each node's results as seen from outside the graph.

One rclpy node in the benchmark's process, spun by a thread of its own.
Per graph node it subscribes to the result topic with ``raw=True`` and
reads only the header (and, on edge_infer's result messages, the three
stage times) from the serialized bytes, so a result costs the monitor a
few microseconds; the arrival time is taken in the callback. It also keeps
the latest ``/diagnostics`` values and ``~/backend_report`` of every node.
"""

from dataclasses import dataclass
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from ...core.cdr import CdrError, parse_header, parse_result_times


@dataclass
class Watched:
    """A graph node the monitor watches."""

    name: str               # the node's fully qualified name, e.g. /detector
    topic: str              # its result topic
    msg_type: type          # the topic's message class
    times: bool             # an edge_infer result: stage times are read too


Arrival = Tuple[int, float, float, float]   # (arrival ns, preprocess, inference, postprocess ms)


class Monitor:
    """Results, diagnostics and backend reports of the watched nodes (see the module doc)."""

    def __init__(self, node, watched: List[Watched]):
        """Subscribe on ``node`` (an rclpy node of this process, not spun by anyone else)."""
        from diagnostic_msgs.msg import DiagnosticArray
        from edge_infer_msgs.msg import BackendReport
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        self.node = node
        self.watched = watched
        self._lock = threading.Lock()
        self.arrivals: Dict[str, Dict[int, Arrival]] = {w.name: {} for w in watched}
        self.bad: Dict[str, int] = {w.name: 0 for w in watched}   # results not parsed
        self.diagnostics: Dict[str, Dict[str, str]] = {}
        self.reports: Dict[str, Any] = {}
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self._subs = []
        for w in watched:
            self._subs.append(node.create_subscription(
                w.msg_type, w.topic, lambda raw, w=w: self._on_result(w, raw), 100, raw=True))
            self._subs.append(node.create_subscription(
                BackendReport, f'{w.name}/backend_report',
                lambda m, n=w.name: self._on_report(n, m), latched))
        self._subs.append(node.create_subscription(DiagnosticArray, '/diagnostics',
                                                   self._on_diagnostics, 50))

    def _on_result(self, w: Watched, raw: bytes) -> None:
        now = time.time_ns()
        try:
            if w.times:
                sec, nsec, pre, inf, post = parse_result_times(raw)
            else:
                (sec, nsec, _), pre, inf, post = parse_header(raw), 0.0, 0.0, 0.0
        except CdrError:
            self.bad[w.name] += 1
            return
        with self._lock:
            self.arrivals[w.name][sec * 1_000_000_000 + nsec] = (now, pre, inf, post)

    def _on_report(self, name: str, msg) -> None:
        with self._lock:
            self.reports[name] = msg

    def _on_diagnostics(self, msg) -> None:
        watched = {w.name.lstrip('/') for w in self.watched}
        for st in msg.status:
            name = st.name.split(':')[0].strip().lstrip('/')
            if name in watched:
                values = {kv.key: kv.value for kv in st.values}
                values['_at'] = str(time.monotonic())
                with self._lock:
                    self.diagnostics['/' + name] = values

    def take(self) -> Dict[str, Dict[int, Arrival]]:
        """Return the arrivals so far, per node, and start afresh."""
        with self._lock:
            out = self.arrivals
            self.arrivals = {w.name: {} for w in self.watched}
        return out

    def last_arrival(self) -> float:
        """Return the newest arrival's wall time in ns (0 when none since :meth:`take`)."""
        with self._lock:
            return max((a[0] for got in self.arrivals.values() for a in got.values()),
                       default=0)

    def answered(self, stamp: int) -> bool:
        """Return whether every watched node's result for the frame ``stamp`` (ns) came."""
        with self._lock:
            return all(stamp in got for got in self.arrivals.values())

    def diagnostics_of(self, name: str) -> Dict[str, str]:
        """Return a copy of the latest /diagnostics values of node ``name``."""
        with self._lock:
            return dict(self.diagnostics.get(name, {}))

    def wait_diagnostics(self, after: float, timeout: float = 3.0) -> bool:
        """Wait until every node published /diagnostics after ``after`` (time.monotonic())."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                fresh = all(float(self.diagnostics.get(w.name, {}).get('_at', 0)) > after
                            for w in self.watched)
            if fresh:
                return True
            time.sleep(0.05)
        return False

    def report(self, name: str) -> Optional[Any]:
        """Return the latest BackendReport of node ``name`` (None: none yet)."""
        with self._lock:
            return self.reports.get(name)


def stage_totals(values: Dict[str, str]) -> Dict[str, float]:
    """Return {stage: total ms} from a node's ``stage_total_ms`` diagnostics value."""
    out: Dict[str, float] = {}
    for part in values.get('stage_total_ms', '').split(','):
        bits = part.split()
        if len(bits) == 2:
            try:
                out[bits[0]] = float(bits[1])
            except ValueError:
                continue
    return out
