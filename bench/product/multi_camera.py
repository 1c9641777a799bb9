#!/usr/bin/env python3
# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Several cameras, one model: one N-camera node against N one-camera nodes (issue 54).

    ./run.sh exec python bench/product/multi_camera.py [--rounds 3] [--seconds 20]
        [--model nanodet] [--backend auto] [--quick] [--scenarios multi multi@30 ...]
    ./run.sh exec python bench/product/multi_camera.py --sustain 20 30 40 50 60 \
        --rounds 2 --seconds 8

Each scenario runs in a fresh process (its memory apart), in interleaved
rounds, with real rclpy nodes in that process (as the perception container
hosts them: one Runtime) and real footage (vtest.avi, 768x576 rgb8 Images,
each camera from its own point of the video) handed to each camera's
subscription callback at its rate:

- ``one``: one node, one camera at 10 Hz (the reference);
- ``one40``: one node, one camera at 40 Hz (the same total load as four);
- ``multi``: one node, four cameras at 10 Hz each (``image_topics``;
  ``batching`` auto: their frames in one run where the node measured it pays);
- ``multi_off``: the same with ``batching: off`` (one frame at a time);
- ``separate``: four one-camera nodes, 10 Hz each (today's way);
- ``flood``: one node, one camera at 30 Hz and three at 10 Hz.

Per scenario: the process's RSS added by the nodes (after they served),
each camera's share of frames with a result, and its in->out p50 (the
frame handed over -> its result published). Cameras are not in step: each
starts at a random phase of its period (seeded by the round). Printed: the
goals' figures as ratios (memory: multi - one <= 60 MB; every 10 Hz camera
>= 95 % served in flood; in->out p50 multi / one40, the same total load,
<= 1.25). With ``--sustain``: multi, multi_off and separate at each
per-camera rate of the ladder, and the highest rate at which every camera
keeps >= 95 % of its frames (goal: multi >= 1.3 x separate). Frames are
serialized once, as a driver in another process would have; the frame
number rides in header.stamp.sec.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from typing import Dict, List

import benchlib

RATES = {'one': [10.0], 'one40': [40.0], 'multi': [10.0] * 4, 'multi_off': [10.0] * 4,
         'separate': [10.0] * 4, 'flood': [30.0, 10.0, 10.0, 10.0]}
PARAMS = {'multi_off': {'batching': 'off'}}     # the rest: the node's defaults (batching auto)
SUSTAIN = ('multi', 'multi_off', 'separate')    # --sustain: these at each rate of the ladder


def rates_of(name: str) -> List[float]:
    """Return the cameras' rates of scenario ``name`` (``kind@R``: every camera at R Hz)."""
    kind, _, at = name.partition('@')
    return [float(at)] * len(RATES[kind]) if at else RATES[kind]


def _frames(count: int, start: int):
    """Return ``count`` frames of the demo video from frame ``start`` (768x576 rgb8 arrays)."""
    import cv2
    return [cv2.cvtColor(img, cv2.COLOR_BGR2RGB) for img in benchlib.video_frames(count, start)]


