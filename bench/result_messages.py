# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What each result message costs per frame: edge_infer_msgs vs vision_msgs (build + publish).

    ./run.sh exec python bench/result_messages.py [--detections 10] [--rounds 9]

A detector's result with ``--detections`` boxes and a classifier's top 5 are
turned into messages and published (a subscriber in the same process, so
the serialisation happens) the way the node does it: edge_infer's
DetectionArray / Classification (nodes/perception_node.py ``_to_msg``) and
vision_msgs' Detection2DArray / Classification (nodes/vision_out.py).
Interleaved rounds of 200 frames each; medians per frame with p90 and max
of the round medians, and the ratio vision / edge_infer.
"""

import argparse
import statistics
import time

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--detections', type=int, default=10)
    ap.add_argument('--rounds', type=int, default=9)
    ap.add_argument('--frames', type=int, default=200)
    args = ap.parse_args()
    import rclpy
    from rclpy.lifecycle import LifecycleNode
    from edge_infer import paths, procs
    from edge_infer.core.model import Result
    from edge_infer.core.postprocess import Classes, Detections
    from edge_infer.core.registry import load_registry
    from edge_infer.nodes.perception_node import PerceptionNode
    from edge_infer.nodes.vision_out import VisionOutputs
    from edge_infer_msgs.msg import Classification, DetectionArray
    from std_msgs.msg import Header
    procs.use_ros_env_here()
    rclpy.init(domain_id=procs.free_domain_id())
    reg = load_registry(paths.config_dir() / 'models.yaml')
    rng = np.random.default_rng(0)
    n = args.detections
    boxes = np.sort(rng.uniform(0, 500, (n, 4)).astype(np.float32), axis=1)
    det = Result(Detections(boxes, rng.uniform(0.3, 1, n).astype(np.float32),
                            rng.integers(0, 80, n)), 1.0, 5.0, 0.5, 'b')
    cls = Result(Classes(np.arange(5), np.linspace(0.5, 0.1, 5).astype(np.float32)),
                 1.0, 5.0, 0.1, 'b')

    class Frame:
        width, height = 768, 576

    host = LifecycleNode('bench_host')
    sink = rclpy.create_node('bench_sink')
    times = {}
    for task, spec, result, kind in (('detection', reg['nanodet'], det, DetectionArray),
                                     ('classification', reg['mobilenet_v2'], cls,
                                      Classification)):
        node = PerceptionNode.__new__(PerceptionNode)     # only _to_msg's inputs are used
        model = type('M', (), {'spec': spec, 'backend_name': 'b'})()
        node._live = type('L', (), {'model': model})()      # _model reads _live.model
        ours = host.create_publisher(kind, f'/bench/{task}', 10)
        vision = VisionOutputs(host, spec, 0.3)
        vision.pub.on_activate(None)        # a lifecycle publisher publishes once active
        from vision_msgs.msg import Classification as VC, Detection2DArray
        standard = Detection2DArray if task == 'detection' else VC
        for topic, typ in ((f'/bench/{task}', kind), (vision.topic_name, standard)):
            sink.create_subscription(typ, topic, lambda m: None, 10)
        header = Header(frame_id='camera')

        def edge_infer_msg():
            out = PerceptionNode._to_msg(node, Frame, result, 1.0)
            out.header = header
            ours.publish(out)

        def vision_msg():
            vision.publish(header, result)
        for name, fn in (('edge_infer', edge_infer_msg), ('vision', vision_msg)):
            times[(task, name)] = []
        for r in range(args.rounds):
            for name, fn in ((('edge_infer', edge_infer_msg), ('vision', vision_msg))
                             [::1 if r % 2 else -1]):
                t = time.perf_counter()
                for _ in range(args.frames):
                    fn()
                times[(task, name)].append((time.perf_counter() - t) / args.frames * 1e6)
    print(f'per frame, us (median of {args.rounds} interleaved rounds of {args.frames}; '
          f'p90, max of the round medians); {n} detections, top 5 classes')
    for task in ('detection', 'classification'):
        row = []
        for name in ('edge_infer', 'vision'):
            v = sorted(times[(task, name)])
            row.append(statistics.median(v))
            print(f'  {task:15} {name:10} {statistics.median(v):7.1f} '
                  f'(p90 {v[int(0.9 * (len(v) - 1))]:.1f}, max {v[-1]:.1f})')
        print(f'  {task:15} vision / edge_infer: {row[1] / row[0]:.2f}x')
    host.destroy_node()
    sink.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
