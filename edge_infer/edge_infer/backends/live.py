# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The run-time choice of one model's backend, frame by frame (no ROS).

    live = LiveChoice(manager, spec, model_path, models_dir, LiveSettings(), report=...)
    live.start()                       # choose (profile or cache) and open the model
    result = live.infer(frame)         # between frames: switch, fall back, observe
    ... publish the result ...
    live.after_frame()                 # maybe time one runner-up on the same input
    live.close()

A profile says what was best when it was measured; the robot's load then
changes (a SLAM node starts, a core frees up, another model stops). This
object keeps the choice right while running:

- **online re-selection on real frames**: the runners-up (the next best
  candidates of the profile, at most ``runners_up``) stay open and, after a
  frame's result is out, one of them runs on that frame's preprocessed input
  (its output is discarded). Each such run is paired with the chosen one's
  run on the same frame, so both saw the same load. When a runner-up's
  median over its last pairs (at least ``min_pairs``, at most twice that,
  none older than ``window_s``) is under ``1 - margin`` x the chosen one's,
  the runner-up takes over between two frames, and the old choice becomes a
  runner-up: both directions (the chosen slowing down, another speeding up)
  are the same comparison. The cost is bounded: runner-up time stays under
  ``duty`` x the chosen one's time over the last ``horizon_s`` seconds. In
  steady state one runner-up run every ``probe_interval_s`` (well under the
  duty, so a reserve builds up); when the chosen one's latency moves by more
  than ``alert_change`` (the load changed) the pairs taken before are
  forgotten and the pace goes up to one per frame, within the same duty,
  for ``alert_s`` seconds;
