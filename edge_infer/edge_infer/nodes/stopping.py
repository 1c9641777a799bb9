# Copyright 2026 edge_infer contributors. Apache-2.0.
"""How a ROS process of edge_infer stops: any number of SIGINT / SIGTERM, at any moment.

Kept free of heavy imports: the ``perception_container`` executable
(:mod:`.container_entry`) installs :class:`StopSignals` first and only then imports rclpy,
the inference libraries and the nodes, which takes seconds. A stop requested
in those seconds (a launch stopped while it starts the container, a respawn
at the wrong moment) used to end in a ``KeyboardInterrupt`` traceback.

The last moments matter too: once ``main`` has returned, Python's
finalisation puts the default handlers back, and a SIGINT that arrived then
(``ros2 launch`` sends its own after the terminal's) killed a container that
had already shut down cleanly: exit code -2, and the launch said "process has
died". :meth:`StopSignals.ignore_rest` ignores both signals from the end of
the shutdown to the exit.
"""

import os
import signal
import sys
import time

PARTICIPANT_WAIT_S = 1.0     # for a DDS participant still here after its nodes


def _to_stderr(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError:     # the launcher that read our output is gone
        pass


class StopSignals:
    """SIGINT / SIGTERM handling of a ROS process: the first one stops it, later ones wait.

    A terminal's Ctrl-C reaches every process of the foreground group, and
    ``ros2 launch`` then sends its own SIGINT to each child: the container
    gets two, the second while it shuts down. Python's default handler raised
    ``KeyboardInterrupt`` wherever that second one landed (a thread join, an
    executor's shutdown), the process died with a traceback and exit code -2,
    and its Fast DDS shared memory stayed in /dev/shm. Installed before
    ``rclpy.init()``, this handler is the one rclpy's own signal handler
    (which shuts the ROS context down, so every spin loop ends) calls after
    it: it never raises. Later signals are counted and said once, and the
    shutdown already under way goes on to its end. A signal that comes before
    ``rclpy.init()`` is remembered (:attr:`count`): the caller checks it after
    ``rclpy.init()`` and stops at once.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, log=None):
        """``log``: called once with a line when a second signal arrives (default stderr)."""
        self.count = 0
        self.log = log or _to_stderr
        self._previous = {}

    def install(self) -> 'StopSignals':
        """Handle SIGINT and SIGTERM in this (main) thread; return self."""
        for sig in self.SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def restore(self) -> None:
        """Put the handlers back as they were."""
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}

    def ignore_rest(self) -> None:
        """Ignore both signals from now to the exit (the shutdown is done)."""
        for sig in self.SIGNALS:
            signal.signal(sig, signal.SIG_IGN)

    def _handle(self, signum, frame) -> None:
        self.count += 1
        if self.count == 1:
            # rclpy's handler shut the context down already when it is installed
            # (rclpy.init's default); without it, do it here. Before rclpy is
            # imported there is nothing to shut down (and no import from here).
            rclpy = sys.modules.get('rclpy')
            if rclpy is not None:
                rclpy.try_shutdown()
        elif self.count == 2:
            self.log(f'{signal.Signals(signum).name} again: the shutdown already under way '
                     f'goes on (nodes released, then exit)')


class _Exit:
    """What the process's last moments need to know (set by the container's main)."""

    kept: list = []             # objects the process leaves without freeing
    nodes_destroyed = False     # every node destroyed: the DDS participant is gone


def keep_until_exit(objects, nodes_destroyed: bool) -> None:
    """Keep ``objects`` (nodes, executors, sessions) alive to the exit; note the nodes' end.

    Freed as ``main``'s frame goes, they ran the inference libraries' and
    rclpy's destructors after a clean shutdown, with daemon threads (the
    power meter's sampler) still running; a container aborted there (exit
    -6, "process has died") now and then: 1 of 17 Ctrl-C stops of ``ros2
    launch`` in one series, twice in CI's robot stage, none in 60 more. The
    OS frees them at :func:`leave`'s ``os._exit``.
    """
    _Exit.kept.append(objects)
    _Exit.nodes_destroyed = nodes_destroyed


def leave(code: int) -> int:
    """Exit with ``code`` at once, without finalizing Python, once the nodes are destroyed.

    By then (:func:`keep_until_exit`) rclpy is shut down, its logging is
    flushed, and Fast DDS deleted the process's participant with the
    context's last node, which said goodbye to its peers. What is left is
    freeing the libraries' objects, and that aborted the process now and then
    (exit -6). So the process leaves with ``os._exit``, after removing any
    Fast DDS file of its own, which a participant's destructor would have
    unlinked.

    - A participant that outlives the nodes is waited for up to
      PARTICIPANT_WAIT_S. One stayed for good in 3 of about 260 SIGTERM
      stops on the robot stage. The normal exit then did not remove it
      either: its segments were left in /dev/shm. So the process leaves
      anyway, with one line.
    - A background measurement still running (container.STOP_WAIT_S) leaves
      the same way. Finalizing Python while its thread is in native code
      aborted the process (ONNX Runtime: "terminate called without an active
      exception").
    - Where the nodes were not destroyed (a failed start), Python finalizes
      as usual, so that the participant still says goodbye. Leaving every
      stop with ``os._exit``, nodes or not (tried on 2026-11-27), kept the
      participants in their peers' graphs, and the robot stage's next
      containers went unanswered for 60 s in 5 tests.
    """
    from .. import shm
    from ..backends.live.background import still_running
    if not (_Exit.nodes_destroyed or still_running()):
        return code
    deadline = time.monotonic() + PARTICIPANT_WAIT_S
    while _Exit.nodes_destroyed and shm.segment_locks(os.getpid()):
        if time.monotonic() > deadline:
            _to_stderr(f'leaving without the goodbye of the DDS participant: it outlived '
                       f'every node by {PARTICIPANT_WAIT_S:g} s (its peers keep it for its '
                       f'lease)')
            break
        time.sleep(0.01)
    shm.remove_own()    # what the DDS participants' destructors would have unlinked
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:     # the launcher that read our output is gone
            pass
    os._exit(code)