def scenario(name: str, model: str, backend: str, seconds: float, seed: int) -> dict:
    """Run one scenario in this process; return its figures."""
    import psutil
    import rclpy
    from edge_infer.backends.runtime import Runtime
    from edge_infer.nodes.perception_node import PerceptionNode
    from rclpy.parameter import Parameter
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import Image
    rates, kind = rates_of(name), name.partition('@')[0]

    def serialized(i: int, img) -> bytes:
        msg = Image(height=img.shape[0], width=img.shape[1], encoding='rgb8',
                    step=img.shape[1] * 3, data=img.tobytes())
        msg.header.frame_id = f'cam{i}'
        return serialize_message(msg)
    # serialized once (before the memory baseline), as a camera driver in another
    # process would have: the frame number goes into header.stamp.sec (CDR bytes 4-7)
    messages = [[serialized(i, img) for img in _frames(20, 300 * i)]
                for i in range(len(rates))]
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    proc = psutil.Process()
    rss0 = proc.memory_info().rss
    runtime = Runtime()
    common = {'model': model, 'backend': backend, 'diagnostics_period': 0.0,
              'debug_image_rate_hz': 0.0}
    topics = [f'/mcb_cam{i}/image' for i in range(len(rates))]
    if kind == 'separate':
        specs = [(f'node{i}', {'image_topic': t}) for i, t in enumerate(topics)]
    elif len(rates) == 1:
        specs = [('node0', {'image_topic': topics[0]})]
    else:
        specs = [('node0', {'image_topics': topics, **PARAMS.get(kind, {})})]
    nodes = [PerceptionNode(n, runtime=runtime, context=ctx, parameter_overrides=[
        Parameter(k, value=v) for k, v in {**common, **extra}.items()]) for n, extra in specs]
    cams = []
    for node in nodes:
        assert node.trigger_configure().name == 'SUCCESS', 'configure failed (see the log)'
        assert node.trigger_activate().name == 'SUCCESS', 'activate failed (see the log)'
        cams += node.parts.cameras
    deadline = time.monotonic() + 300
    while any(n.parts.live.provisional for n in nodes) and time.monotonic() < deadline:
        time.sleep(0.2)     # a profile running behind a provisional start: wait for it
    sent: List[Dict[int, float]] = [{} for _ in cams]
    done: List[Dict[int, float]] = [{} for _ in cams]
    for i, cam in enumerate(cams):
        real = cam.task.publish

        def publish(out, result, i=i, real=real):
            done[i][out.header.stamp.sec] = time.perf_counter()
            real(out, result)
        cam.task.publish = publish
    stop = threading.Event()
    measure_from = [0]

    phases = random.Random(seed).random

    def feed(i: int, rate: float) -> None:
        k, period = 0, 1.0 / rate
        nxt = time.monotonic() + phases() * period      # cameras are not in step
        while not stop.is_set():
            msg = messages[i][k % len(messages[i])]
            raw = msg[:4] + k.to_bytes(4, 'little') + msg[8:]
            sent[i][k] = time.perf_counter()
            cams[i].feed._on_frame(raw)
            k += 1
            nxt += period
            stop.wait(max(0.0, nxt - time.monotonic()))
    threads = [threading.Thread(target=feed, args=(i, r), daemon=True)
               for i, r in enumerate(rates)]
    for t in threads:
        t.start()
    time.sleep(3.0)     # warm-up: the first frames of each camera are not counted
    measure_from[0] = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    time.sleep(1.0)     # the last frames' results
    rss = proc.memory_info().rss
    out = {'scenario': name, 'rss_mb': (rss - rss0) / 1e6, 'cameras': [],
           'backend': nodes[0].parts.live.backend_name,
           'batching': nodes[0].parts.live.batch.why if kind != 'separate' else '',
           'batched': sum(n.stats.batched for n in nodes)}
    for i, rate in enumerate(rates):
        ks = [k for k, t in sent[i].items() if measure_from[0] <= t and
              t <= measure_from[0] + seconds - 0.5]
        got = [k for k in ks if k in done[i]]
        lat = [(done[i][k] - sent[i][k]) * 1e3 for k in got]
        out['cameras'].append({'rate_hz': rate, 'sent': len(ks), 'served': len(got),
                               'share': len(got) / len(ks) if ks else float('nan'),
                               'p50_ms': statistics.median(lat) if lat else float('nan')})
    for node in nodes:
        node.trigger_shutdown()
        node.destroy_node()
    rclpy.try_shutdown(context=ctx)
    return out


def _sustained(runs: Dict[str, List[dict]], ladder: List[float]) -> str:
    """Return the highest per-camera rate each kind sustains, and multi's ratio to separate."""
    best = {}
    for kind in SUSTAIN:
        best[kind] = 0.0
        for r in sorted(ladder):
            rs = runs[f'{kind}@{r:g}']
            worst = min(statistics.median(x['cameras'][i]['share'] for x in rs)
                        for i in range(len(rs[0]['cameras'])))
            if worst < 0.95:
                break
            best[kind] = r
    line = 'sustained per camera (every camera >= 95 % served, median of rounds): ' + \
        ', '.join(f'{k} {v:g} Hz' for k, v in best.items())
    if best['separate']:
        line += (f"; multi / separate = {best['multi'] / best['separate']:.2f}, multi_off / "
                 f"separate = {best['multi_off'] / best['separate']:.2f} (goal >= 1.3)")
    return line


