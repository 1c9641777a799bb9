# Copyright 2026 edge_infer contributors. Apache-2.0.
"""vision_msgs here is Jazzy's 4.1.1: the same type hashes, so bags and tools interoperate.

Without ROS, tools/bootstrap.py builds tools/vision_msgs (4.1.1's definitions)
into the venv when no vision_msgs is importable; on a robot rosdep installs
ros-jazzy-vision-msgs. Either way the hashes must equal the released
package's (measured from it), or a robot's tools would refuse our messages.
"""

import json
import pathlib

import pytest

RELEASED = {   # vision_msgs 4.1.1 as Jazzy ships it (RIHS01 type hashes)
    'Detection2DArray': '214274120007f4a683866481336b70310268cfa107aebe9d594a6acf75bda968',
    'Detection2D': '0d12b69df5c593b3455b7346fac8205437a7d4bcb09b9e0e0b2dde787ded38ea',
    'ObjectHypothesisWithPose': '41c12344c0396c48b81df12467c192d99b2a0eb1463c5c37194e4223251c80bc',
    'ObjectHypothesis': '51da43cec11c01957a64d1e05a24acd18aae7745ec30b74348ad5f6d634f7f90',
    'BoundingBox2D': '008eacbb0cf8f26e83795547bed013eec3675485ef386ec056d80eaaf1c1ce2f',
    'Pose2D': 'b0b5d1d7b4c20dd4fcde3ed1d4b289a919290572007d67a97043814db25d3648',
    'Point2D': 'eab0e83f44ab4de92ceaf76dd7d0e7638f2bdd1d16ffbe16c7a136c48e407247',
    'Classification': 'f74db28d0eaef3afb78f48bf2161cd709a1383a0309d3454383b25be11345143',
    'LabelInfo': '3d37df4015cdf660cc851c51897f2acd957e1ca6205ba0a99aebffb9406b0783',
    'VisionClass': '1e4a11f0fed50b5623cb8ff26ca0e37952a48a9c074d16f804b44e9164c2037a',
    'VisionInfo': '95d3116a17484ad91c9a2686e1d54890bbfc3ff6c6a2de137738c4950d45d284',
}
VENDORED = pathlib.Path(__file__).resolve().parents[3] / 'tools' / 'vision_msgs'


def test_the_installed_vision_msgs_has_the_released_type_hashes():
    from ament_index_python.packages import get_package_share_directory
    import vision_msgs.msg  # noqa: F401 (importable: the messages are built)
    share = pathlib.Path(get_package_share_directory('vision_msgs')) / 'msg'
    for name, digest in RELEASED.items():
        hashes = json.loads((share / f'{name}.json').read_text())['type_hashes']
        own = next(h['hash_string'] for h in hashes
                   if h['type_name'] == f'vision_msgs/msg/{name}')
        assert own == f'RIHS01_{digest}', name


def test_the_vendored_definitions_never_enter_a_colcon_workspace():
    if not VENDORED.is_dir():
        pytest.skip('tools/ is not next to the package (an installed copy)')
    assert (VENDORED / 'COLCON_IGNORE').is_file()
    assert 'Apache License' in (VENDORED / 'LICENSE').read_text()
    assert '<version>4.1.1</version>' in (VENDORED / 'package.xml').read_text()
