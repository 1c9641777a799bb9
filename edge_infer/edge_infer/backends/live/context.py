# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What one model's live choice hands its parts: a small typed context (no ROS).

:class:`.choice.LiveChoice` is made of parts: the background profile behind a
provisional start (:mod:`.startup`), the drift re-evaluation (:mod:`.drift`),
the runners-up (:mod:`.runners_up`), the pacing (:mod:`.pacing`) and the load
watch (:mod:`.load_watch`). Each gets what it needs from this context or by
argument; none reads the chooser's attributes.
"""

from contextlib import AbstractContextManager
from dataclasses import dataclass
import pathlib
import threading
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple, Union

from .rule import LiveSettings
from .runner_memory import RunnerMemory
from .runners_up import Openings
from ..measure.gate import ComputeGate
from ..measure.profiling import CandidateResult, ProfileRun
from ..measure.settle import SettleQueue
from ...core.backend import Backend
from ...core.model import Model
from ...core.registry import ModelSpec

Log = Callable[[str], None]


class Member(Protocol):
    """A model's part of its process's graph (``.graph_level.GraphLevel``)."""

    def busy(self, looks: bool = True) -> str:
        """Return why this model is not in its normal state ('' when it is)."""


class Graph(Protocol):
    """The models one process serves (``.graph_level.GraphModels``), as its parts use it."""

    @property
    def version(self) -> int:
        """Return a count bumped at every join and leave."""

    def join(self, member: Member, model: str) -> None:
        """Count ``member`` (one model's part of the graph) as serving ``model``."""

    def leave(self, member: Member) -> None:
        """Stop counting ``member``."""

    def signature(self) -> Tuple[str, ...]:
        """Return the models served, sorted."""

    def busy(self, looks: bool = True) -> str:
        """Return why the graph is not in its normal state ('' when it is)."""


class Runtime(Protocol):
    """What the run-time choice uses of its process's ``backends.runtime.Runtime``.

    Declared here, not imported: that module gathers these parts of the run-time
    choice, which sit below it.
    """

    @property
    def gate(self) -> ComputeGate:
        """Return the compute gate: frames shared, a candidate's timed runs alone."""

    @property
    def openings(self) -> Openings:
        """Return the runner-up sessions being opened."""

    @property
    def runner_memory(self) -> RunnerMemory:
        """Return the runner-up memory the models' looks share."""

    @property
    def graph(self) -> Graph:
        """Return the models this process serves."""

    @property
    def reevaluation(self) -> AbstractContextManager:
        """Return what one background re-evaluation at a time holds."""


class Manager(Protocol):
    """What the run-time choice asks of the backend manager (``BackendManager``).

    Declared here, not imported: the run-time choice sits below the manager.
    A simulated manager (:mod:`edge_infer.testing.simulated`) gives what a
    simulated node reaches of it.
    """

    config: Dict[str, Any]

    @property
    def runtime(self) -> Runtime:
        """Return what the process's models share."""

    @property
    def settle_queue(self) -> SettleQueue:
        """Return the runtime's: one model settles at a time, the lightest first."""

    @property
    def completion_queue(self) -> SettleQueue:
        """Return the runtime's: the rest of each profile, after every settle."""

    def candidates(self, spec: ModelSpec, model_path: pathlib.Path) -> List[Backend]:
        """Return the model's candidate backends."""

    def over_budget(self, backend: Backend) -> str:
        """Return why ``backend`` exceeds the thread budget ('' when it does not)."""

    def select(self, results: List[CandidateResult], spec: ModelSpec, objective: str = ...,
               max_latency_ms: float = ..., min_accuracy: float = ...,
               latency_percentile: int = ...) -> Tuple[Optional[CandidateResult], str]:
        """Return (chosen result or None, why)."""

    def choose(self, spec: ModelSpec, model_path: pathlib.Path, objective: str = ...,
               max_latency_ms: float = ..., min_accuracy: float = ..., force: str = ...,
               use_cache: bool = ..., latency_percentile: int = ...,
               progress: Optional[Callable[[dict], None]] = ...,
               cancel: Optional[threading.Event] = ...,
               only: Union[None, Sequence[str], Callable[[], Optional[Sequence[str]]]] = ...,
               screen: float = ...) -> Tuple[Backend, ProfileRun]:
        """Profile (or read the cache); return the chosen backend and the run."""

    def profile(self, spec: ModelSpec, model_path: pathlib.Path, use_cache: bool = ...,
                min_accuracy: float = ..., budget_s: Optional[float] = ...,
                only: Optional[Sequence[str]] = ..., cancel: Optional[threading.Event] = ...,
                persist: bool = ...,
                progress: Optional[Callable[[dict], None]] = ..., measure: bool = ...,
                others: str = ..., screen: float = ...) -> ProfileRun:
        """Measure (or read) every candidate; return the run."""

    def profiling(self) -> bool:
        """Return True while this process measures a model."""


class Clock(Protocol):
    """``monotonic()`` and ``perf_counter()``: the time module, or a simulated clock."""

    def monotonic(self) -> float:
        """Return seconds on a clock that never goes back."""

    def perf_counter(self) -> float:
        """Return seconds on the finest clock."""


@dataclass(frozen=True)
class ChoiceContext:
    """One model's live choice: what it chooses for, with what, and how it reports."""

    manager: Manager
    spec: ModelSpec
    model_path: pathlib.Path
    settings: LiveSettings
    log: Log
    warn: Log
    clock: Clock
    cancel: threading.Event     # set: background work stops at its next check
    open_model: Callable[[Backend], Model]      # a candidate backend -> a Model serving on it
    spawn: Callable[[Callable[[], None], str], object]  # background work, named
    runtime: Runtime            # what the process's models share

    def select(self, results):
        """Return (chosen result or None, why) by the settings' objective and limits."""
        st = self.settings
        return self.manager.select(results, self.spec, st.objective, st.max_latency_ms,
                                   st.min_accuracy, st.latency_percentile)

    def backend(self, name: str) -> Backend:
        """Return candidate ``name`` of this model (KeyError: not a candidate)."""
        return {b.name: b for b in self.manager.candidates(self.spec, self.model_path)}[name]
