# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A synthetic perception node of known capacity, for the benchmark's tests.

    python -m edge_infer.testing.capacity_node --capacity-hz 20 [--name synthetic]

Subscribes to ``/camera/image_raw`` (sensor-data QoS, serialized) and, as a
perception node does, keeps only the newest frame in a one-frame slot; its
worker *takes* ``1 / capacity_hz`` seconds per frame (a sleep: the same on a
busy machine, unlike computing), then publishes an edge_infer
DetectionArray carrying the frame's header on ``/<name>/detections``, and
its counters on /diagnostics twice a second. Played at ``r`` Hz it keeps
every frame up to ``capacity_hz`` and ``capacity_hz / r`` of them above:
its peak sustainable rate (95 % kept) is ``capacity_hz / 0.95``.
"""

import argparse
import sys
import threading
import time


def main(argv=None) -> int:
    """Run the node until SIGINT."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--capacity-hz', type=float, required=True)
    ap.add_argument('--name', default='synthetic')
    args = ap.parse_args(argv)
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
    from edge_infer_msgs.msg import DetectionArray
    from rclpy.executors import ExternalShutdownException
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Image

    from ..core.cdr import parse_header
    from ..core.stream import LatestSlot
    rclpy.init()
    node = rclpy.create_node(args.name)
    slot = LatestSlot()
    counts = {'received': 0, 'processed': 0, 'dropped': 0}
    pub = node.create_publisher(DetectionArray, f'/{args.name}/detections', 10)
    diag = node.create_publisher(DiagnosticArray, '/diagnostics', 10)

    def on_frame(raw):
        counts['received'] += 1
        if slot.put(raw):
            counts['dropped'] += 1

    def work():
        while rclpy.ok():
            raw = slot.take(timeout=0.2)
            if raw is None:
                continue
            time.sleep(1.0 / args.capacity_hz)
            sec, nsec, frame_id = parse_header(raw)
            out = DetectionArray(model='synthetic', backend='sleep')
            out.header.stamp.sec, out.header.stamp.nanosec = sec, nsec
            out.header.frame_id = frame_id
            pub.publish(out)
            counts['processed'] += 1

    def publish_diagnostics():
        st = DiagnosticStatus(name=f'{args.name}: synthetic', message='ok')
        st.values = [KeyValue(key=k, value=str(v)) for k, v in counts.items()]
        diag.publish(DiagnosticArray(status=[st]))

    node.create_subscription(Image, '/camera/image_raw', on_frame, qos_profile_sensor_data,
                             raw=True)
    node.create_timer(0.5, publish_diagnostics)
    threading.Thread(target=work, daemon=True).start()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        slot.close()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
