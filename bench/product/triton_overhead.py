# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What a Triton server adds beyond its own compute: NanoDet 416x416 over loopback.

    ./run.sh exec python bench/product/triton_overhead.py [--rounds 12] [--runs 20]
                 [--backend openvino/cpu/t1/bf16]

Real bundled servers (edge_infer serve's tritonserver, the model on
``--backend`` inside, through the Python backend): serve's defaults (the
uint8 frame in, normalised on the server; out, only the cells scoring 0.05
or more, rebuilt into the dense outputs on the robot; dynamic batching, max
batch 8, queue delay 100 us), the same without a batcher, the same with the
dense outputs (``--rows-floor 0``), and ``--input float --rows-floor 0``
(the float tensor in, four times the bytes). And a floor: the same Python
backend serving an empty model with NanoDet's u8 input and dense outputs
(fixed values back, no compute): what Triton and its Python backend cost
for these tensors alone. Against each, the candidate's own session
(backends/libs/triton.py) with system shared memory and with plain gRPC:
ten variants, in interleaved rounds of ``--runs`` frames each, the order
rotating. The frames are real (the calibration frames of the bag, resized
as the node does): the rows sent depend on what the frame holds. Per
frame: the wall time of ``session.run`` as the node sees it, minus the
server's own run time on the library (the served model's
``edge_infer_compute_us`` output) = the remote overhead (the input written,
gRPC both ways, Triton's queue and the Python backend's hand-over to its
stub, the outputs read). Goals (issue 38): p50 <= 1.0 ms with shared
memory, <= 3 ms over gRPC. The foreign CPU load during the run (other
processes than this one and the servers) is written under the table.
"""

import argparse
import contextlib
import datetime
import pathlib
import sys
import tempfile
import time

import numpy as np


GOALS_MS = {'shm': 1.0, 'grpc': 3.0}


def server_pids(servers) -> list:
    """Return the servers' processes and their children (the Python backend stubs)."""
    import psutil
    out = []
    for s in servers:
        proc = psutil.Process(s.server.proc.pid)
        out += [proc.pid] + [c.pid for c in proc.children(recursive=True)]
    return out


FLOOR_MODEL = """
import numpy as np
import triton_python_backend_utils as pb

SHAPES = %r


class TritonPythonModel:
    def initialize(self, args):
        # values, not zeros: a zero array is one shared page, cheaper to copy than any answer
        rng = np.random.default_rng(0)
        self.outs = [rng.random(shape, dtype=np.float32) for shape in SHAPES.values()]

    def execute(self, requests):
        out = []
        for request in requests:
            pb.get_input_tensor_by_name(request, %r).as_numpy()
            tensors = [pb.Tensor(n, o) for n, o in zip(SHAPES, self.outs)]
            tensors.append(pb.Tensor('edge_infer_compute_us', np.zeros((1, 1), np.int64)))
            out.append(pb.InferenceResponse(output_tensors=tensors))
        return out
"""


def floor_repo(root: pathlib.Path, spec, path: pathlib.Path) -> pathlib.Path:
    """Write a repository whose 'nanodet' is an empty Python model with the same tensors."""
    from edge_infer.tools.triton import repository
    inputs, outputs = repository.io_of(path)
    u8, params = repository.u8_input('nanodet', inputs, spec.input_spec)
    shapes = {o.name: o.shape for o in outputs}
    outputs.append(repository.Tensor('edge_infer_compute_us', 'TYPE_INT64', [1, 1]))
    folder = root / 'repo' / 'nanodet'
    (folder / '1').mkdir(parents=True)
    (folder / '1' / 'model.py').write_text(FLOOR_MODEL % (shapes, u8.name))
    params.update({repository.SHA_KEY: 'none', repository.BACKEND_KEY: 'nothing (floor)'})
    (folder / 'config.pbtxt').write_text(repository.config_text(
        'nanodet', 'python', [u8], outputs, 0, 0, 1, params))
    return root / 'repo'


@contextlib.contextmanager
def floor_server(root: pathlib.Path, spec, path: pathlib.Path):
    """Serve the empty model on a free loopback port; yield it (triton_server.Running)."""
    from edge_infer.testing import triton_server
    from edge_infer.tools.triton import serve, server_env
    repo = floor_repo(root, spec, path)
    server = serve.Server(server_env.ensure(log=lambda line: None), repo,
                          triton_server.free_port(), '127.0.0.1').start()
    try:
        yield triton_server.Running(server, server.wait_ready())
    finally:
        server.stop()


