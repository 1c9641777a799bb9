# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Sparse rows: a detector's outputs sent as the rows that can hold a detection.

NanoDet's raw outputs are one row per anchor cell: class scores (N x 80)
and box distributions (N x 44), 1.76 MB a frame at 416 x 416, and nearly
every row is background. Its decoder keeps a cell only where the cell's
best class score is over the threshold (:func:`..core.postprocess.best_class`).
So ``edge_infer serve`` (``--rows-floor``, default 0.05) sends only the
cells whose best score is at least that floor: their index, their score
row and their paired box row (``edge_infer_rows`` INT32, ``edge_infer_scores``,
``edge_infer_paired``). The robot writes them back into dense zero-filled
outputs (:class:`Rebuild`) and decodes as usual: for any score threshold at
or over the floor, the detections are exactly those of the dense outputs
(a cell under the floor is under the threshold too, and its rows are never
read). A node whose threshold is under the server's floor refuses the
server's session (the session's ``rows_floor``, checked by core.model).

The plan travels in the model's config as strings (no quotes in a
``config.pbtxt`` string): ``edge_infer_rows`` = ``floor=0.05;scores=a,b;paired=c,d``
(``scores[i]`` pairs with ``paired[i]``, the same cells) and
``edge_infer_dense`` = ``name:1x2704x80,...`` (every output, in order).
"""

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

ROWS, SCORES, PAIRED = 'edge_infer_rows', 'edge_infer_scores', 'edge_infer_paired'
PLAN_KEY, DENSE_KEY = 'edge_infer_rows', 'edge_infer_dense'
DEFAULT_FLOOR = 0.05


class Plan:
    """Which outputs are scores, which rows pair with them, and the floor."""

    def __init__(self, floor: float, scores: Sequence[str], paired: Sequence[str],
                 dense: Sequence[Tuple[str, Tuple[int, ...]]]):
        self.floor = float(floor)
        self.scores, self.paired = list(scores), list(paired)
        self.dense = [(n, tuple(int(d) for d in s)) for n, s in dense]
        shapes = dict(self.dense)
        self.cells = [int(np.prod(shapes[n][:-1])) for n in self.scores]
        self.classes = shapes[self.scores[0]][-1]
        self.width = shapes[self.paired[0]][-1]

    def params(self) -> Dict[str, str]:
        """Return the config parameters that carry this plan."""
        return {PLAN_KEY: f"floor={self.floor!r};scores={','.join(self.scores)};"
                          f"paired={','.join(self.paired)}",
                DENSE_KEY: ','.join(f"{n}:{'x'.join(str(d) for d in s)}"
                                    for n, s in self.dense)}

    @classmethod
    def from_params(cls, params: Dict[str, str]) -> Optional['Plan']:
        """Return the plan a config carries, or None (dense outputs)."""
        if not params.get(PLAN_KEY):
            return None
        parts = dict(p.split('=', 1) for p in params[PLAN_KEY].split(';'))
        dense = []
        for item in params[DENSE_KEY].split(','):
            name, shape = item.rsplit(':', 1)
            dense.append((name, tuple(int(d) for d in shape.split('x'))))
        return cls(float(parts['floor']), parts['scores'].split(','),
                   parts['paired'].split(','), dense)


def plan_for(decoder: str, outputs: Sequence[Tuple[str, Sequence[int]]], strides: Sequence[int],
             floor: float) -> Optional[Plan]:
    """Return the plan for a registry decoder's outputs, or None where it has no sparse form.

    NanoDet: the outputs are [scores per stride..., box rows per stride...].
    """
    n = len(strides)
    if decoder != 'nanodet' or floor <= 0 or len(outputs) != 2 * n:
        return None
    names = [name for name, _ in outputs]
    return Plan(floor, names[:n], names[n:], [(name, tuple(s)) for name, s in outputs])


def encode(plan: Plan, outs: Dict[str, np.ndarray]) -> Tuple[np.ndarray, ...]:
    """Return (cell indices int32, their score rows, their paired rows): the server's side."""
    rows, scores, paired, offset = [], [], [], 0
    for s_name, p_name, cells in zip(plan.scores, plan.paired, plan.cells):
        s = outs[s_name].reshape(cells, -1)
        keep = np.nonzero((s >= plan.floor).any(1))[0]   # 4x faster than s.max(1) here
        rows.append((keep + offset).astype(np.int32))
        scores.append(s[keep])
        paired.append(outs[p_name].reshape(cells, -1)[keep])
        offset += cells
    return (np.concatenate(rows), np.concatenate(scores).astype(np.float32, copy=False),
            np.concatenate(paired).astype(np.float32, copy=False))


class Rebuild:
    """The dense outputs again, from the rows that came (the robot's side).

    One zero-filled buffer per kind, reused: each frame clears the rows the
    last one wrote and writes its own. The outputs returned are views on
    those buffers, valid until the next frame (like a local session's).
    """

    def __init__(self, plan: Plan):
        self.plan = plan
        total = sum(plan.cells)
        self._scores = np.zeros((total, plan.classes), np.float32)
        self._paired = np.zeros((total, plan.width), np.float32)
        self._last = np.zeros(0, np.int64)
        shapes = dict(plan.dense)
        views: Dict[str, np.ndarray] = {}
        offset = 0
        for s_name, p_name, cells in zip(plan.scores, plan.paired, plan.cells):
            views[s_name] = self._scores[offset:offset + cells].reshape(shapes[s_name])
            views[p_name] = self._paired[offset:offset + cells].reshape(shapes[p_name])
            offset += cells
        self.outputs: List[np.ndarray] = [views[n] for n, _ in plan.dense]

    def __call__(self, rows: np.ndarray, scores: np.ndarray,
                 paired: np.ndarray) -> List[np.ndarray]:
        """Write one frame's rows into the dense outputs; return them (the plan's order)."""
        # a copy: ``rows`` may be a view on a shared-memory region the next answer
        # overwrites, and the next frame clears the rows this one wrote
        rows = np.asarray(rows).reshape(-1).astype(np.int64)
        n = rows.shape[0]
        scores = np.asarray(scores).reshape(n, self.plan.classes)
        paired = np.asarray(paired).reshape(n, self.plan.width)
        if n and (rows.min() < 0 or rows.max() >= self._scores.shape[0]):
            raise ValueError(f'row index out of range 0..{self._scores.shape[0] - 1}')
        self._scores[self._last] = 0.0
        self._paired[self._last] = 0.0
        self._scores[rows] = scores
        self._paired[rows] = paired
        self._last = rows
        return self.outputs
