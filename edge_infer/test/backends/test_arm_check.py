# Copyright 2026 edge_infer contributors. Apache-2.0.
"""`edge_infer arm-check`: the backend manager on aarch64 under qemu, for real.

The first test runs the command on the probe model (every candidate) and
MobileNetV2 (the ONNX Runtime, OpenVINO and ncnn candidates: OpenCV and the
numpy path are covered on the probe model, and every emulated inference
costs seconds) and checks its JSON report. On a fresh clone it first makes
the aarch64 environment (about 40 s: Debian arm64 packages, qemu, aarch64
wheels; cached in $EDGE_INFER_HOME/arm). Where that cannot be had (no apt,
not x86_64, no network) the command says why in one line and these tests
skip with that line. The other tests need no emulation.
"""

import hashlib
import json
import math
import os
import pathlib
import subprocess
import sys
import time

from edge_infer.backends.libs.pnnx import pnnx_binary
from edge_infer.tools.armcheck import check, prepare, report, steps, wheels
import numpy as np
import pytest

LIBRARIES = ('numpy', 'cv2', 'onnxruntime', 'openvino', 'ncnn')
# OpenVINO's fp16+pre is left to the probe model: on MobileNetV2 each emulated
# fp16 inference takes ~10 s, and one accuracy frame does (the candidates'
# verdicts, not their accuracy on many frames, are what is checked here).
PROFILED = ('onnxruntime/*', 'openvino/cpu/t1', 'openvino/cpu/t1/fp16', 'ncnn/*')
FRAMES = 1
# ncnn's models are converted on the host by the pnnx binary, which the README
# lists as optional: without it (a robot that skipped it) the ncnn candidates
# are reported unavailable with that reason, and the rest is checked as usual.
HAVE_PNNX = pnnx_binary() is not None


def _digest(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else 'absent'


@pytest.fixture(scope='module')
def arm_report(data_home, tmp_path_factory):
    """Run arm-check on the probe model and MobileNetV2; return (report, output, seconds)."""
    report = tmp_path_factory.mktemp('arm') / 'report.json'
    host_cache = data_home / 'cache' / 'backend_profiles.json'
    before = _digest(host_cache)
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, '-m', 'edge_infer.cli', 'arm-check', '--models', 'probe,mobilenet_v2',
         '--only', *PROFILED, '--frames', str(FRAMES), '--report', str(report)],
        capture_output=True, text=True, timeout=1200, env=os.environ)
    seconds = time.monotonic() - t0
    out = proc.stdout + proc.stderr
    if proc.returncode == check.UNAVAILABLE:
        pytest.skip(next(ln for ln in out.splitlines() if 'unavailable here' in ln))
    assert proc.returncode == 0, out[-6000:]
    assert _digest(host_cache) == before, 'the emulated choice reached the host profile cache'
    return json.loads(report.read_text()), out, seconds


def _job(report: dict, name: str) -> dict:
    return next(j for j in report['jobs'] if j['name'] == name)


@pytest.mark.slow
def test_every_library_loaded_as_aarch64_code(arm_report):
    report, out, _ = arm_report
    for job in report['jobs']:
        assert job['machine'] == 'aarch64', job['model']
        assert job['attempts'] == 1 and not job['crashes'] and not job['errors']
    probe = _job(report, 'probe')
    libs = probe['environment']['libraries']
    for lib in LIBRARIES:
        assert libs[lib]['files'] and libs[lib]['machines'] == ['aarch64'], (lib, libs.get(lib))
    available = {p['candidate'] for p in probe['probes'] if p['ok']}
    for lib in ('onnxruntime/cpu', 'opencv-dnn/cpu', 'numpy-blas/cpu', 'openvino/cpu') + (
            ('ncnn/cpu',) if HAVE_PNNX else ()):
        assert any(a.startswith(lib) for a in available), (lib, available)
    if not HAVE_PNNX:
        ncnn = [p for p in probe['probes'] if p['candidate'].startswith('ncnn/cpu')]
        assert ncnn and not any(p['ok'] for p in ncnn), ncnn
    # what cannot be emulated is said: no GPU device, no ROS
    gpu = [p for p in probe['probes'] if p['device'] != 'cpu']
    assert gpu and not any(p['ok'] for p in gpu)
    assert 'not emulated: ROS 2' in out and 'EMULATED' in out
    assert report['emulation']['wheels']['onnxruntime'] == \
        wheels.host_pins()['onnxruntime']


