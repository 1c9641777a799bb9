# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Candidates measured in a child process; the serving process keeps its gate and its cache.

Real model, real backends (ONNX Runtime, OpenCV DNN) measured in a real
child process, as the nodes' shared manager does (``measure_apart``).
"""

import contextlib
import os
import subprocess
import sys
import threading
import time

from edge_infer import paths
from edge_infer.backends.live.choice import LiveChoice, LiveSettings
from edge_infer.backends.manager import BackendManager
from edge_infer.backends.measure.cache import ProfileCache
from edge_infer.backends.measure.load_probe import LoadProbe
from edge_infer.backends.measure.profiling import calibration_frames
from edge_infer.core.backend import BackendError
from edge_infer.core.registry import load_registry
from edge_infer.testing.config import fast_cpu
import pytest


@pytest.fixture(scope='module')
def mobilenet(data_home):
    spec = load_registry(paths.config_dir() / 'models.yaml')['mobilenet_v2']
    return spec, data_home / 'models' / spec.file


def _manager(cache_dir, **cfg):
    lines = []
    mgr = BackendManager(cache_dir, config=fast_cpu(**cfg), log=lines.append)
    mgr.measure_apart()
    return mgr, lines


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f'/proc/{pid}/stat') as f:
        return f.read().rsplit(')', 1)[1].split()[0] != 'Z'


@pytest.mark.slow
def test_a_child_measures_holds_our_gate_and_a_warm_start_needs_none(
        tmp_path, mobilenet, monkeypatch):
    spec, path = mobilenet
    mgr, lines = _manager(tmp_path)
    holds = []
    gate = mgr.runtime.gate     # this process's: the child's runs hold it
    exclusive = gate.exclusive

    @contextlib.contextmanager
    def counted():
        with exclusive():
            holds.append(threading.get_ident())
            yield
    monkeypatch.setattr(gate, 'exclusive', counted)
    backend, run = mgr.choose(spec, path)
    by = {r.backend: r for r in run.results}
    assert set(by) == {'onnxruntime/cpu/t1', 'opencv-dnn/cpu'}
    assert all(r.status == 'ok' and r.runs >= 3 for r in by.values())
    assert backend.name == run.chosen and not any(run.from_cache.values())
    # every timed run of the child held this process's gate, from the thread answering it
    assert len(holds) >= sum(r.runs for r in by.values())
    assert set(holds) == {threading.get_ident()}
    # its log came here; its figures are in the cache this manager reads
    assert any('[profile mobilenet_v2] 2 candidate(s) measured' in s for s in lines)
    assert mgr.apart.started == 1
    again, run2 = mgr.choose(spec, path)
    assert again.name == backend.name and all(run2.from_cache.values())
    assert mgr.apart.started == 1       # everything cached: no child for a warm start
    # a new process (a restart) reads the same figures
    fresh = BackendManager(tmp_path, config=mgr.config, log=lambda s: None)
    assert all(fresh.choose(spec, path)[1].from_cache.values())
    pid = mgr.apart._proc.pid
    mgr.apart.close()
    assert not _alive(pid)


def _choosing(mgr, lines, spec, path, cancel=None):
    """Start ``mgr.choose`` in a thread; return it and its error box once the child measures.

    Waits for the child's first progress line (a candidate being loaded and
    timed), which every profile writes; the side-by-side rounds come only
    where two candidates lead (on the robot stage OpenCV DNN was cut short).
    """
    box = {}

    def run():
        try:
            mgr.choose(spec, path, cancel=cancel)
        except BackendError as exc:
            box['error'] = str(exc)
    t = threading.Thread(target=run)
    t.start()
    deadline = time.monotonic() + 60
    while not any('timing alone' in s for s in lines) and time.monotonic() < deadline:
        time.sleep(0.05)        # the child is measuring
    assert mgr.apart._proc is not None, lines      # and has not finished yet
    return t, box


@pytest.mark.slow
def test_a_cancel_kills_the_child_at_once_and_a_resume_measures_again(tmp_path, mobilenet):
    spec, path = mobilenet
    mgr, lines = _manager(tmp_path, budget_s=5.0, min_rounds=200)   # long side-by-side rounds
    cancel = threading.Event()
    t, box = _choosing(mgr, lines, spec, path, cancel)
    pid = mgr.apart._proc.pid
    t0 = time.monotonic()
    cancel.set()
    t.join(10)
    took = time.monotonic() - t0
    assert not t.is_alive() and 'profile cancelled' in box['error']
    assert took < 2.0, took
    assert not _alive(pid)
    # the gate is free again: a frame does not wait
    with mgr.runtime.gate.shared():
        pass
    # the candidates screened before the cancel were cached; the rest is measured again
    mgr.config.update(budget_s=0.1, min_rounds=4)
    backend, run = mgr.choose(spec, path)
    assert run.chosen == backend.name and mgr.apart.started == 2


@pytest.mark.slow
def test_a_child_that_dies_is_one_clear_error(tmp_path, mobilenet):
    spec, path = mobilenet
    mgr, lines = _manager(tmp_path, budget_s=5.0, min_rounds=200)
    t, box = _choosing(mgr, lines, spec, path)
    os.kill(mgr.apart._proc.pid, 9)     # the OOM killer, say
    t.join(10)
    assert not t.is_alive()
    assert "model 'mobilenet_v2': the measuring process ended (exit -9)" in box['error']
    with mgr.runtime.gate.shared():     # not left held
        pass


CRASHING = """
import os, pathlib, sys
from edge_infer import paths
from edge_infer.backends.manager import BackendManager
from edge_infer.core.registry import load_registry
from edge_infer.testing.config import fast_cpu
spec = load_registry(paths.config_dir() / 'models.yaml')['mobilenet_v2']
config = fast_cpu(budget_s=5.0, min_rounds=200)
def log(line):
    if 'timing alone' in line:      # the child is measuring: this process dies now
        print(mgr.apart._proc.pid, flush=True)
        os._exit(3)
