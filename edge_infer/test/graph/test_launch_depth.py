# Copyright 2026 edge_infer contributors. Apache-2.0.
"""launch_testing: track ids and 3D from depth, the depth bag played through the launch file.

The depth bag (``ros2 run edge_infer edge_infer prepare`` records it with
``edge_infer record --synthetic-depth 4.0``): the pedestrian video's first
frames beside an aligned 16UC1 depth camera that shows a wall at 4 m, and
its CameraInfo. The launch file hosts the detector alone, with
``depth_topic:=/camera/depth/image_raw``; a plain vision_msgs subscriber
then checks that the people's boxes carry track ids that last from frame
to frame, and that their 3D comes back on ``~/vision/detections_3d`` with
the colour frames' stamps, the same ids and the wall's distance (within
2 %). Run as test_launch_perception.py is (its docstring says how); where
launch_testing cannot be installed one test stands in, skipped with the reason.
"""

import collections
import os
import threading
import time
import unittest

import pytest

try:
    import launch_testing
except ImportError:
    launch_testing = None

pytestmark = pytest.mark.slow      # the graph, then the depth bag

if launch_testing is None:
    def test_launch_file_with_the_depth_bag():
        pytest.skip('launch_testing is not installable here (no ROS 2 apt packages); '
                    'test_depth_node.py covers the node with depth on this machine')
else:
    import launch_testing.asserts

    from edge_infer import data, paths, procs  # noqa: I100
    from edge_infer.testing.launching import Listener
    from test_launch_perception import graph_with_bag, wait_for_playback

    BAG = paths.bags_dir() / data.DEPTH_BAG
    DOMAIN = procs.free_domain_id(os.getpid() + 7)

    @pytest.mark.launch_test
    def generate_test_description():
        """Bring up the detector with depth (autostart); play the depth bag once it is active."""
        return graph_with_bag(DOMAIN, BAG, nodes='detector',
                              depth_topic='/camera/depth/image_raw')

    class TestTracksAnd3D(unittest.TestCase):
        """Ids on the 2D boxes, stable over frames; 3D with the same ids at the wall's distance."""

        @classmethod
        def setUpClass(cls):
            from vision_msgs.msg import Detection2DArray, Detection3DArray
            cls.listener = Listener(DOMAIN, 'edge_infer_depth_test', {
                '/detector/vision/detections': Detection2DArray,
                '/detector/vision/detections_3d': Detection3DArray})
            cls.d2 = cls.listener.got['/detector/vision/detections']
            cls.d3 = cls.listener.got['/detector/vision/detections_3d']

        @classmethod
        def tearDownClass(cls):
            cls.listener.close()

        def test_ids_and_3d(self, proc_output, proc_info, player):
            wait_for_playback(proc_output, proc_info, player)
            proc_info.assertWaitForShutdown(process=player, timeout=180)
            deadline = time.monotonic() + 10.0     # the last frames' results
            while time.monotonic() < deadline and len(self.d3) < len(self.d2):
                threading.Event().wait(0.1)
            d2, d3 = list(self.d2), list(self.d3)
            self.assertGreater(len(d2), 0.8 * data.DEPTH_BAG_FRAMES)
            # ids: a person keeps hers over many frames
            seen = collections.Counter(d.id for m in d2 for d in m.detections if d.id)
            self.assertTrue(seen, 'no Detection2D carried a track id')
            self.assertGreaterEqual(seen.most_common(1)[0][1], data.DEPTH_BAG_FRAMES // 2)
            # 3D: the colour frames' stamps and ids, in the depth camera's frame, at the wall
            by_stamp = {(m.header.stamp.sec, m.header.stamp.nanosec):
                        {d.id for d in m.detections} for m in d2}
            self.assertGreater(len(d3), 0.8 * len(d2))
            for m in d3:
                stamp = (m.header.stamp.sec, m.header.stamp.nanosec)
                self.assertIn(stamp, by_stamp)
                self.assertEqual(m.header.frame_id, 'camera')
                for d in m.detections:
                    self.assertIn(d.id, by_stamp[stamp])
                    z = d.bbox.center.position.z
                    self.assertAlmostEqual(z, data.DEPTH_BAG_WALL_M,
                                           delta=0.02 * data.DEPTH_BAG_WALL_M)
                    self.assertGreater(d.bbox.size.x, 0)

    @launch_testing.post_shutdown_test()
    class TestShutdown(unittest.TestCase):
        """Every process (container, player) exited cleanly on the launch's SIGINT."""

        def test_exit_codes(self, proc_info):
            launch_testing.asserts.assertExitCodes(proc_info, [launch_testing.asserts.EXIT_OK])
