# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The process-wide shared resource: made on first use, closed on last, first settings win."""

from edge_infer.shared_resource import SharedResource
import pytest


def test_started_once_stopped_by_the_last_user_first_settings_win():
    started, stopped, lines = [], [], []

    def start(settings, log):
        started.append(settings)
        return object()
    res = SharedResource('thing', start, stopped.append, defaults=lambda: {'rate': 1})
    a = res.acquire(None, log=lines.append)             # no settings: the defaults
    b = res.acquire({'rate': 1}, log=lines.append)      # the same ones: no complaint
    c = res.acquire({'rate': 2}, log=lines.append)
    assert a is b is c and started == [{'rate': 1}] and res.users() == 3
    assert len(lines) == 1 and 'thing already running' in lines[0] and 'rate=1' in lines[0]
    res.release()
    res.release()
    assert stopped == [] and res.users() == 1
    res.release()
    assert stopped == [a] and res.users() == 0
    res.release()                                       # one too many: nothing happens
    assert stopped == [a] and res.users() == 0
    d = res.acquire({'rate': 2}, log=lines.append)      # a new start, with these settings
    assert d is not a and started[-1] == {'rate': 2}
    res.release()
    assert stopped == [a, d]


def test_a_failed_start_counts_no_user():
    def start(settings, log):
        raise RuntimeError('no device')
    res = SharedResource('thing', start, lambda x: None)
    with pytest.raises(RuntimeError, match='no device'):
        res.acquire({'k': 1})
    assert res.users() == 0
