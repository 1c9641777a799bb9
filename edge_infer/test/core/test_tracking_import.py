# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The trackers library imported lean (core/tracking_import.py): less memory, the same ids.

Each case runs in a fresh interpreter, since what a process imported is
the point: one imports only the three trackers (the default path), the
other the whole library first (``import trackers``), as before.
"""

import json
import subprocess
import sys

import pytest

pytest.importorskip('trackers', reason='the trackers library (requirements-nodeps.txt)')

SCRIPT = r"""
import json, sys
import numpy as np, psutil
rss = lambda: psutil.Process().memory_info().rss
base = rss()
if sys.argv[1] == 'whole':
    import trackers
from edge_infer.core.tracking import ALGORITHMS, make_tracker
from edge_infer.testing import track_scenes as ts
trackers_ = {name: make_tracker(name) for name in ALGORITHMS}
added = rss() - base
frames = ts.drop(ts.crossing(seed=3), 0.3) + ts.drop(ts.occlusion(seed=4), 0.3)
ids = {name: [a.tolist() for a in ts.run(
    lambda f, t=t: t.update(f.boxes, f.scores, f.classes, f.stamp), frames)]
    for name, t in trackers_.items()}
heavy = [m for m in ('scipy.optimize', 'scipy.linalg', 'scipy.interpolate',
                     'supervision.annotators', 'requests', 'rich', 'trackers')
         if m in sys.modules]
lib = sys.modules['trackers.core.bytetrack.tracker']
import scipy.optimize, supervision, trackers     # the real packages, still whole
# scipy's own assignment: the same object where the extension module is loaded
# once (Python 3.11), a second load of the same file where it is not (3.12)
lsa = lib.linear_sum_assignment
same = [lsa is scipy.optimize.linear_sum_assignment or (
            lsa.__name__ == 'linear_sum_assignment' and
            type(lsa) is type(scipy.optimize.linear_sum_assignment)),
        trackers_['bytetrack']._detections is supervision.Detections,
        trackers_['sort']._cls is trackers.SORTTracker]
print(json.dumps({'added': added, 'ids': ids, 'heavy': heavy, 'same': same}))
"""


def _run(how):
    out = subprocess.run([sys.executable, '-c', SCRIPT, how], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.filterwarnings('ignore::UserWarning')
def test_the_lean_import_gives_the_same_ids_for_less_memory():
    lean, whole = _run('lean'), _run('whole')
    assert lean['ids'] == whole['ids']          # every algorithm, every frame, every box
    assert any(i >= 1 for frame in lean['ids']['bytetrack'] for i in frame)
    assert lean['heavy'] == []                  # nor trackers' __init__ (stand-ins gone)
    assert 'scipy.optimize' in whole['heavy'] and 'supervision.annotators' in whole['heavy']
    assert lean['added'] < whole['added']
    assert all(lean['same']) and all(whole['same'])


def test_nodes_configured_at_once_each_get_the_trackers():
    """Four threads (four nodes' configure) import at once: each gets the three classes."""
    script = r"""
import json, threading
from edge_infer.core.tracking_import import library
got, barrier = [], threading.Barrier(4)
def one():
    barrier.wait()
    try:
        classes, detections = library()
        got.append(sorted(c.__name__ for c in classes.values()))
    except Exception as exc:
        got.append(f'{type(exc).__name__}: {exc}')
threads = [threading.Thread(target=one) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
print(json.dumps(got))
"""
    for _ in range(3):      # the race needed the threads to overlap: a few fresh processes
        out = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                             timeout=120, check=True).stdout
        got = json.loads(out.strip().splitlines()[-1])
        assert got == [['ByteTrackTracker', 'OCSORTTracker', 'SORTTracker']] * 4, got
