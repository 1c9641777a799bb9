# Copyright 2026 edge_infer contributors. Apache-2.0.
"""OpenVINO's throughput streams against one stream: frames per second with two callers.

    ./run.sh exec python bench/probes/ov_streams.py [--rounds 7] [--seconds 3]
                                                    [--models nanodet,mobilenet_v2]

Issue 54 names OpenVINO's throughput streams as a candidate for a node that
serves several cameras from one session. A node has two frame threads, so
what a stream could give is the throughput of two frames run at once. Per
model (the registry's file, and its NNCF int8 IR where ``edge_infer
variants`` made one; ``INFERENCE_PRECISION_HINT`` bf16 where the CPU has it,
as the node's choice here), this times, for ``--seconds`` each, in
interleaved rounds with the order rotating:

- ``one stream t2, 1 caller``: the node's session today (LATENCY, 2 threads),
  frames one at a time (the Server's lock);
- ``two streams t1 each, 2 callers``: THROUGHPUT with ``NUM_STREAMS`` 2, one
  infer request per caller thread;
- ``two sessions t1, 2 callers``: two 1-thread sessions, one per caller;
- ``four sessions t2, 4 callers``: four one-camera nodes' picture (each node
  its own t2 session, all running at once);
- ``one stream t1, 1 caller``: one core's figure, for scale.

Random input; the frames per second of each kind per round, then the median,
p90 and max over rounds, and the median as a ratio to today's session.
"""

import argparse
import statistics
import sys
import threading
import time

import numpy as np


def throughput(requests, x, seconds: float) -> float:
    """Return frames per second of ``requests`` (one caller thread each) for ``seconds``."""
    counts = [0] * len(requests)
    stop = time.perf_counter() + seconds

    def loop(i: int) -> None:
        req = requests[i]
        while time.perf_counter() < stop:
            req.infer({0: x})
            counts[i] += 1
    threads = [threading.Thread(target=loop, args=(i,)) for i in range(len(requests))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / seconds


def main(argv=None) -> int:
    """Time each kind per model, interleaved; write the table."""
    import benchlib
    import openvino as ov
    from edge_infer import paths
    from edge_infer.backends.libs.openvino import native_precision
    from edge_infer.backends.manager import default_cache_dir
    from edge_infer.backends.measure.load_probe import describe, LoadProbe
    from edge_infer.core.registry import load_models
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--rounds', type=int, default=7)
    ap.add_argument('--seconds', type=float, default=3.0, help='per kind and round')
    ap.add_argument('--models', default='nanodet,mobilenet_v2')
    benchlib.common_args(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds = 2, 0.5
    core = ov.Core()
    hint = {'bf16': 'bf16', 'fp16': 'f16'}.get(native_precision()[0], 'f32')

    def compiled(model, streams: int, threads: int):
        return core.compile_model(model, 'CPU', {
            'PERFORMANCE_HINT': 'LATENCY' if streams == 1 else 'THROUGHPUT',
            'NUM_STREAMS': streams, 'INFERENCE_NUM_THREADS': threads,
            'ENABLE_CPU_PINNING': False, 'INFERENCE_PRECISION_HINT': hint})
    specs = load_models()
    files = {}      # row name -> model file: the registry's, and its int8 IR where made
    for name in args.models.split(','):
        files[name] = paths.models_dir() / specs[name].file
        for ir in sorted((default_cache_dir() / 'variants').glob(f'{name}.int8-nncf.*.xml'))[:1]:
            files[f'{name} int8-nncf'] = ir
    kinds = {}      # (model, kind) -> (requests, input)
    for name, path in files.items():
        model = core.read_model(str(path))
        shape = [d.get_length() for d in model.inputs[0].get_partial_shape()]
        x = np.random.default_rng(3).random(shape, dtype=np.float32)
        t2, s2 = compiled(model, 1, 2), compiled(model, 2, 2)
        kinds[(name, 'one stream t2, 1 caller')] = ([t2.create_infer_request()], x)
        kinds[(name, 'two streams t1 each, 2 callers')] = (
            [s2.create_infer_request(), s2.create_infer_request()], x)
        kinds[(name, 'two sessions t1, 2 callers')] = (
            [compiled(model, 1, 1).create_infer_request() for _ in range(2)], x)
        kinds[(name, 'four sessions t2, 4 callers')] = (
            [compiled(model, 1, 2).create_infer_request() for _ in range(4)], x)
        kinds[(name, 'one stream t1, 1 caller')] = ([compiled(model, 1, 1).create_infer_request()],
                                                    x)
    for requests, x in kinds.values():
        throughput(requests, x, 0.3)        # warm
    fps = {k: [] for k in kinds}
    keys = list(kinds)
    probe = LoadProbe().start()
    for r in range(args.rounds):
        for k in keys[r % len(keys):] + keys[:r % len(keys)]:
            fps[k].append(throughput(*kinds[k], args.seconds))
    load = describe(probe.stop())
    res = benchlib.Results('ov_streams', "OpenVINO's throughput streams against one stream",
                           'issue 54: a candidate for one session serving several cameras',
                           args.machine, args.out)
    for name in files:
        base = statistics.median(fps[(name, 'one stream t2, 1 caller')])
        for k in [k for k in keys if k[0] == name]:
            v = np.array(fps[k])
            res.add(model=name, kind=k[1], fps_p50=float(np.median(v)),
                    fps_p90=float(np.percentile(v, 10)), fps_max=float(v.max()),
                    vs_today=float(np.median(v)) / base)
    res.note(f'{args.rounds} interleaved rounds of {args.seconds} s per kind, the order '
             f'rotating; precision hint {hint}; random input; pinning off.')
    res.note('fps_p90: the rate 90 % of rounds reached (the 10th percentile of the rates).')
    res.note(f'Load during the run (beside this process): {load}.')
    res.write(['model', 'kind', 'fps_p50', 'fps_p90', 'fps_max', 'vs_today'],
              ['model', 'kind', 'frames/s median', 'frames/s p90 (10th pct)', 'frames/s max',
               'median / one stream t2'])
    return 0


if __name__ == '__main__':
    sys.exit(main())