def main(argv=None) -> int:
    """Measure the four variants interleaved; write the table."""
    import benchlib
    from edge_infer import paths
    from edge_infer.backends.libs.triton import TritonBackend
    from edge_infer.backends.measure.load_probe import describe, LoadProbe
    from edge_infer.core.registry import load_models
    from edge_infer.testing import triton_server
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--rounds', type=int, default=12)
    ap.add_argument('--runs', type=int, default=20, help='frames per variant per round')
    ap.add_argument('--backend', default='openvino/cpu/t1/bf16',
                    help='what the server runs NanoDet on (a servable candidate)')
    benchlib.common_args(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.runs = 3, 5
    why = triton_server.skip_reason()
    if why:
        print(f'triton_overhead: cannot run here: {why}', file=sys.stderr)
        return 1
    spec = load_models()['nanodet']
    path = paths.models_dir() / spec.file
    from edge_infer.backends.measure.frames import calibration_frames
    from edge_infer.core.preprocess import INPUT_KINDS, Preprocessor
    real = calibration_frames(4)[0]
    frames = {k: [np.array(Preprocessor(spec.input_spec, k)(f)[0], copy=True) for f in real]
              for k in INPUT_KINDS}
    date = datetime.date.today().strftime('%Y%m%d')
    res = benchlib.Results(f'triton_overhead_{date}',
                           'Triton remote overhead beyond the server compute, NanoDet 416x416',
                           'issue 38: loopback with system shared memory <= 1.0 ms p50, '
                           'gRPC <= 3 ms', args.machine, args.out)
    served = {'nanodet': args.backend}
    with tempfile.TemporaryDirectory() as tmp, \
            triton_server.served(pathlib.Path(tmp) / 'b', served) as batched, \
            triton_server.served(pathlib.Path(tmp) / 'n', served, max_batch=0) as plain, \
            triton_server.served(pathlib.Path(tmp) / 'd', served, max_batch=0,
                                 rows_floor=0) as dense, \
            triton_server.served(pathlib.Path(tmp) / 'f', served, u8=False,
                                 rows_floor=0) as floats, \
            floor_server(pathlib.Path(tmp) / 'e', spec, path) as floor:
        servers = (('u8 in, rows out, batcher 8 / 100 us (serve defaults)', batched),
                   ('u8 in, rows out, no batcher', plain),
                   ('u8 in, dense out, no batcher', dense),
                   ('float in, dense out, batcher 8 / 100 us', floats),
                   ('floor: empty Python model, u8 in, dense out', floor))
        sessions, inputs = {}, {}
        for label, server in servers:
            for shm in (True, False):
                model_path = None if server is floor else path
                sess = TritonBackend(server.url, 'nanodet', model_path,
                                     shm=shm).open_session(model_path)
                xs = frames[sess.input_kind]
                for x in xs:
                    sess.run(x)
                sessions[(label, 'shm' if shm else 'grpc')] = sess
                inputs[(label, 'shm' if shm else 'grpc')] = xs
        walls = {k: [] for k in sessions}
        computes = {k: [] for k in sessions}
        keys = list(sessions)
        probe = LoadProbe(also=server_pids([s for _, s in servers])).start()
        for r in range(args.rounds):
            for k in keys[r % len(keys):] + keys[:r % len(keys)]:
                sess, xs = sessions[k], inputs[k]
                for i in range(args.runs):
                    x = xs[i % len(xs)]
                    t = time.perf_counter()
                    sess.run(x)
                    walls[k].append((time.perf_counter() - t) * 1e3)
                    computes[k].append(sess.remote_compute_ms)
        load = describe(probe.stop())
        for k, sess in sessions.items():
            assert sess.transport == k[1], (k, sess.note)
            sess.close()
        ready = [s.ready_s for _, s in servers]
    for (label, transport) in keys:
        w, c = np.array(walls[(label, transport)]), np.array(computes[(label, transport)])
        over = w - c
        p50 = float(np.percentile(over, 50))
        res.add(server=label, transport=transport,
                input=f'{inputs[(label, transport)][0].nbytes:,} B', frames=len(w),
                wall_p50=float(np.median(w)), compute_p50=float(np.median(c)),
                over_p50=p50, over_p90=float(np.percentile(over, 90)),
                over_max=float(over.max()), goal=GOALS_MS[transport],
                met='yes' if p50 <= GOALS_MS[transport] else 'no')
    res.note(f'{args.rounds} interleaved rounds x {args.runs} frames per variant, order '
             f'rotating; the server runs NanoDet on {args.backend} (Python backend, 1 '
             'instance); overhead = wall time of session.run minus the server-side run '
             'time the served model reports per request.')
    res.note(f'Load during the run (beside this process and the servers): {load}.')
    res.note(f"Servers ready {', '.join(f'{r:.1f}' for r in ready)} s after start.")
    res.write(['server', 'transport', 'input', 'frames', 'wall_p50', 'compute_p50', 'over_p50',
               'over_p90', 'over_max', 'goal', 'met'],
              ['server', 'transport', 'input', 'frames', 'wall p50 ms', 'server compute p50 ms',
               'overhead p50 ms', 'overhead p90 ms', 'overhead max ms', 'goal p50 ms',
               'met'])
    return 0


if __name__ == '__main__':
    sys.exit(main())
