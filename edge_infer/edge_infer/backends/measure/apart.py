# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Measure the candidates in a child process, serve in the node's (no ROS).

A profile loads every candidate: ONNX Runtime, OpenVINO, ncnn and its Vulkan
driver, the accuracy reference, the calibration frames. Once a library is
imported it stays in the process, and the heap a profile grew is never all
given back: after a first start the container held 815-870 MB for good,
against 465-480 MB when it had started from a warm cache with the same
choice. So the node's process only serves; a child process measures, writes
the board's profile to the cache and leaves, and its memory goes with it.

The child asks the serving process for what only that process has:

- the compute gate (its runtime's, :mod:`..runtime`): each timed run holds it
  alone in the serving process, so the node's frames never run beside a timed run
  (the child's request and the parent's answer take ~0.1 ms);
- the power meter: its ``begin`` and ``end`` run in the serving process;
- its log: every line the child's manager writes goes to the node's log.

Its load probe counts the serving process's CPU time as its own (frames are
held back during timed runs; between them they are the board's own work).
A cancel (a node's deactivation, a shutdown) kills the child's process
group at once: a stop never waits for a measurement. The child leaves once
idle for ``idle_s`` and when the serving process dies, and is replaced
before a profile once it has grown past ``measure_apart_max_mb``.

The child is ``python -m edge_infer.backends.measuring_child FD``
(:mod:`..measuring_child`: it builds a manager, so it sits above this part).
"""

import contextlib
from multiprocessing.connection import Connection
import os
import pathlib
import signal
import socket
import subprocess
import sys
import threading
from typing import Callable, Optional, Tuple

from ...core.backend import BackendError


class MeasuringChild:
    """The serving process's side: start the child, answer it, return its runs."""

    def __init__(self, manager, idle_s: float = 5.0):
        self.manager = manager
        self.idle_s = float(idle_s)
        self._proc: Optional[subprocess.Popen] = None
        self._conn: Optional[Connection] = None
        self._lock = threading.Lock()
        self._timer: Optional[threading.Timer] = None
        self.started = 0        # children started (a test and the log read it)
        self._sent: dict = {}   # the config the running child was started with

    def profile(self, spec, model_path: pathlib.Path, cancel=None,
                progress: Optional[Callable[[dict], None]] = None, **kwargs):
        """Run the manager's profile of ``spec`` in the child; return its run.

        BackendError when it is cancelled (the child is killed) or when the
        child fails or dies (the reason in the message).
        """
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            try:
                proc, conn = self._start()
                conn.send(('profile', spec, str(model_path), bool(progress), kwargs))
                run = self._answer(proc, conn, spec.name, cancel, progress)
            except BaseException:
                self._kill()
                raise
            self.manager.cache.refresh()
            self._timer = threading.Timer(self.idle_s, self.close)
            self._timer.daemon = True
            self._timer.start()
            return run

    def _start(self) -> Tuple[subprocess.Popen, Connection]:
        if self._proc is not None and self._conn is not None and self._proc.poll() is None:
            if self._sent == self.manager.config and not self._grown():
                return self._proc, self._conn
            # a node changed the config (its remote servers), or the child kept
            # what an earlier profile loaded: a fresh child
            self._kill()
        mine, theirs = socket.socketpair()
        m = self.manager
        try:
            self._proc = subprocess.Popen(
                [sys.executable, '-m', 'edge_infer.backends.measuring_child',
                 str(theirs.fileno())], pass_fds=(theirs.fileno(),),
                start_new_session=True)     # its own group: a cancel kills a quantizer too
        finally:
            theirs.close()
        conn = self._conn = Connection(mine.detach())
        self._sent = dict(m.config)
        conn.send({'cache_dir': str(m.cache_dir), 'config': m.config,
                   'threads': m.thread_budget, 'why': m.thread_budget_why,
                   'metered': m.meter is not None, 'parent': os.getpid()})
        self.started += 1
        return self._proc, conn

    def _grown(self) -> bool:
        """Return True when the child's RSS is over ``measure_apart_max_mb`` (0: never)."""
        import psutil
        cap = float(self.manager.config.get('measure_apart_max_mb') or 0)
        try:
            return bool(cap) and self._proc is not None and \
                psutil.Process(self._proc.pid).memory_info().rss / 1e6 > cap
        except psutil.Error:
            return False

    def _answer(self, proc: subprocess.Popen, conn: Connection, model: str, cancel, progress):
        """Answer the child's requests until its run comes back."""
        held = contextlib.ExitStack()
        tokens = {}
        meter = self.manager.meter
        try:
            while True:
                if cancel is not None and cancel.is_set():
                    raise BackendError(f"model '{model}': profile cancelled")
                if not conn.poll(0.05):
                    if proc.poll() is not None:
                        raise BackendError(f"model '{model}': the measuring process ended "
                                           f'(exit {proc.returncode}) before its profile')
                    continue
                try:
                    kind, *body = conn.recv()
                except (EOFError, OSError):
                    proc.wait(5)
                    raise BackendError(f"model '{model}': the measuring process ended "
                                       f'(exit {proc.returncode}) before its profile') \
                        from None
                if kind == 'hold':
                    held.enter_context(self.manager.runtime.gate.exclusive())
                    conn.send('go')
                elif kind == 'free':
                    held.close()
                elif kind == 'begin':
                    token = meter.begin(body[0]) if meter is not None else None
                    tokens[id(token)] = token
                    conn.send(id(token))
                elif kind == 'end':
                    rec = meter.end(tokens.pop(body[0])) if meter is not None else None
                    conn.send(None if rec is None else (rec.joules, rec.error_j, rec.source))
                elif kind == 'log':
                    self.manager.log(body[0])
                elif kind == 'progress':
                    progress(body[0])
                elif kind == 'done':
                    return body[0]
                elif kind == 'failed':
                    raise BackendError(body[0])
        finally:
            held.close()

    def _kill(self) -> None:
        """End the child and everything it started, at once."""
        proc, self._proc = self._proc, None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)

    def close(self) -> None:
        """Let the child go (idle, or the manager is done with it)."""
        if not self._lock.acquire(blocking=False):
            return      # a profile is under way: it rearms the timer when it ends
        try:
            self._kill()
        finally:
            self._lock.release()