mgr = BackendManager(pathlib.Path(sys.argv[1]), config=config, log=log)
mgr.measure_apart()
mgr.choose(spec, pathlib.Path(sys.argv[2]))
"""


@pytest.mark.slow
def test_the_child_leaves_when_the_serving_process_dies(tmp_path, mobilenet):
    spec, path = mobilenet
    out = subprocess.run([sys.executable, '-c', CRASHING, str(tmp_path), str(path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 3, out.stderr[-2000:]
    child = int(out.stdout.split()[-1])
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_the_load_probe_counts_the_serving_process_as_its_own():
    spin = subprocess.Popen(
        [sys.executable, '-S', '-c', 'import sys, time\nprint(1, flush=True)\nt = time.time()\n'
         'while time.time() - t < 1.0: pass\nprint(2, flush=True)\ntime.sleep(30)'],
        stdout=subprocess.PIPE, text=True)
    assert spin.stdout.readline().strip() == '1'
    alone, with_it = LoadProbe().start(), LoadProbe(also=(spin.pid,)).start()
    assert spin.stdout.readline().strip() == '2'     # it spun for 1 s and is not reaped yet
    a, b = alone.stop(), with_it.stop()
    spin.kill()
    spin.wait(10)
    # the spinning process is foreign to one probe and this process's own to the other
    assert b['own_cores'] - a['own_cores'] > 0.5
    assert a['foreign_cores'] - b['foreign_cores'] > 0.5
    gone = LoadProbe(also=(spin.pid,)).start()      # reaped: counts nothing, no error
    assert 'own_cores' in gone.stop()


def test_two_writers_of_one_cache_file_merge_and_a_reader_sees_both(tmp_path):
    path = tmp_path / 'backend_profiles.json'
    a, b = ProfileCache(path), ProfileCache(path)
    assert b.get('x') is None           # b has read the (empty) file
    a.put('from-a', {'v': 1})
    b.put('from-b', {'v': 2})           # b merges into what a wrote
    assert ProfileCache(path).get('from-a') == {'v': 1}
    assert ProfileCache(path).get('from-b') == {'v': 2}
    assert a.get('from-b') is None      # a's view is as it read it ...
    a.refresh()
    assert a.get('from-b') == {'v': 2}  # ... until it reads again


@pytest.mark.slow
def test_a_first_start_settles_through_the_child(tmp_path, mobilenet):
    spec, path = mobilenet
    mgr, _ = _manager(tmp_path)
    live = LiveChoice(mgr, spec, path, settings=LiveSettings(duty=0.0, profile_after_s=0.0),
                      log=lambda s: None)
    live.start()
    assert live.provisional
    frames = calibration_frames(2)[0]
    deadline = time.monotonic() + 120
    k = 0
    while live.provisional and time.monotonic() < deadline:
        live.infer(frames[k % 2])
        live.after_frame()
        k += 1
    assert not live.provisional and live.run.chosen == live.backend_name
    assert mgr.apart.started >= 1
    live.close()


def test_a_config_that_changed_starts_a_fresh_child(tmp_path):
    mgr, _ = _manager(tmp_path)
    try:
        first, _ = mgr.apart._start()
        assert mgr.apart._start()[0] is first and mgr.apart.started == 1
        mgr.config['remote_servers'] = ['grpc://127.0.0.1:1']    # a node added its server
        second, _ = mgr.apart._start()
        assert second is not first and mgr.apart.started == 2
        assert first.poll() is not None     # the old child, with the old config, is gone
    finally:
        mgr.apart.close()


def test_a_child_grown_past_its_cap_is_replaced_before_the_next_profile(tmp_path):
    """What one model's profile loaded is not the next one's (a first start's peak)."""
    import psutil
    mgr, _ = _manager(tmp_path)
    try:
        first, _ = mgr.apart._start()
        deadline = time.monotonic() + 30
        while psutil.Process(first.pid).memory_info().rss < 20e6 and \
                time.monotonic() < deadline:   # the child's imports under way
            time.sleep(0.05)
        rss = psutil.Process(first.pid).memory_info().rss / 1e6
        mgr.config['measure_apart_max_mb'] = rss * 10      # far above: kept
        mgr.apart._sent = dict(mgr.config)                 # the same config otherwise
        assert mgr.apart._start()[0] is first and mgr.apart.started == 1
        mgr.config['measure_apart_max_mb'] = rss / 2       # grown past it: replaced
        mgr.apart._sent = dict(mgr.config)                 # the same config otherwise
        second, _ = mgr.apart._start()
        assert second is not first and mgr.apart.started == 2
        assert first.poll() is not None
    finally:
        mgr.apart.close()
