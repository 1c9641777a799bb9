# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The `edge_infer` command: info, usage errors, lifecycle from another process."""

import subprocess
import sys

from edge_infer.cli import main


def test_info_lists_both_models_with_checksums_ok(data_home, capsys):
    assert main(['info']) == 0
    out = capsys.readouterr().out
    assert 'nanodet' in out and 'mobilenet_v2' in out
    assert out.count('[ok]') == 2


def test_unknown_verb_prints_usage_and_fails(capsys):
    assert main(['frobnicate']) == 2
    assert 'edge_infer lifecycle' in capsys.readouterr().out


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
    r = cli('/classifier', 'deactivate')
    assert r.returncode == 1 and 'transition deactivate failed' in r.stderr
    assert proc.poll() is None
    assert cli('/classifier', 'activate').stdout.strip() == '/classifier: active'