@pytest.mark.slow
def test_openvino_ran_its_arm_cpu_plugin_at_its_native_precision(arm_report):
    report, out, _ = arm_report
    for job in (_job(report, 'probe'), _job(report, 'mobilenet_v2')):
        ov = job['environment']['openvino']
        assert 'libopenvino_arm_cpu_plugin.so' in ov['plugins_mapped_during_run']
        assert not any('intel_cpu' in p for p in ov['plugins_mapped_during_run'])
        assert ov['cpu_plugin'] == 'openvino_arm_cpu_plugin'
        assert ov['default_precision'] == 'f16'        # QEMU_CPU=neoverse-n1 has fp16
    assert 'libopenvino_arm_cpu_plugin.so' in out and 'precision reported: f16' in out
    natives = [r for r in _job(report, 'mobilenet_v2')['results']
               if r['library'] == 'openvino' and r['precision'] != 'fp32']
    assert natives and all(r['precision'] == 'fp16' for r in natives)


@pytest.mark.slow
def test_fp32_outputs_match_x86_onnxruntime(arm_report):
    report, _, _ = arm_report
    for model, file in (('probe', 'probe_'), ('mobilenet_v2', 'mobilenet_v2.onnx')):
        rows = [c for c in _job(report, model)['comparisons']
                if c['precision'] == 'fp32' and c['model_file'].startswith(file)]
        libs = {c['library'] for c in rows}
        want = {'onnxruntime', 'openvino'} | ({'ncnn'} if HAVE_PNNX else set()) | \
            ({'opencv-dnn', 'numpy'} if model == 'probe' else set())
        assert want <= libs, (model, libs)
        for c in rows:
            assert c['max_abs_diff'] <= 1e-4, (model, c)


@pytest.mark.slow
def test_accuracy_guard_verdict_on_every_reduced_precision_candidate(arm_report):
    report, out, _ = arm_report
    job = _job(report, 'mobilenet_v2')
    assert 'real frames' in job['frames']
    reduced = [r for r in job['results'] if r['precision'] != 'fp32' and r['device'] == 'cpu'
               and (HAVE_PNNX or r['library'] != 'ncnn')]
    names = {r['backend'] for r in reduced}
    for kind in ('openvino/cpu/t1/', 'onnxruntime/cpu/t1/fp16', 'onnxruntime/cpu/t1/int8') + (
            ('ncnn/cpu/t1/fp16',) if HAVE_PNNX else ()):
        assert any(n.startswith(kind) for n in names), (kind, names)
    for r in reduced:
        assert r['status'] in ('ok', 'rejected'), r
        assert math.isfinite(r['accuracy']) and r['accuracy_detail'], r
        verdict = 'accepted' if r['status'] == 'ok' else 'rejected'
        table = out[out.index('== aarch64: mobilenet_v2 ('):]
        assert f'{verdict} (floor' in next(ln for ln in table.splitlines()
                                           if ln.startswith(r['backend'] + ' '))
    assert job['chosen'] and 'chosen under emulation' in out


@pytest.mark.slow
def test_preparation_is_cached_and_profiles_stay_apart(arm_report, data_home):
    report, _, seconds = arm_report
    lines = []
    t0 = time.monotonic()
    emu = prepare.prepare(log=lines.append)
    assert time.monotonic() - t0 < 5 and lines == []       # every stamp matched
    for step in ('sysroot', 'qemu', 'wheels', 'hostpy'):
        assert steps.read_stamp(emu.root, step), step
    assert (emu.root / 'profiles' / 'mobilenet_v2' / 'backend_profiles.json').is_file()
    assert report['emulation']['profile_cache'].startswith(str(emu.root))
    print(f'\narm-check: prepare {report["seconds"]["prepare"]} s, emulated run '
          f'{report["seconds"]["run"]} s, command {seconds:.0f} s')


