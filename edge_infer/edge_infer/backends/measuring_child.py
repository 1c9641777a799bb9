# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The measuring child process: a manager that measures for a serving process (no ROS).

Started by :class:`.measure.apart.MeasuringChild` as
``python -m edge_infer.backends.measuring_child FD``: it reads its settings
from the connection FD, then answers profile requests until the serving
process closes it, lets it go when idle, or dies. Its timed runs hold the
serving process's compute gate, its power meter is that process's, and its
log lines go there (see :mod:`.measure.apart`).
"""

import contextlib
from multiprocessing.connection import Connection
import os
import pathlib
import signal
import sys
import threading
import time

from .manager import BackendManager
from ..core.backend import first_line


class _Link:
    """The child's side of the connection: requests answered by the serving process."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self._send = threading.Lock()     # log lines may come from other threads

    def send(self, *msg) -> None:
        with self._send:
            self.conn.send(msg)

    def ask(self, *msg):
        self.send(*msg)
        return self.conn.recv()

    @contextlib.contextmanager
    def hold(self):
        """Hold the serving process's gate alone (one timed run)."""
        self.ask('hold')
        try:
            yield
        finally:
            self.send('free')


class _Energy:
    """What a meter's ``end`` returns, as the profile reads it."""

    def __init__(self, joules: float, error_j: float, source: str):
        self.joules, self.error_j, self.source = joules, error_j, source


class _Meter:
    """The serving process's power meter, asked over the link."""

    def __init__(self, link: _Link):
        self.link = link

    def begin(self, model: str):
        return self.link.ask('begin', model)

    def end(self, token):
        rec = self.link.ask('end', token)
        return None if rec is None else _Energy(*rec)


def _watch_parent(parent: int) -> None:
    """Leave, with what this process started (an int8 quantizer), once the parent is gone."""
    while os.getppid() == parent:
        time.sleep(0.5)
    if os.getpgid(0) == os.getpid():    # our own group (MeasuringChild starts us so)
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(0)     # the serving process is gone: nobody reads our run


def main(argv=None) -> int:
    """Serve profile requests on the connection named by its file descriptor."""
    argv = sys.argv[1:] if argv is None else argv
    link = _Link(Connection(int(argv[0])))
    setup = link.conn.recv()
    threading.Thread(target=_watch_parent, args=(setup['parent'],), daemon=True).start()
    manager = BackendManager(pathlib.Path(setup['cache_dir']), config=setup['config'],
                             log=lambda line: link.send('log', line),
                             meter=_Meter(link) if setup['metered'] else None)
    manager.runtime.gate.forward(link.hold)     # the serving process's gate holds the runs
    manager.cap_threads(setup['threads'], setup['why'])
    manager.own_pids = (setup['parent'],)
    while True:
        try:
            request = link.conn.recv()
        except (EOFError, OSError):
            return 0
        _, spec, path, wants_progress, kwargs = request
        try:
            run = manager.profile(
                spec, pathlib.Path(path),
                progress=(lambda event: link.send('progress', event)) if wants_progress
                else None, **kwargs)
        except Exception as exc:  # said in the serving process's error
            link.send('failed', f"model '{spec.name}': measuring failed: "
                                f'{type(exc).__name__}: {first_line(exc)}')
            continue
        link.send('done', run)


if __name__ == '__main__':
    sys.exit(main())