def main(argv=None) -> int:
    """Run the scenarios in interleaved rounds; print and save the table."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--seconds', type=float, default=20.0)
    ap.add_argument('--model', default='nanodet')
    ap.add_argument('--backend', default='auto')
    ap.add_argument('--scenarios', nargs='*', default=list(RATES),
                    help=f"of {', '.join(RATES)}; kind@R: every camera at R Hz")
    ap.add_argument('--sustain', type=float, nargs='*', default=[],
                    help=f"per-camera rates (Hz): {', '.join(SUSTAIN)} at each, instead of "
                         f'--scenarios; the highest rate each sustains (every camera >= 95 %%)')
    ap.add_argument('--label', default='', help='results name suffix (e.g. the backend)')
    ap.add_argument('--scenario', help=argparse.SUPPRESS)    # a child: run one, print JSON
    ap.add_argument('--seed', type=int, default=0, help=argparse.SUPPRESS)
    benchlib.common_args(ap)
    args = ap.parse_args(argv)
    if args.scenario:
        print(json.dumps(scenario(args.scenario, args.model, args.backend, args.seconds,
                                  args.seed)))
        return 0
    rounds, seconds = (1, 6.0) if args.quick else (args.rounds, args.seconds)
    if args.sustain:
        args.scenarios = [f'{k}@{r:g}' for r in args.sustain for k in SUSTAIN]
        args.label = args.label or f'sustain_{args.model}'
    res = benchlib.Results('multi_camera' + (f'_{args.label}' if args.label else ''),
                           'Several cameras, one model: one N-camera node '
                           'against N one-camera nodes', 'issue 54', args.machine, args.out)
    runs: Dict[str, List[dict]] = {n: [] for n in args.scenarios}
    # a first start may profile the model (memory, time): done once, not counted
    warm = subprocess.run([sys.executable, __file__, '--scenario', 'one', '--model', args.model,
                           '--backend', args.backend, '--seconds', '1'], capture_output=True,
                          text=True, timeout=900, env=dict(os.environ))
    if warm.returncode != 0:
        print(warm.stderr[-3000:], file=sys.stderr)
        return 1
    for r in range(rounds):
        for name in args.scenarios:
            child = subprocess.run(
                [sys.executable, __file__, '--scenario', name, '--model', args.model,
                 '--backend', args.backend, '--seconds', str(seconds), '--seed', str(r)],
                capture_output=True, text=True, timeout=900, env=dict(os.environ))
            if child.returncode != 0:
                print(child.stderr[-3000:], file=sys.stderr)
                return 1
            got = json.loads(child.stdout.strip().splitlines()[-1])
            runs[name].append(got)
            shares = ' '.join(f'{c["share"]:.2f}' for c in got['cameras'])
            print(f'round {r + 1} {name}: +{got["rss_mb"]:.0f} MB, served {shares}, '
                  f'p50 {statistics.median(c["p50_ms"] for c in got["cameras"]):.1f} ms '
                  f'({got["backend"]}; {got["batched"]} batched; {got["batching"]})',
                  flush=True)
    for name, rs in runs.items():
        for i, rate in enumerate(rates_of(name)):
            share = benchlib.summary([x['cameras'][i]['share'] for x in rs])
            p50 = benchlib.summary([x['cameras'][i]['p50_ms'] for x in rs])
            res.add(scenario=name, camera=i, rate_hz=rate, rounds=len(rs),
                    served_share_median=share['median'], served_share_min=share['min'],
                    in_out_p50_ms=p50['median'], in_out_p50_max=p50['max'],
                    rss_mb=statistics.median(x['rss_mb'] for x in rs))
    rss = {n: statistics.median(x['rss_mb'] for x in rs) for n, rs in runs.items()}
    p50 = {n: statistics.median(c['p50_ms'] for x in rs for c in x['cameras'])
           for n, rs in runs.items()}
    first = next(iter(runs.values()))[0]
    for name, rs in runs.items():
        if rs[0]['batching']:
            res.note(f"{name}: {rs[0]['batching']}; frames batched per round: "
                     f"{', '.join(str(x['batched']) for x in rs)}")
    if args.sustain:
        res.note(_sustained(runs, args.sustain))
    first = first['backend']
    res.note(f'model {args.model}, backend {args.backend} (first run: {first}); {rounds} '
             f'interleaved rounds of {seconds:g} s; load: this bench only (its feeders '
             f'hand over frames serialized beforehand)')
    if 'one' in rss:
        res.note('memory added: ' + ', '.join(f'{n} - one = {rss[n] - rss["one"]:+.0f} MB'
                                              for n in rss if n != 'one')
                 + ' (goal: multi - one <= 60)')
    if 'flood' in runs:
        flood = [x['cameras'][i]['share'] for x in runs['flood'] for i in (1, 2, 3)]
        fast = [x['cameras'][0]['share'] for x in runs['flood']]
        res.note(f'flood: the 10 Hz cameras served {min(flood):.3f} at worst (goal >= 0.95); '
                 f'the 30 Hz one {min(fast):.3f}')
    if 'one40' in p50:
        res.note('in->out p50 at the same total load: ' + ', '.join(
            f'{n} / one40 = {p50[n] / p50["one40"]:.2f}' for n in ('multi', 'separate')
            if n in p50) + ' (goal: multi <= 1.25)')
    for n in ('multi', 'separate'):
        if n in runs:
            res.note(f'{n}: 4 x 10 Hz served, worst camera '
                     f'{min(c["share"] for x in runs[n] for c in x["cameras"]):.3f}')
    res.write(['scenario', 'camera', 'rate_hz', 'rounds', 'served_share_median',
               'served_share_min', 'in_out_p50_ms', 'in_out_p50_max', 'rss_mb'])
    return 0


if __name__ == '__main__':
    sys.exit(main())