- **drift**: when the chosen one's median latency stays over
  ``drift_threshold`` x its profile, the runners-up are timed on the next
  frames at once (online re-selection on), or (re-selection off, or no
  runner-up open) every working candidate is measured again in the
  background (never written to the board's profile) and the best one taken
  between two frames;
- **fallback**: a backend that raises is replaced by the next best measured
  candidate and the frame is run again on it: no frame is lost.

Every switch calls ``report(run, trigger)`` (``online``, ``drift``,
``fallback``) with the evidence in ``run.why``, and logs one line.
"""

from collections import deque
import contextlib
from dataclasses import dataclass
import math
import pathlib
import statistics
import threading
import time
from typing import Callable, Deque, Dict, List, Optional, Tuple

from .drift import DriftMonitor
from .profiling import CandidateResult, ProfileRun
from .selection import latency_at
from ..core.backend import first_line
from ..core.model import Model, Result
from ..core.registry import ModelSpec

Log = Callable[[str], None]
_REEVALUATION = threading.Lock()    # one at a time: two models measuring at once meet


@dataclass
class LiveSettings:
    """How the choice is kept right at run time (node parameters map onto these)."""

    objective: str = 'latency'
    max_latency_ms: float = 0.0
    min_accuracy: float = 0.0
    latency_percentile: int = 0         # 0 = config/backends.yaml's
    drift_threshold: float = 1.5        # 0 = off
    drift_window_s: float = 5.0
    duty: float = 0.05                  # 0 = no online re-selection
    runners_up: int = 2
    margin: float = 0.10
    window_s: float = 15.0              # pairs older than this are forgotten
    min_pairs: int = 5                  # the decision uses the last 2 x min_pairs pairs
    probe_interval_s: float = 2.0
    alert_change: float = 0.2
    alert_s: float = 3.0
    horizon_s: float = 30.0


class _Window:
    """(time, value) samples over a sliding time window."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.items: Deque[Tuple[float, float]] = deque()

    def add(self, now: float, value: float) -> None:
        self.items.append((now, value))
        self.trim(now)

    def trim(self, now: float) -> None:
        while self.items and self.items[0][0] < now - self.seconds:
            self.items.popleft()

    def total(self, now: float) -> float:
        self.trim(now)
        return sum(v for _, v in self.items)


class LiveChoice:
    """One model's backend at run time: chosen, watched, switched between frames."""

    def __init__(self, manager, spec: ModelSpec, model_path: pathlib.Path,
                 models_dir: Optional[pathlib.Path] = None,
                 settings: Optional[LiveSettings] = None, overrides: Optional[dict] = None,
                 log: Log = print, report: Optional[Callable[[ProfileRun, str], None]] = None,
                 warn: Optional[Log] = None, scope=None):
        """Keep one model's backend right at run time.

        ``log`` / ``warn``: info and warning lines; ``scope``: a context manager
        factory entered around background work (a node routes the manager's
        lines under itself with it).
        """
        self.manager = manager
        self.spec = spec
        self.model_path = pathlib.Path(model_path)
        self.models_dir = pathlib.Path(models_dir) if models_dir else self.model_path.parent
        self.settings = settings or LiveSettings()
        self.overrides = dict(overrides or {})
        self.log = log
        self.warn = warn or log
        self.scope = scope or contextlib.nullcontext
        self.report = report or (lambda run, trigger: None)
        self.model: Optional[Model] = None
        self.run: Optional[ProfileRun] = None
        self.fixed = False                  # forced / executor: never switched by measurement
        self._can_fall_back = True          # False for a fixed executor backend
        self.drift: Optional[DriftMonitor] = None
        self.switches: List[dict] = []      # every switch: time, from, to, trigger, evidence
        self.shadow_runs = 0
        self._failed: set = set()
        self._pending: Optional[Model] = None     # set by a background re-evaluation
        self._pending_why: Tuple[str, str] = ('', '')
        self._pending_run: Optional[ProfileRun] = None
        self._runners: Dict[str, object] = {}     # name -> open session (runners-up)
        self._runners_lock = threading.Lock()
        self._pairs: Dict[str, Deque[Tuple[float, float, float]]] = {}
        self._rotation = 0
        self._primary = _Window(self.settings.horizon_s)
        self._shadow = _Window(self.settings.horizon_s)
        self._recent = deque(maxlen=5)            # the chosen one's last latencies
        self._level = float('nan')                # its level when last settled
        self._alert_until = 0.0
        self._next_probe = 0.0
        self._last_ms = float('nan')
        self._cancel = threading.Event()
        self._threads: List[threading.Thread] = []
        self._reevaluating = threading.Lock()

    # ------------------------------------------------------------------- start
    def start(self, force: str = '', use_cache: bool = True, backend=None,
              run: Optional[ProfileRun] = None) -> ProfileRun:
        """Choose (unless ``backend``/``run`` are given: a fixed choice) and open the model."""
        st = self.settings
        if backend is None:
            backend, run = self.manager.choose(
                self.spec, self.model_path, objective=st.objective,
                max_latency_ms=st.max_latency_ms, min_accuracy=st.min_accuracy, force=force,
                use_cache=use_cache, latency_percentile=st.latency_percentile)
        self.fixed = bool(force)
        self.model = Model(self.spec, backend, self.models_dir, verify_checksum=False,
                           **self.overrides)
        self.run = run
        chosen = self._result(run.chosen)
        if st.drift_threshold and not self.fixed and chosen is not None:
            self.drift = DriftMonitor(chosen.p50_ms, st.drift_threshold, st.drift_window_s)
        self.report(run, 'forced' if force else 'configure')
        if st.duty > 0 and not self.fixed and self.manager is not None:
            self._spawn(self._open_runners, 'runners')
        return run

    def fix(self, backend, run: ProfileRun) -> ProfileRun:
        """Open ``backend`` as a fixed choice (no re-selection: e.g. the shared executor)."""
        self.fixed = True
        self._can_fall_back = False
        self.model = Model(self.spec, backend, self.models_dir, verify_checksum=False,
                           **self.overrides)
        self.run = run
        self.report(run, 'configure')
        return run

    @property
    def backend_name(self) -> str:
        """Return the name of the backend the next frame runs on."""
        return self.model.backend_name if self.model else ''

    def _result(self, name: Optional[str]) -> Optional[CandidateResult]:
        return next((r for r in self.run.results if r.backend == name), None) \
            if self.run else None

    def _spawn(self, target, what: str) -> None:
        def scoped():
            with self.scope():
                target()
        t = threading.Thread(target=scoped, daemon=True, name=f'{self.spec.name}-{what}')
        self._threads = [x for x in self._threads if x.is_alive()] + [t]
        t.start()

    def _ranked(self) -> List[CandidateResult]:
        """Return the accepted candidates, best first by the objective's figure."""
        pct = int(self.settings.latency_percentile or
                  self.manager.config.get('latency_percentile', 50))
        ok = [r for r in self.run.results if r.status == 'ok' and not r.cut_short and
              r.backend not in self._failed and math.isfinite(r.p50_ms)]
        return sorted(ok, key=lambda r: latency_at(r, pct))

    def _open_runners(self) -> None:
        """Open the best runners-up (background: the first frames do not wait for them)."""
        try:
            by_name = {b.name: b for b in self.manager.candidates(self.spec, self.model_path)}
            want = [r.backend for r in self._ranked() if r.backend != self.run.chosen]
            for name in want[:self.settings.runners_up]:
                if self._cancel.is_set():
                    return
                if name in self._runners or name not in by_name:
                    continue
                try:
                    sess = by_name[name].load(self.model_path)
                except Exception as exc:  # a runner-up that cannot load is left out
                    self.log(f'runner-up {name} not opened: {first_line(exc)}')
                    continue
                with self._runners_lock:
                    self._runners[name] = sess
                    self._pairs[name] = deque()
        except Exception as exc:  # keep serving on the chosen backend
            self.log(f'online re-selection off: {type(exc).__name__}: {exc}')

    # ------------------------------------------------------------------ frames
    def infer(self, frame, around_run=None) -> Result:
        """Run one frame on the chosen backend; switch first if a switch is due.

        ``around_run``: Model.infer's hook, called for each run (again when the
        frame is run a second time after a fallback).
        """
        if self._pending is not None:
            self._swap_pending()
        try:
            result = self.model.infer(frame, around_run=around_run)
        except Exception as exc:
            from ..core.image import ImageError
            from ..core.postprocess import OutputError
            if isinstance(exc, (ImageError, OutputError)) or not self._fall_back(exc):
                raise
            result = self.model.infer(frame, around_run=around_run)
        self._observe(result.inference_ms)
        return result

    def _observe(self, ms: float) -> None:
        now = time.monotonic()
        self._last_ms = ms
        self._primary.add(now, ms)
        self._recent.append(ms)
        if len(self._recent) == self._recent.maxlen:
            level = statistics.median(self._recent)
            if not math.isfinite(self._level):
                self._level = level
            elif abs(level / self._level - 1) > self.settings.alert_change:
                self._alert_until = now + self.settings.alert_s     # load changed: look now
                self._level = level
                for pairs in self._pairs.values():
                    pairs.clear()       # they describe the load before the change
        if self.drift is not None and self.drift.add(ms, now):
            if self._runners and self.settings.duty > 0:
                # online re-selection is on: compare the runners-up on the next real
                # frames (paired, same load) rather than re-profile every candidate
                # in the background, which competes with the frames for the cores
                d = self.drift
                self.log(f'latency drift: median {d.last_median_ms:.1f} ms vs '
                         f'{d.expected_ms:.1f} ms profiled; timing the runners-up on the '
                         f'next frames')
                self._alert_until = now + self.settings.alert_s
                for pairs in self._pairs.values():
                    pairs.clear()
            else:
                self._start_reevaluation()

    def after_frame(self) -> bool:
        """Time one runner-up on the last frame's input when the duty allows; True if it did."""
        if self.fixed or not self._runners or self.model is None:
            return False
        x = getattr(self.model, 'last_input', None)
        if x is None or not math.isfinite(self._last_ms):
            return False
        now = time.monotonic()
        st = self.settings
        if now < self._next_probe and now >= self._alert_until:
            return False
        with self._runners_lock:
            names = list(self._runners)
        if not names:
            return False
        name = names[self._rotation % len(names)]
        pairs = self._pairs[name]
        guess = pairs[-1][2] if pairs else self._last_ms
        # aim under the bound: a run may take longer than the last one did
        if self._shadow.total(now) + 1.5 * guess > st.duty * self._primary.total(now):
            return False
        self._rotation += 1
        sess = self._runners[name]
        t = time.perf_counter()
        try:
            sess.run(x)
        except Exception as exc:  # a runner-up that fails is dropped, not fatal
            self.log(f'runner-up {name} failed ({first_line(exc)}): no longer watched')
            self._drop_runner(name)
            return False
        ms = (time.perf_counter() - t) * 1e3
        self.shadow_runs += 1
        self._shadow.add(now, ms)
        self._next_probe = now + st.probe_interval_s / max(1, len(names))
        pairs.append((now, self._last_ms, ms))
        while pairs and (pairs[0][0] < now - st.window_s or len(pairs) > 2 * st.min_pairs):
            pairs.popleft()
        self._consider(name, now)
        return True

    def _drop_runner(self, name: str) -> None:
        with self._runners_lock:
            sess = self._runners.pop(name, None)
            self._pairs.pop(name, None)
        if sess is not None:
            sess.close()

    def _consider(self, name: str, now: float) -> None:
        """Switch to runner-up ``name`` when its paired median wins by the margin."""
        st = self.settings
        pairs = self._pairs[name]
        if len(pairs) < st.min_pairs:
            return
        mine = statistics.median(p[1] for p in pairs)
        theirs = statistics.median(p[2] for p in pairs)
        if theirs >= (1 - st.margin) * mine:
            return
        old = self.run.chosen
        evidence = (f'{name} {theirs:.2f} ms vs {old} {mine:.2f} ms median over {len(pairs)} '
                    f'frames paired in the last {now - pairs[0][0]:.1f} s '
                    f'({theirs / mine:.2f}x; margin {st.margin:.0%})')
        with self._runners_lock:
            sess = self._runners.pop(name)
            self._pairs.pop(name)
        old_model = self.model
        self.model = old_model.with_session(sess)   # the runner-up's open session takes over
        with self._runners_lock:      # the old choice is now watched as a runner-up
            self._runners[old] = old_model.session
            self._pairs[old] = deque()
        self._switched(old, name, 'online', evidence, expected_ms=theirs)

    def _switched(self, old: str, new: str, trigger: str, evidence: str,
                  expected_ms: Optional[float] = None) -> None:
        """Record a switch; ``expected_ms``: the new backend's latency as just measured."""
        run = self.run
        for r in run.results:
            r.chosen = r.backend == new
        run.chosen, run.why = new, f'{trigger}: {evidence}'
        for pairs in self._pairs.values():
            pairs.clear()       # pairs measured against the old choice
        self._recent.clear()
        self._level = float('nan')
        res = self._result(new)
        if self.drift is not None:     # expect what the new backend was measured at
            self.drift.rebase(expected_ms if expected_ms is not None else
                              res.p50_ms if res else self.drift.expected_ms)
        self.switches.append({'t': time.monotonic(), 'from': old, 'to': new,
                              'trigger': trigger, 'evidence': evidence})
        if trigger == 'fallback':
            self.warn(f'{evidence}; falling back to {new}')
        else:
            self.warn(f'switching backend {old} -> {new} ({trigger}): {evidence}')
        self.report(run, trigger)

    # ---------------------------------------------------------------- fallback
    def _fall_back(self, exc: Exception) -> bool:
        """Replace a backend that raised by the next best measured one; False if none left."""
        failed = self.run.chosen if self.run else self.backend_name
        self._failed.add(failed)
        if self.run is None or not self._can_fall_back:
            return False
        self._drop_runner(failed)
        left = [r for r in self.run.results if r.backend not in self._failed]
        chosen, why = self.manager.select(left, self.spec, self.settings.objective,
                                          self.settings.max_latency_ms,
                                          self.settings.min_accuracy,
                                          self.settings.latency_percentile)
        first = f'{type(exc).__name__}: {first_line(exc)}'
        if chosen is None:
            self.warn(f'backend {failed} failed ({first}) and no other candidate is usable: '
                      f'{why}')
            return False
        self._drop_runner(chosen.backend)
        backend = {b.name: b for b in self.manager.candidates(
            self.spec, self.model_path)}[chosen.backend]
        old, self.model = self.model, Model(self.spec, backend, self.models_dir,
                                            verify_checksum=False, **self.overrides)
        try:
            old.close()
        except Exception:  # the failed session may not close cleanly either
            pass
        self._switched(failed, chosen.backend, 'fallback', f'backend {failed} failed ({first})')
        return True

    # ------------------------------------------------------------------- drift
    def _start_reevaluation(self) -> None:
        if not self._reevaluating.acquire(blocking=False):
            return
        d = self.drift
        self.warn(f'latency drift: median {d.last_median_ms:.1f} ms over {d.window_s:g} s vs '
                  f'{d.expected_ms:.1f} ms profiled (x{d.last_median_ms / d.expected_ms:.2f}); '
                  f're-evaluating backends in the background')
        self._cancel.clear()
        self._spawn(self._reevaluate, 'reeval')

    def _reevaluate(self) -> None:
        try:
            with _REEVALUATION:
                names = [r.backend for r in self.run.results
                         if r.status == 'ok' and r.backend not in self._failed]
                run = self.manager.profile(self.spec, self.model_path, use_cache=False,
                                           min_accuracy=self.settings.min_accuracy,
                                           only=names, cancel=self._cancel, persist=False)
            if self._cancel.is_set():
                return
            chosen, why = self.manager.select(run.results, self.spec, self.settings.objective,
                                              self.settings.max_latency_ms,
                                              self.settings.min_accuracy,
                                              self.settings.latency_percentile)
            if chosen is None:
                self.log(f're-evaluation found no usable backend: {why}')
                return
            # keep the figures of candidates the re-run could not measure
            measured = {r.backend for r in run.results}
            run.results += [r for r in self.run.results if r.backend not in measured]
            for r in run.results:
                r.chosen = r is chosen
            old = self.run.chosen
            run.chosen, run.why = old, why
            if chosen.backend != old:
                backend = {b.name: b for b in self.manager.candidates(
                    self.spec, self.model_path)}[chosen.backend]
                self._pending_why = (chosen.backend, why)
                self._pending_run = run
                self._pending = Model(self.spec, backend, self.models_dir,
                                      verify_checksum=False, **self.overrides)
            else:
                self.run = run
                self.drift.rebase(chosen.p50_ms)
                self.report(run, 'drift')
        except Exception as exc:  # keep serving on the current backend
            self.log(f're-evaluation failed: {type(exc).__name__}: {exc}')
        finally:
            self._reevaluating.release()

    def _swap_pending(self) -> None:
        new, self._pending = self._pending, None
        name, why = self._pending_why
        old_name = self.run.chosen
        old, self.model = self.model, new
        self.run = self._pending_run
        old.close()
        self._drop_runner(name)
        self._switched(old_name, name, 'drift', why)

    # ------------------------------------------------------------------ close
    def cancel(self) -> None:
        """Stop background work at its next check (re-evaluation between candidates)."""
        self._cancel.set()

    def join(self, timeout: float = 30.0) -> None:
        """Wait for background work to end."""
        self._cancel.set()
        for t in self._threads:
            t.join(timeout=timeout)
        self._threads = []

    def close(self) -> None:
        """Stop background work and free every session."""
        self.join()
        with self._runners_lock:
            runners, self._runners = dict(self._runners), {}
            self._pairs = {}
        for sess in runners.values():
            sess.close()
        for model in (self.model, self._pending):
            if model is not None:
                model.close()
        self.model = self._pending = None

    def overhead(self) -> float:
        """Return runner-up time / chosen time over the horizon (the duty actually spent)."""
        now = time.monotonic()
        primary = self._primary.total(now)
        return self._shadow.total(now) / primary if primary else 0.0
