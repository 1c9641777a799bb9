# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The benchmark's frame feeder: a bag's frames, held in memory, played at any rate.

    python -m edge_infer.tools.benchmark.feeder BAG [--frames N] [--remap FROM:=TO ...]

As ros2_benchmark's data loader and playback node: the bag's first ``N``
frames are read once into memory (a *frame* is the messages of every camera
topic that share one bag stamp: the raw image and its JPEG), so reading the
bag costs nothing during a probe. Each request on standard input, one JSON
line ``{"rate": R, "seconds": S}``, plays the frames in a loop at ``R`` Hz for
``S`` seconds; every frame sent gets the wall-clock time of its sending as
its header stamp (each message of the frame the same one), so a monitor can
tell each result's latency from the frame's stamp and which frames came
back. The answer, one JSON line on standard output: the stamps sent, the
rate reached and the latest a frame went out. ``{"quit": true}`` or the end
of the input ends it. Publishers use the sensor-data QoS, as a camera
driver's.
"""

import argparse
import json
import pathlib
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

from ...core.cdr import set_stamp

Frame = List[Tuple[str, bytearray]]     # (topic, serialized message) per camera topic


def load_frames(bag: pathlib.Path, limit: int,
                topics: Optional[Sequence[str]] = None) -> Tuple[List[Frame], Dict[str, str]]:
    """Return the bag's first ``limit`` frames and each topic's message type."""
    from ...core.bag_read import bag_info, iter_bag_frames
    info = bag_info(bag)
    types = {t: v['type'] for t, v in info['topics'].items()
             if topics is None or t in topics}
    frames: List[Frame] = []
    by_stamp: Dict[int, Frame] = {}
    for topic, _, stamp, raw in iter_bag_frames(bag, list(types)):
        frame = by_stamp.get(stamp)
        if frame is None:
            if len(frames) >= limit:
                break
            frame = by_stamp[stamp] = []
            frames.append(frame)
        frame.append((topic, bytearray(raw)))
    return frames, types


def play(publish, frames: List[Frame], rate: float, seconds: float, start: int = 0) -> dict:
    """Send ``frames`` in a loop at ``rate`` Hz for ``seconds``; return what was sent.

    ``publish(topic, data)`` sends one serialized message. Ticks are kept on a
    fixed schedule: a frame that went out late does not shift the next ones.
    """
    period = 1.0 / rate
    t0 = time.monotonic()
    n = int(seconds * rate)
    sent: List[int] = []
    late = 0.0
    for i in range(n):
        target = t0 + i * period
        delay = target - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            late = max(late, -delay)
        t_ns = time.time_ns()
        for topic, buf in frames[(start + i) % len(frames)]:
            set_stamp(buf, t_ns)
            publish(topic, bytes(buf))
        sent.append(t_ns)
    elapsed = time.monotonic() - t0
    return {'sent': sent, 'sent_hz': (len(sent) - 1) / elapsed if len(sent) > 1 and elapsed > 0
            else 0.0, 'late_max_s': late, 'next': (start + n) % max(1, len(frames))}


def main(argv=None) -> int:
    """Serve play requests from standard input (see the module doc)."""
    ap = argparse.ArgumentParser(prog='edge_infer.tools.benchmark.feeder',
                                 description=__doc__.splitlines()[0])
    ap.add_argument('bag', type=pathlib.Path)
    ap.add_argument('--frames', type=int, default=100, help='frames held in memory')
    ap.add_argument('--remap', nargs='*', default=[], metavar='FROM:=TO')
    args = ap.parse_args(argv)
    import rclpy
    from rclpy.qos import qos_profile_sensor_data

    from ... import procs
    from ..bag.play import message_class, parse_remaps
    frames, types = load_frames(args.bag, args.frames)
    if not frames:
        print(json.dumps({'error': f'{args.bag}: no frames'}), flush=True)
        return 1
    remap = parse_remaps(args.remap)
    procs.use_ros_env_here()
    rclpy.init(args=['--ros-args'])
    node = rclpy.create_node('edge_infer_benchmark_feeder')
    pubs = {t: node.create_publisher(message_class(k), remap.get(t, t), qos_profile_sensor_data)
            for t, k in types.items()}
    print(json.dumps({'ready': True, 'frames': len(frames), 'topics': sorted(types)}),
          flush=True)
    nxt = 0
    try:
        for line in sys.stdin:
            req = json.loads(line)
            if req.get('quit'):
                break
            if req.get('subscribers'):      # how many subscribe to each topic
                print(json.dumps({t: p.get_subscription_count() for t, p in pubs.items()}),
                      flush=True)
                continue
            out = play(lambda t, d: pubs[t].publish(d), frames, float(req['rate']),
                       float(req['seconds']), nxt)
            nxt = out.pop('next')
            print(json.dumps(out), flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
