# Copyright 2026 edge_infer contributors. Apache-2.0.
"""One instance per process of something several nodes use, reference-counted.

The nodes of one container share a power meter and an executor: two would
double the work and split what must be one stream. :class:`SharedResource`
starts the thing on the first :meth:`~SharedResource.acquire`, counts users,
and closes it on the last :meth:`~SharedResource.release`. The first
caller's settings win; a later caller asking for other ones gets the running
instance and a log line naming the settings in force.
"""

import threading
from typing import Callable, Generic, Optional, TypeVar

T = TypeVar('T')
Log = Callable[[str], None]


class SharedResource(Generic[T]):
    """A process-wide ``T`` made by ``start(settings, log)``, closed by ``stop(instance)``.

    ``settings`` are a dict (compared to tell whether two callers agree);
    ``defaults()`` gives them when the first caller passes None.
    """

    def __init__(self, what: str, start: Callable[[dict, Log], T], stop: Callable[[T], None],
                 defaults: Callable[[], dict] = dict):
        self.what = what
        self._start, self._stop, self._defaults = start, stop, defaults
        self._lock = threading.Lock()
        self._instance: Optional[T] = None
        self._settings: Optional[dict] = None
        self._users = 0

    def acquire(self, settings: Optional[dict] = None, log: Log = print) -> T:
        """Return the running instance, starting it with ``settings`` if none runs.

        ``settings=None``: whatever runs, else one with the defaults.
        """
        with self._lock:
            if self._instance is None:
                settings = dict(settings if settings is not None else self._defaults())
                self._instance = self._start(settings, log)
                self._settings = settings
            elif settings is not None and self._settings is not None and \
                    settings != self._settings:
                in_force = ', '.join(f'{k}={self._settings.get(k)!r}' for k in settings
                                     if settings[k] != self._settings.get(k))
                log(f'WARNING {self.what} already running in this process; its settings '
                    f'stay in force: {in_force}')
            self._users += 1
            return self._instance

    def release(self) -> None:
        """Let go; the last user stops the instance."""
        with self._lock:
            if self._users == 0:
                return
            self._users -= 1
            if self._users == 0 and self._instance is not None:
                instance, self._instance, self._settings = self._instance, None, None
                self._stop(instance)

    def users(self) -> int:
        """Return the number of holders (0: not running)."""
        with self._lock:
            return self._users
