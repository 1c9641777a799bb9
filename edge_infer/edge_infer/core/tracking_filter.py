# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The box Kalman filter of ByteTrack and SORT in closed form: same answers, a fifth of the time.

The ``trackers`` library runs one general Kalman filter per track: 8x8
matrices, a 4x4 inverse and the transition and noise matrices rebuilt on
each predict. With 20 objects that was 70 % of an update (0.69 ms p50 on a
2-core Xeon; bench/product/tracking.py). Its corner state (``XYXYStateEstimator``:
x1, y1, x2, y2 and their velocities) has a structure the general filter
does not use, where the noise is what ByteTrack and SORT configure:

- each coordinate moves with its own velocity only (F couples x_i, v_i);
- H reads the four positions; R, the first P and Q (at one nominal frame
  and after a gap: the library's DWNA layout) are the same 2x2 block
  (position, velocity) for every coordinate, and zero across coordinates.

So the covariance stays that one 2x2 block for the track's life, and predict
and update are a few scalar products: no matrix, no inverse. The Joseph
form of the update is kept, as in the library.

:class:`BlockXYXYEstimator` plugs in through the library's public option
``state_estimator_class``. It checks the structure whenever the library sets
the noise or builds Q for a step; anything else (a future library tuning,
another tracker) goes to the library's general filter, unchanged. The
library's own Q is used (its nominal-frame band and its DWNA scaling after a
gap), computed once per frame step for all tracks. test_tracking_filter.py
runs both filters side by side and compares state, covariance and ids.
"""

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

Block = Tuple[float, float, float]      # (position var, position-velocity cov, velocity var)

_POS = (0, 1, 2, 3)
_VEL = (4, 5, 6, 7)


def block_of(mtx: np.ndarray) -> Optional[Block]:
    """Return ``mtx``'s (pp, pv, vv) where an 8x8 matrix is the same 2x2 block per coordinate.

    None where it is not: a different block for some coordinate, or any
    entry coupling two coordinates.
    """
    m = np.asarray(mtx, dtype=np.float64)
    if m.shape != (8, 8):
        return None
    pp, pv, vv = float(m[0, 0]), float(m[0, 4]), float(m[4, 4])
    expect = np.kron(np.array([[pp, pv], [pv, vv]]), np.eye(4))
    return (pp, pv, vv) if np.array_equal(m, expect) else None


def _isotropic_r(mtx: np.ndarray) -> Optional[float]:
    """Return r where the 4x4 measurement noise is r * I, else None."""
    m = np.asarray(mtx, dtype=np.float64)
    if m.shape != (4, 4):
        return None
    r = float(m[0, 0])
    return r if np.array_equal(m, r * np.eye(4)) else None


def _library_estimator() -> Any:
    """Return the library's XYXYStateEstimator (imported lazily, as tracking.py does)."""
    from trackers.utils.state_representations import XYXYStateEstimator
    return XYXYStateEstimator


class _Steps:
    """Q's block per (frame_step, frame_rate, baseline): built once per frame for every track."""

    def __init__(self) -> None:
        self._memo: Dict[Tuple[float, Optional[float], Block], Optional[Block]] = {}

    def q(self, motion: Any, step: float, rate: Optional[float], base: Block) -> Optional[Block]:
        """Return the library's Q for this step as a block, or None where it is not one."""
        key = (step, rate, base)
        if key not in self._memo:
            if len(self._memo) > 64:        # steps differ frame to frame: keep the recent
                self._memo.clear()
            self._memo[key] = block_of(motion.process_noise.build_Q(step, rate))
        return self._memo[key]


_STEPS = _Steps()


def make_estimator_class() -> type:
    """Return :class:`BlockXYXYEstimator`: a subclass of the library's, made on first use."""
    global _CLASS
    if _CLASS is None:
        _CLASS = _define(_library_estimator())
    return _CLASS


_CLASS: Optional[type] = None


