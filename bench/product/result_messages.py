# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What each result message costs per frame: edge_infer_msgs vs the standard types.

    ./run.sh exec python bench/product/result_messages.py [--detections 10] [--rounds 9]

One result per task, turned into messages and published the way a
perception node does it (its task object, nodes/tasks.py), with a
subscriber in the same process so that the serialisation happens:

- detection (``--detections`` boxes): DetectionArray vs vision_msgs
  Detection2DArray;
- classification (top 5): Classification vs vision_msgs Classification;
- pose (one person, 17 keypoints): PoseDetectionArray vs the person's box as
  a Detection2DArray (keypoints have no standard type: PoseDetectionArray is
  published either way);
- segmentation (a 768x576 mask, the bundled video's size): Segmentation
  (labels, each class's share of the pixels) vs the mask as sensor_msgs/Image
  (published either way).

Interleaved rounds of ``--frames`` frames each; per frame the median of the
round medians, with p90 and max, and the ratio standard / edge_infer
(``result_messages.csv`` / ``.md``, through benchlib).
"""

import argparse
import time

import benchlib
import numpy as np


def results(n: int):
    """Return {task: (registry name, Result)}: synthetic results of realistic size."""
    from edge_infer.core.model import Result
    from edge_infer.core.postprocess import Classes, Detections, Poses, SemanticMask
    rng = np.random.default_rng(0)
    boxes = np.sort(rng.uniform(0, 500, (n, 4)).astype(np.float32), axis=1)
    kps = np.concatenate([rng.uniform(100, 400, (1, 17, 2)), rng.uniform(0, 1, (1, 17, 1))],
                         2).astype(np.float32)
    mask = np.zeros((576, 768), np.uint8)
    mask[100:500, 200:400] = 1
    return {
        'detection': ('nanodet', Result(Detections(
            boxes, rng.uniform(0.3, 1, n).astype(np.float32), rng.integers(0, 80, n)),
            1.0, 5.0, 0.5, 'b')),
        'classification': ('mobilenet_v2', Result(Classes(
            np.arange(5), np.linspace(0.5, 0.1, 5).astype(np.float32)), 1.0, 5.0, 0.1, 'b')),
        'pose': ('movenet_lightning', Result(Poses(
            boxes[:1], np.array([0.6], np.float32), np.zeros(1, np.int64), keypoints=kps),
            1.0, 5.0, 0.1, 'b')),
        'segmentation': ('selfie', Result(SemanticMask(mask), 1.0, 5.0, 0.1, 'b')),
    }


def main() -> int:
    """Time both kinds of message per task; print and save the table."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--detections', type=int, default=10)
    ap.add_argument('--rounds', type=int, default=9)
    ap.add_argument('--frames', type=int, default=200)
    benchlib.common_args(ap)
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.frames = min(args.rounds, 3), min(args.frames, 20)
    res = benchlib.Results('result_messages', 'What each result message costs per frame: '
                           'edge_infer_msgs vs the standard types', '(product)',
                           args.machine, args.out)
    import rclpy
    from rclpy.lifecycle import LifecycleNode
    from edge_infer import procs
    from edge_infer.core.registry import load_models
    from edge_infer.nodes.tasks import make_task
    from std_msgs.msg import Header
    procs.use_ros_env_here()
    rclpy.init(domain_id=procs.free_domain_id())
    reg = load_models()
    host = LifecycleNode('bench_host')
    sink = rclpy.create_node('bench_sink')
    header = Header(frame_id='camera')
    times = {}
    for task_name, (model, result) in results(args.detections).items():
        host_ns = LifecycleNode(f'bench_{task_name}')
        task = make_task(host_ns, reg[model], 'both', score_threshold=0.3)
        for pub in task.publishers():
            pub.on_activate(None)       # a lifecycle publisher publishes once active
            sink.create_subscription(pub.msg_type, pub.topic_name, lambda m: None, 10)

        def edge_infer_msg(task=task, result=result):
            msg = task.to_msg(result)
            msg.header = header
            task.pub.publish(msg)

        def standard_msg(task=task, result=result):
            if task.has_vision:
                task.vision.publish(header, result)
            mask_pub = getattr(task, 'mask_pub', None)
            if mask_pub is not None:
                m = result.output.mask
                from sensor_msgs.msg import Image
                mask_pub.publish(Image(header=header, height=m.shape[0], width=m.shape[1],
                                       encoding='mono8', step=m.shape[1], data=m.tobytes()))
        fns = (('edge_infer', edge_infer_msg), ('standard', standard_msg))
        for name, _ in fns:
            times[(task_name, name)] = []
        for r in range(args.rounds):
            for name, fn in fns[::1 if r % 2 else -1]:
                t = time.perf_counter()
                for _ in range(args.frames):
                    fn()
                times[(task_name, name)].append((time.perf_counter() - t) / args.frames * 1e6)
    res.note(f'per frame, us (median of {args.rounds} interleaved rounds of {args.frames}; '
             f'p90, max of the round medians); {args.detections} detections, top 5 classes, '
             f'1 pose of 17 keypoints, a 768x576 mask')
    for task_name in ('detection', 'classification', 'pose', 'segmentation'):
        row = []
        for name in ('edge_infer', 'standard'):
            v = sorted(times[(task_name, name)])
            s = benchlib.summary(v)
            row.append(s['median'])
            print(f'  {task_name:15} {name:10} {s["median"]:7.1f} '
                  f'(p90 {v[int(0.9 * (len(v) - 1))]:.1f}, max {s["max"]:.1f})')
            res.add(task=task_name, messages=name, us_median=s['median'],
                    us_p90=v[int(0.9 * (len(v) - 1))], us_max=s['max'], rounds=s['n'],
                    vs_edge_infer=s['median'] / row[0])
        print(f'  {task_name:15} standard / edge_infer: {row[1] / row[0]:.2f}x')
    res.write(['task', 'messages', 'us_median', 'us_p90', 'us_max', 'vs_edge_infer'],
              ['task', 'messages', 'us per frame (median)', 'p90', 'max',
               'x edge_infer_msgs'])
    host.destroy_node()
    sink.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
