# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The `edge_infer` command: info, usage errors, lifecycle from another process."""

import subprocess
import sys

from edge_infer.cli import main
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState
import pytest


def test_info_lists_every_bundled_model_with_checksums_ok(data_home, capsys):
    from edge_infer import paths
    from edge_infer.core.registry import load_registry
    bundled = load_registry(paths.config_dir() / 'models.yaml')
    assert main(['info']) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in bundled)
    assert out.count('[ok]') == len(bundled) >= 5


def test_unknown_verb_prints_usage_and_fails(capsys):
    assert main(['frobnicate']) == 2
    assert 'edge_infer lifecycle' in capsys.readouterr().out


@pytest.mark.slow
def test_lifecycle_verb_drives_a_container_node(ros, container):
    proc = container()

    def cli(*args):
        return subprocess.run([sys.executable, '-m', 'edge_infer.cli', 'lifecycle', *args],
                              env=ros.env, capture_output=True, text=True, timeout=120)
    r = cli('/classifier', 'configure', '--timeout', '60')
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == '/classifier: inactive'
    assert cli('/classifier', 'get').stdout.strip() == '/classifier: inactive'
    # Not allowed from inactive: refused, and the container lives on (rclpy
    # alone would let the error escape and stop every node of the process).
    # The CLI looks the label up in the state's transitions (as `ros2 lifecycle set`):
    r = cli('/classifier', 'deactivate')
    assert r.returncode == 1
    assert "no transition 'deactivate' from state 'inactive'" in r.stderr
    # ... and the node refuses the id sent anyway, in one line, and lives on.
    client = ros.node.create_client(ChangeState, '/classifier/change_state')
    # matched first: a request sent before discovery is lost (seen while the node's
    # background profile kept the cores busy: no answer in 30 s)
    assert client.wait_for_service(timeout_sec=30)
    future = client.call_async(ChangeState.Request(
        transition=Transition(id=Transition.TRANSITION_DEACTIVATE)))
    assert ros.spin_until(future.done, 30) and not future.result().success
    assert proc.poll() is None
    assert cli('/classifier', 'activate').stdout.strip() == '/classifier: active'


def test_backends_verb_lists_candidates_with_reasons(data_home, capsys):
    assert main(['backends']) == 0
    out = capsys.readouterr().out
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith(('onnx', 'opencv'))}
    assert ' available ' in lines['onnxruntime/cpu/t1'] + ' '
    assert 'probe ran in' in lines['onnxruntime/cpu/t1']
    assert 'unavailable' in lines['onnxruntime/cuda'] and 'not in this onnxruntime' in \
        lines['onnxruntime/cuda']
    assert 'candidates available' in out


def test_profile_verb_prints_table_and_writes_chart(data_home, tmp_path, capsys):
    png = tmp_path / 'chart.png'
    assert main(['profile', 'mobilenet_v2', '--budget', '0.2', '--png', str(png)]) == 0
    out = capsys.readouterr().out
    chosen = [ln for ln in out.splitlines() if ln.startswith(
        ('onnx', 'opencv', 'numpy', 'openvino', 'ncnn')) and '  *  ' in ln]
    for library in ('onnxruntime/', 'opencv-dnn/', 'numpy-blas/', 'openvino/', 'ncnn/'):
        assert f'\n{library}' in out           # every library is in the table
    assert len(chosen) == 1 and 'ok' in chosen[0]
    assert 'chosen: ' in out and png.stat().st_size > 10_000
    assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    assert main(['profile', 'resnet9000']) == 2