def _define(base: Any) -> type:
    """Define the closed-form estimator on the library's base class ``base``."""

    class BlockXYXYEstimator(base):  # type: ignore[misc, valid-type]
        """The library's XYXY estimator; predict and update in closed form where they can be."""

        def __init__(self, bbox: np.ndarray) -> None:
            super().__init__(bbox)
            self._x: List[float] = [float(v) for v in np.asarray(bbox).reshape(4)]
            self._v: List[float] = [0.0, 0.0, 0.0, 0.0]
            self._p: Optional[Block] = None       # None: the library's filter holds the state
            self._r = 0.0
            self._q1: Optional[Block] = None      # the configured one-frame Q
            self._adopt()

        def _adopt(self) -> None:
            """Take the state from the library's filter where its noise has the block form."""
            kf = self.kf
            p, r = block_of(kf.state_covariance), _isotropic_r(kf.measurement_noise)
            q = block_of(self.motion.process_noise.baseline_Q)     # what build_Q scales
            state = kf.state.reshape(8)
            if p is None or q is None or r is None or not np.array_equal(
                    np.asarray(kf.observation_mtx), np.eye(4, 8)):
                self._p = None
                return
            self._x = [float(state[i]) for i in _POS]
            self._v = [float(state[i]) for i in _VEL]
            self._p, self._q1, self._r = p, q, r

        def _release(self) -> None:
            """Write the closed-form state back into the library's filter, which takes over."""
            if self._p is None:
                return
            pp, pv, vv = self._p
            self.kf.state = np.array(self._x + self._v, dtype=np.float64).reshape(8, 1)
            self.kf.state_covariance = np.kron(np.array([[pp, pv], [pv, vv]]), np.eye(4))
            self._p = None

        def set_kf_covariances(self, measurement_noise: Optional[np.ndarray] = None,
                               process_noise: Optional[np.ndarray] = None,
                               state_covariance: Optional[np.ndarray] = None) -> None:
            """Set the noise as the library does, then use the closed form if it still fits."""
            self._release()
            super().set_kf_covariances(measurement_noise, process_noise, state_covariance)
            self._adopt()

        def predict(self, frame_step: float = 1.0, frame_rate: Optional[float] = None) -> None:
            """Advance the state by ``frame_step`` nominal frames (x += dt v; P = F P F' + Q)."""
            if self._p is not None and self._q1 is not None:
                q = _STEPS.q(self.motion, float(frame_step), frame_rate, self._q1)
                if q is not None:
                    dt = float(frame_step)
                    x, v = self._x, self._v
                    for i in range(4):
                        x[i] += dt * v[i]
                    pp, pv, vv = self._p
                    self._p = (pp + 2.0 * dt * pv + dt * dt * vv + q[0],
                               pv + dt * vv + q[1], vv + q[2])
                    return
                self._release()
            super().predict(frame_step, frame_rate)

        def update(self, bbox: Optional[np.ndarray]) -> None:
            """Correct the state with a box (Joseph form); None: keep the prediction."""
            if self._p is None:
                super().update(bbox)
                return
            if bbox is None:
                return
            pp, pv, vv = self._p
            r = self._r
            s = pp + r
            kp, kv = pp / s, pv / s
            z = np.asarray(bbox, dtype=np.float64).reshape(4).tolist()
            x, v = self._x, self._v
            for i in range(4):
                y = z[i] - x[i]
                x[i] += kp * y
                v[i] += kv * y
            a = 1.0 - kp
            self._p = (a * a * pp + kp * kp * r,
                       a * (pv - kv * pp) + kp * kv * r,
                       kv * kv * pp - 2.0 * kv * pv + vv + kv * kv * r)

        def state_to_bbox(self) -> np.ndarray:
            """Return the box [x1, y1, x2, y2] of the current state."""
            if self._p is None:
                return super().state_to_bbox()
            return np.array(self._x, dtype=np.float64)

        def get_state(self) -> dict:
            """Snapshot the state through the library's filter (its format)."""
            held = self._p is not None
            self._release()
            snap = super().get_state()
            if held:
                self._adopt()
            return snap

        def set_state(self, state: dict) -> None:
            """Restore a snapshot into the library's filter, then the closed form if it fits."""
            self._release()
            super().set_state(state)
            self._adopt()

        def closed_form(self) -> bool:
            """Return True while predict and update run in closed form."""
            return self._p is not None

    return BlockXYXYEstimator