# ------------------------------------------------------------ no emulation needed
def test_wheel_versions_are_the_hosts():
    pins = wheels.host_pins()
    from importlib import metadata
    assert pins['numpy'] == metadata.version('numpy')
    assert pins['onnxruntime'] == metadata.version('onnxruntime')
    deps = wheels.host_dependency_pins(['onnx'])
    assert deps['onnx'] == metadata.version('onnx') and 'protobuf' in deps
    tags = wheels.platform_tags()
    assert 'manylinux_2_17_aarch64' in tags and tags[-1] == 'manylinux_2_36_aarch64'
    info = prepare.fake_cpuinfo(3)
    assert info.count('processor') == 3 and 'CPU part\t: 0xd0c' in info


def test_compare_reports_shape_mismatch_and_max_difference():
    ref = [np.zeros((1, 3), np.float32), np.ones((2,), np.float32) * 5]
    got = [np.full((3,), 1e-5, np.float32), np.ones((2,), np.float32) * 5]
    c = report.compare(ref, got)
    assert c['max_abs_diff'] == pytest.approx(1e-5) and c['ref_max'] == 5
    assert report.compare(ref, got[:1])['max_abs_diff'] == math.inf
    assert report.compare([np.zeros(4)], [np.zeros(3)])['max_abs_diff'] == math.inf


class _FakeEmulator:
    """Runs a host Python script in place of the emulated worker."""

    def __init__(self, script: str):
        self.script = script

    def command(self, args):
        return [sys.executable, '-c', self.script, *args[-1:]]

    def env(self, pythonpath, extra=None):
        return dict(os.environ)


CRASHING_WORKER = r"""
import json, os, pathlib, sys
job = json.loads(pathlib.Path(sys.argv[1]).read_text())
ev = open(pathlib.Path(job['out']) / 'events.jsonl', 'a')
def emit(**kw):
    ev.write(json.dumps(kw) + '\n'); ev.flush()
emit(event='start', machine='aarch64')
for name in ('good', 'bad', 'later'):
    if name in job['exclude']:
        continue
    emit(event='at', candidate=name, what='open_session', phase='profile')
    if name == 'bad':
        os.abort()
print('done', job['exclude'])
"""


def test_a_crash_is_pinned_on_its_candidate_and_the_job_runs_again(tmp_path):
    lines = []
    runner = check.Runner(_FakeEmulator(CRASHING_WORKER), tmp_path, tmp_path, 60,
                          log=lines.append)
    out = runner.run({'model': 'm'})
    assert [c['candidate'] for c in out['crashes']] == ['bad']
    assert 'signal 6' in out['crashes'][0]['how'] and out['crashes'][0]['during'] == 'open_session'
    assert out['attempts'] == 2 and not out['errors']
    assert any("done ['bad']" in ln for ln in lines)
    summary = {'jobs': [{'model': 'm', 'errors': [], 'crashes': out['crashes'],
                         'machine': 'aarch64', 'comparisons': [], 'results': []}]}
    assert any('bad crashed' in f for f in report.failures(summary, 1e-4))


def test_fp32_beyond_tolerance_fails_reduced_precision_does_not():
    row = {'candidate': 'x', 'library': 'l', 'phase': 'profile', 'model_file': 'm.onnx',
           'detail': '', 'ref_max': 10.0}
    job = {'model': 'probe', 'errors': [], 'crashes': [], 'machine': 'aarch64',
           'comparisons': [{**row, 'precision': 'fp32', 'max_abs_diff': 2e-3},
                           {**row, 'precision': 'fp16', 'max_abs_diff': 0.5}]}
    fails = report.failures({'jobs': [job]}, 1e-4)
    assert len(fails) == 1 and 'fp32 output' in fails[0]


def test_without_apt_it_says_why_in_one_line_and_exits_3(monkeypatch, capsys, data_home):
    monkeypatch.setattr(prepare.shutil, 'which',
                        lambda tool: None if tool in ('apt-get', 'dpkg-deb') else '/bin/x')
    assert check.main(['--models', 'probe']) == check.UNAVAILABLE
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and 'unavailable here: no apt-get / dpkg-deb' in lines[0], lines
