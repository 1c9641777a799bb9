# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Which runners-up a look opens (backends/live/looks.py): one at a time, imported libraries."""

import sys
import types

from edge_infer.backends.live.looks import imported, RunnerLooks
from edge_infer.backends.live.rule import LiveSettings
from edge_infer.backends.live.runner_memory import RunnerMemory
from edge_infer.backends.live.runners_up import RunnerHours, RunnerPool

ABSENT = 'edge_infer_test_absent_library'   # a library no test imports


def _backend(name, library, threads=1):
    return types.SimpleNamespace(name=name, library=library, intra_op_threads=threads)


def _looks(**settings):
    st = LiveSettings(runners_idle_s=30.0, **settings)
    ctx = types.SimpleNamespace(settings=st)
    return RunnerLooks(ctx, RunnerPool(st), RunnerHours(st), RunnerMemory())


BACKENDS = {b.name: b for b in (_backend('lib/a', 'numpy'), _backend('other/b', ABSENT),
                                _backend('lib/c', 'numpy'), _backend('fake/d', ''))}
RANKED = ['lib/a', 'other/b', 'lib/c', 'fake/d']     # best first


def test_imported_reads_the_process_modules():
    assert imported(_backend('x', 'numpy')) and imported(_backend('x', ''))
    assert not imported(_backend('x', ABSENT)) and ABSENT not in sys.modules
    assert imported(_backend('x', 'opencv-dnn')) == ('cv2' in sys.modules)


def test_a_look_opens_one_runner_up_at_a_time_and_skips_a_library_not_imported():
    looks = _looks()
    per, count = looks.ctx.settings.runners_per_look, looks.ctx.settings.runners_up
    wanted = [n for n in RANKED if imported(BACKENDS[n])][:count]
    opened = []
    for _ in range(2 * count // per):
        opened.append(looks.to_open(RANKED, BACKENDS, 'chosen'))
    assert all(len(o) == per for o in opened)
    assert [n for o in opened[:count // per] for n in o] == wanted     # best first, in turn
    assert opened[count // per:] == opened[:count // per]              # then again
    assert all(BACKENDS[n].library != ABSENT for o in opened for n in o)
    assert ABSENT not in sys.modules


def test_other_libraries_when_asked_and_all_at_once_when_standing_by():
    looks = _looks(runners_other_libraries=True, runners_per_look=0)
    count = looks.ctx.settings.runners_up
    assert looks.to_open(RANKED, BACKENDS, 'chosen') == RANKED[:count]
    looks = _looks()
    looks.hours.standby = True      # a server serves: every local one stands by, as before
    assert looks.to_open(RANKED, BACKENDS, 'chosen') == RANKED[:count]
