# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The models one process serves: its graph of models, as its live choices join and leave.

One per process (its runtime's, ``backends.runtime``). Each model's
:class:`.graph_level.GraphLevel` joins it; the graph's signature (the models
served) names the level each model expects in it, and a graph is in its
normal state while no member is busy (settling, re-evaluating, looking).
"""

import threading
from typing import Dict, List, Protocol, Tuple
import weakref


class Member(Protocol):
    """A model's part of the graph (:class:`.graph_level.GraphLevel`)."""

    def busy(self, looks: bool = True) -> str:
        """Return why this model is not in its normal state ('' when it is)."""


class GraphModels:
    """The models one process serves (one manager's live choices): the graph's signature."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._members: Dict[int, Tuple[weakref.ref, str]] = {}
        self.version = 0        # bumped at every join and leave

    def join(self, member: Member, model: str) -> None:
        """Count ``member`` (one model's live choice) as serving ``model`` in this process."""
        with self._lock:
            self._members[id(member)] = (weakref.ref(member), model)
            self.version += 1

    def leave(self, member: Member) -> None:
        """Stop counting ``member`` (idempotent)."""
        with self._lock:
            if self._members.pop(id(member), None) is not None:
                self.version += 1

    def _live(self) -> List[Tuple[Member, str]]:
        """Return the members still there (one that was never closed and is gone leaves)."""
        with self._lock:
            gone = [k for k, (ref, _) in self._members.items() if ref() is None]
            for k in gone:
                del self._members[k]
            self.version += bool(gone)
            return [(m, model) for ref, model in self._members.values()
                    if (m := ref()) is not None]

    def signature(self) -> Tuple[str, ...]:
        """Return the models served, sorted, a model served by two nodes twice."""
        return tuple(sorted(model for _, model in self._live()))

    def busy(self, looks: bool = True) -> str:
        """Return why the graph is not in its normal state ('' when it is)."""
        for member, model in self._live():
            why = member.busy(looks)
            if why:
                return f'{model}: {why}'
        return ''
