# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What to do when the perception container exits: restart it, give up, or end the launch.

The launch file (launch/perception.launch.py) restarts a crashed container
itself, with a delay; this module holds the rule, so that it can be tested
without ROS:

- a **requested stop** (the launch is shutting down: Ctrl-C, SIGINT from
  systemd): nothing; the launch ends 0;
- **exit 0** while the launch runs: the container was stopped on its own (a
  ``kill -INT`` of its pid): the launch ends too, with 0;
- **exit 2** (a parameter it cannot use) or **3** (not every node became
  active and ``keep_partial`` is false): a restart would fail the same way;
  the launch ends non-zero with one line;
- **anything else is a crash** (a signal: -9, -11; a traceback: 1): restarted
  after ``delay_s``, doubled for each further crash in a row, at most
  ``max_delay_s``. A run that lasted ``stable_s`` resets the count. After
  ``max_crashes`` crashes in a row the launch gives up, non-zero, with one
  line: a crash loop never spins, and systemd's ``Restart=on-failure`` (see
  config/edge_infer.service) takes over from there.

The restarted container reads the backend choice from the profile cache
(``use_profile_cache``), so it serves again within seconds.
"""

from dataclasses import dataclass
import signal
import time
from typing import Callable, Optional

EXIT_STOPPED = 0
EXIT_BAD_PARAMETER = 2     # nodes/container.py
EXIT_PARTIAL = 3           # nodes/container.py
FINAL = {EXIT_BAD_PARAMETER: 'a parameter it cannot use (its line above)',
         EXIT_PARTIAL: 'not every node became active and keep_partial is false'}


def describe_exit(code: int) -> str:
    """Return 'exit code -11 (SIGSEGV)' for a signal's death, 'exit code 1' otherwise."""
    if code < 0:
        try:
            return f'exit code {code} ({signal.Signals(-code).name})'
        except ValueError:
            pass
    return f'exit code {code}'


@dataclass
class RespawnPolicy:
    """How the launch restarts a crashed process (launch arguments ``respawn*``)."""

    enabled: bool = True
    delay_s: float = 0.2        # before the first restart
    max_delay_s: float = 30.0
    max_crashes: int = 5        # crashes in a row before giving up
    stable_s: float = 10.0      # a run this long ends a crash series


@dataclass
class Decision:
    """What to do about one exit: 'none', 'restart' (after ``delay_s``), 'stop' or 'give_up'."""

    action: str
    line: str = ''
    delay_s: float = 0.0


class Supervisor:
    """Counts one process's crashes and decides each time it exits."""

    def __init__(self, name: str, policy: RespawnPolicy,
                 clock: Callable[[], float] = time.monotonic):
        self.name = name
        self.policy = policy
        self.clock = clock
        self.crashes = 0            # in a row
        self.restarts = 0           # in all
        self._started: Optional[float] = None

    def started(self) -> None:
        """Note that the process (re)started now."""
        self._started = self.clock()

    def exited(self, code: int, requested: bool) -> Decision:
        """Decide about an exit with ``code``; ``requested``: the launch is shutting down."""
        if requested:
            return Decision('none')
        if code == EXIT_STOPPED:
            return Decision('stop', f'{self.name} was stopped (exit code 0): ending the launch')
        if code in FINAL:
            return Decision('give_up', f'{self.name} stopped with {describe_exit(code)}, '
                                       f'{FINAL[code]}: not restarted; perception is down')
        lived = self.clock() - self._started if self._started is not None else 0.0
        if lived >= self.policy.stable_s:
            self.crashes = 0
        self.crashes += 1
        what = f'{self.name} crashed ({describe_exit(code)}) after {lived:.1f} s'
        if not self.policy.enabled:
            return Decision('give_up', f'{what}; respawn is off: perception is down')
        if self.crashes > self.policy.max_crashes:
            return Decision('give_up', f'{what}: {self.crashes} crashes in a row, each within '
                                       f'{self.policy.stable_s:g} s of its start; giving up: '
                                       f'perception is down')
        delay = min(self.policy.delay_s * 2 ** (self.crashes - 1), self.policy.max_delay_s)
        self.restarts += 1
        return Decision('restart', f'{what}; restarting in {delay:g} s (crash {self.crashes} '
                                   f'in a row of at most {self.policy.max_crashes}; restart '
                                   f'{self.restarts} of this launch)', delay)
