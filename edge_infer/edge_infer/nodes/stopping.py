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
import threading
from typing import NoReturn, Optional

# How long a short command waits for the ROS middleware to tear down once its
# answer is out (a teardown takes ~0.1 s here; see :func:`shut_down_within`).
TEARDOWN_GRACE_S = 10.0


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
        # executors whose shutdown failed: freeing one aborts the process (rclpy's
        # EventsExecutor: "Destroying callback manager with callbacks remaining"),
        # so they are kept to the exit, and :func:`leave` leaves at once
        self.unfreeable: list = []

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
            # A signal during `import rclpy` finds the module half made, without
            # try_shutdown (AttributeError, exit 1: 1 stop in about 100 under ros2
            # launch, 2026-11-29): rclpy.init has not run, so there is nothing to
            # shut down; main() sees the count after rclpy.init and stops then.
            shut = getattr(sys.modules.get('rclpy'), 'try_shutdown', None)
            if shut is not None:
                shut()
        elif self.count == 2:
            self.log(f'{signal.Signals(signum).name} again: the shutdown already under way '
                     f'goes on (nodes released, then exit)')


def leave(code: int, stop: Optional['StopSignals'] = None) -> int:
    """Return ``code``, or exit with it at once while a background measurement still runs.

    Also at once when an executor could not be shut down (``stop.unfreeable``):
    Python's exit would free it and abort (exit -6; the robot stage,
    2026-11-29, a container stopped right after its activation).

    A stop waits for background work only briefly (container.STOP_WAIT_S): a
    profile inside one candidate's measurement ends by itself, but finalizing
    Python while its thread is in native code aborted the process (ONNX
    Runtime: "terminate called without an active exception"). The nodes are
    shut down and the ROS context is down by then; ``os._exit`` skips the
    interpreter's finalization, and with it the destructors that unlink Fast
    DDS's shared memory: this process's files are removed first (a restarted
    robot stage's kill -9 test found them left).

    Not always: leaving every stop this way (tried on 2026-11-27 against a
    rare abort at exit) skipped the DDS participants' goodbye as well, and the
    robot stage's next containers then went unanswered for 60 s in 5 tests.
    """
    from ..backends.live.background import still_running
    if still_running() or (stop is not None and stop.unfreeable):
        _exit_now(code)
    return code


def _exit_now(code: int) -> NoReturn:
    """Leave with ``code`` at once, this process's Fast DDS files removed first.

    ``os._exit`` skips the destructors that would have unlinked them.
    """
    from .. import shm
    shm.remove_own()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def shut_down_within(nodes, code: int, grace_s: float = TEARDOWN_GRACE_S, log=None) -> int:
    """Destroy ``nodes``, shut ROS down and free its context; past ``grace_s``, exit with ``code``.

    For short commands whose answer is already out (``edge_infer lifecycle``).
    CI, 2026-11-28: the command printed its refusal, then never exited; the
    test killed it after 120 s. A rare hang in a DDS participant's teardown is
    a known class (Fast DDS #235, rclpy #456); it must not keep the caller,
    a script or ``ros2 lifecycle``-style automation, waiting. The teardown
    runs in a thread, the context's destruction (where the participant is
    deleted) included; if it has not finished in ``grace_s``, one line says so,
    this process's Fast DDS files are removed and the process leaves with
    ``code`` at once.
    """
    import rclpy
    contexts = {id(n.context): n.context for n in nodes if getattr(n, 'context', None)}
    done = threading.Event()

    def teardown():
        try:
            for node in nodes:
                node.destroy_node()
            rclpy.try_shutdown()
            for context in contexts.values():
                context.try_shutdown()
                context.destroy()
        finally:
            done.set()
    threading.Thread(target=teardown, name='ros-teardown', daemon=True).start()
    if done.wait(grace_s):
        return code
    (log or _to_stderr)(f'the ROS middleware did not shut down in {grace_s:g} s: '
                        f'leaving without it (exit code {code})')
    _exit_now(code)
