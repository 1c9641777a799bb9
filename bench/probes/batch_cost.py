# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What a wider batch costs per image on this CPU: NanoDet with its batch freed.

    ./run.sh exec python bench/probes/batch_cost.py [--rounds 8] [--batches 1,2,4,8]

The file as the registry has it (batch fixed at 1) and the same file with
its batch freed (tools/triton/batch_dim.py, what ``edge_infer serve
--write-repo`` gives a stock backend), at batch 1, 2, 4 and 8, on the two
libraries the bundled server runs: OpenVINO CPU bf16 and ONNX Runtime CPU,
1 thread each (the server's choice here). Interleaved rounds, the order
rotating; per image ms = the run's wall time / batch. Dynamic batching only
pays on a library where the wider batch costs less per image: this says
whether it can on this machine (issue 38: 16 clients, batching against
none).
"""

import argparse
import datetime
import sys
import time

import numpy as np


def main(argv=None) -> int:
    """Time each library and batch, interleaved; write the table."""
    import benchlib
    import openvino as ov
    import onnxruntime as ort
    from edge_infer import paths
    from edge_infer.backends.measure.load_probe import describe, LoadProbe
    from edge_infer.core.registry import load_models
    from edge_infer.tools.triton import batch_dim
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--rounds', type=int, default=8)
    ap.add_argument('--batches', default='1,2,4,8')
    ap.add_argument('--images', type=int, default=16, help='images per library, batch, round')
    benchlib.common_args(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.images = 2, 8
    path = paths.models_dir() / load_models()['nanodet'].file
    data, why = batch_dim.batched_copy(path)
    if data is None:
        print(f'batch_cost: the batch cannot be freed: {why}', file=sys.stderr)
        return 1
    batches = [int(b) for b in args.batches.split(',')]
    core = ov.Core()
    cfg = {'PERFORMANCE_HINT': 'LATENCY', 'INFERENCE_PRECISION_HINT': 'bf16',
           'NUM_STREAMS': 1, 'INFERENCE_NUM_THREADS': 1, 'ENABLE_CPU_PINNING': False}
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 4
    fixed_ov = core.compile_model(core.read_model(str(path)), 'CPU', cfg).create_infer_request()
    free_ov = core.compile_model(core.read_model(data, b''), 'CPU', cfg).create_infer_request()
    fixed_ort = ort.InferenceSession(str(path), so, providers=['CPUExecutionProvider'])
    free_ort = ort.InferenceSession(data, so, providers=['CPUExecutionProvider'])
    name = fixed_ort.get_inputs()[0].name
    rng = np.random.default_rng(3)
    x = {b: rng.random((b, 3, 416, 416), np.float32) for b in batches}
    runs = {('openvino/cpu/t1/bf16', 'fixed at 1', 1): lambda: fixed_ov.infer({0: x[1]}),
            ('onnxruntime/cpu/t1', 'fixed at 1', 1):
                lambda: fixed_ort.run(None, {name: x[1]})}
    for b in batches:
        runs[('openvino/cpu/t1/bf16', 'freed', b)] = lambda b=b: free_ov.infer({0: x[b]})
        runs[('onnxruntime/cpu/t1', 'freed', b)] = lambda b=b: free_ort.run(None, {name: x[b]})
    for run in runs.values():
        run()       # compiled for that shape, warm
    per_image = {k: [] for k in runs}
    keys = list(runs)
    probe = LoadProbe().start()
    for r in range(args.rounds):
        for k in keys[r % len(keys):] + keys[:r % len(keys)]:
            for _ in range(max(1, args.images // k[2])):
                t = time.perf_counter()
                runs[k]()
                per_image[k].append((time.perf_counter() - t) * 1e3 / k[2])
    load = describe(probe.stop())
    date = datetime.date.today().strftime('%Y%m%d')
    res = benchlib.Results(f'batch_cost_{date}', 'NanoDet per image at batch 1-8, batch freed',
                           'issue 38: whether a wider batch can pay on this CPU', args.machine,
                           args.out)
    for lib in ('openvino/cpu/t1/bf16', 'onnxruntime/cpu/t1'):
        base = float(np.median(per_image[(lib, 'fixed at 1', 1)]))
        for k in [k for k in keys if k[0] == lib]:
            ms = np.array(per_image[k])
            res.add(library=lib, file=k[1], batch=k[2], images=len(ms),
                    p50=float(np.median(ms)), p90=float(np.percentile(ms, 90)),
                    vs_fixed=float(np.median(ms)) / base)
    res.note(f'{args.rounds} interleaved rounds, {args.images} images per library, file and '
             'batch per round, the order rotating; 1 thread each; random input.')
    res.note(f'Load during the run (beside this process): {load}.')
    res.write(['library', 'file', 'batch', 'images', 'p50', 'p90', 'vs_fixed'],
              ['library', 'file', 'batch', 'images', 'per image p50 ms', 'per image p90 ms',
               'p50 / the fixed file at batch 1'])
    return 0


if __name__ == '__main__':
    sys.exit(main())
