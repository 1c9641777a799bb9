# Copyright 2026 edge_infer contributors. Apache-2.0.
"""`ros2 launch` as a robot user runs it: /diagnostics and the host's core budget (issue 29).

Runs the launch file with the real ``ros2 launch`` (a robot with ROS 2, or
the stand-in of ../shared/robot under ``colcon test``, CI's robot stage);
skipped with the reason where ``ros2 launch`` is missing (this repository's
PyPI-only set-up, where test_diagnostics_truth.py and test_host_budget.py
run the same scenarios on containers started directly).

- **A node that cannot configure** (case 6): the launch checks the params
  file before it starts anything (a model name's typo ends it with one
  line), but what only configure finds (here a model file missing: a robot
  where `edge_infer prepare` was not run) leaves the node unconfigured; it
  publishes ERROR on /diagnostics with the reason for as long as it stays so.
- **Two launches on one host** (case 8, namespaces r1 and r2, one model
  each): the containers lease distinct slots of the host's cores, so the
  inference threads of both together stay within the cores.
"""

import os
import re
import signal

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from edge_infer import paths
import pytest
from test_launch_signals import _ros2_launch_missing, Launch
import yaml

pytestmark = [pytest.mark.skipif(bool(_ros2_launch_missing()), reason=_ros2_launch_missing()),
              pytest.mark.slow]     # ros2 launch and a container: about 9 s each
BUDGET = re.compile(r'inference thread budget: .*= (\d+) thread\(s\).*holds (\d+) of (\d+) '
                    r'slots(?: \(([\d, ]+)\))?')


def _stop(launch: Launch) -> None:
    try:
        if launch.proc.poll() is None:
            os.killpg(launch.proc.pid, signal.SIGINT)
            launch.wait_exit()
    finally:
        launch.kill()


def test_a_node_that_cannot_configure_is_an_error_on_diagnostics(ros, tmp_path):
    params = yaml.safe_load((paths.config_dir() / 'perception.yaml').read_text())
    empty = tmp_path / 'no_models'
    empty.mkdir()
    params['detector']['ros__parameters'].update(models_dir=str(empty), diagnostics_period=0.2)
    pfile = tmp_path / 'no_models.yaml'
    pfile.write_text(yaml.safe_dump(params))
    errors = []

    def on_diag(msg):
        errors.extend(st for st in msg.status
                      if st.name.startswith('/detector:') and st.level == DiagnosticStatus.ERROR)
    sub = ros.node.create_subscription(DiagnosticArray, '/diagnostics', on_diag, 50)
    launch = Launch(ros.domain, f'params_file:={pfile}', 'nodes:=detector')
    try:
        assert ros.spin_until(lambda: len(errors) >= 3 or launch.proc.poll() is not None,
                              120), launch.text[-3000:]
        assert len(errors) >= 3, launch.text[-3000:]     # again every period, not once
        message = errors[-1].message
        assert message.startswith("configure failed: model 'nanodet': file ") and \
            str(empty) in message and 'not found' in message, message
        assert message in launch.text      # the same reason as the log line
    finally:
        ros.node.destroy_subscription(sub)
        _stop(launch)


def test_two_launches_share_the_host_cores(ros):
    launches = [Launch(ros.domain, f'namespace:={ns}', 'nodes:=detector', 'autostart:=false')
                for ns in ('r1', 'r2')]
    try:
        found = []
        for launch in launches:
            assert ros.spin_until(lambda: BUDGET.search(launch.text) is not None
                                  or launch.proc.poll() is not None, 120), launch.text[-3000:]
            found.append(BUDGET.search(launch.text))
        assert all(found), [launch.text[-2000:] for launch in launches]
        threads = [int(m.group(1)) for m in found]
        cores = int(found[0].group(3))
        held = [s for m in found for s in (m.group(4) or '').split(', ') if s]
        assert len(held) == len(set(held)), [m.group(0) for m in found]     # no slot twice
        assert sum(threads) <= max(cores, len(launches)), [m.group(0) for m in found]
    finally:
        for launch in launches:
            _stop(launch)
