# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Many robots, one Triton server: throughput and latency per client, batching on and off.

    ./run.sh exec python bench/product/triton_fleet.py [--clients 1,2,4,8,16,32] [--seconds 6]
                 [--rates 10,15,20,30] [--backend openvino/cpu/t1/bf16] [--repeats 1]

Two real bundled servers, both up for the whole run (NanoDet on
``--backend``, Python backend, 1 instance, the uint8 frame in: serve's
defaults): one with dynamic batching (max batch 8, queue delay 100 us), one
without (max_batch_size 0). Each fleet size runs against both in turn,
``--repeats`` times, the server that goes first alternating; results/s is
the median of the repeats, latencies pool them. Against each, N client
processes, each a camera
at its rate (``--rates`` in turn: 10, 15, 20, 30 Hz): at every frame the
client sends the newest frame (the bag's calibration frames in turn, as the
node prepares them) over plain gRPC (a robot on the network: no
shared memory) and waits for the answer; a frame due while the previous
one is still out is dropped (counted), as the node's newest-frame slot
does. Per client: frames answered, dropped, latency p50 / p99. Against
each client's local choice: ``--backend`` run in this process alone
(what each robot would have on its own board, if its board were this
machine). The server pays for a client while its p50 is under the local
p50 and it drops under 5 % of the camera's frames.

Everything shares this machine's cores (2 here): the clients' own
serialisation competes with the server, which a real fleet does not.
"""

import argparse
import datetime
import multiprocessing
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np


def client(url: str, path: str, rate: float, start_at: float, seconds: float, queue) -> None:
    """One robot: a camera at ``rate`` Hz sending the newest frame to ``url``."""
    from edge_infer.backends.libs.triton import TritonBackend
    sess = TritonBackend(url, 'nanodet', pathlib.Path(path), timeout_ms=10000.0,
                         shm=False).open_session(pathlib.Path(path))
    from edge_infer.backends.measure.frames import calibration_frames
    from edge_infer.core.preprocess import Preprocessor
    from edge_infer.core.registry import load_models
    pre = Preprocessor(load_models()['nanodet'].input_spec, sess.input_kind)
    xs = [np.array(pre(f)[0], copy=True) for f in calibration_frames(4)[0]]   # real frames
    for x in xs:
        sess.run(x)     # connected and warm before the start
    lat, dropped, failed = [], 0, 0
    period = 1.0 / rate
    while time.time() < start_at:
        time.sleep(0.001)
    t0 = time.monotonic()
    k = 0
    while True:
        due = t0 + k * period
        now = time.monotonic()
        if now - t0 >= seconds:
            break
        if now < due:
            time.sleep(due - now)
        elif now - due >= period:       # frames came while the last one was out
            missed = int((now - due) // period)
            dropped += missed
            k += missed
            continue
        t = time.perf_counter()
        try:
            sess.run(xs[k % len(xs)])
            lat.append((time.perf_counter() - t) * 1e3)
        except Exception:  # a timeout under overload: counted
            failed += 1
        k += 1
    sess.close()
    queue.put({'rate': rate, 'lat': lat, 'dropped': dropped, 'failed': failed,
               'frames': k})


def run_fleet(url: str, path: pathlib.Path, n: int, rates, seconds: float) -> list:
    """Run ``n`` client processes together; return their records."""
    ctx = multiprocessing.get_context('spawn')
    queue = ctx.Queue()
    start_at = time.time() + 6.0 + 0.6 * n        # every process imported and warm by then
    procs = [ctx.Process(target=client, args=(url, str(path), rates[i % len(rates)],
                                              start_at, seconds, queue))
             for i in range(n)]
    for p in procs:
        p.start()
    out = [queue.get(timeout=120 + seconds) for _ in procs]
    for p in procs:
        p.join(30)
    return out


def local_figures(path: pathlib.Path, backend: str, runs: int = 60) -> tuple:
    """Return (p50, p99) ms of ``backend`` run here alone: each robot's own choice."""
    from edge_infer.backends.libs.openvino import openvino_candidates
    from edge_infer.backends.libs.ort import OrtBackend
    cands = {b.name: b for b in openvino_candidates([1, 2], native=True)}
    cands.update({f'onnxruntime/cpu/t{t}': OrtBackend(intra_op_threads=t) for t in (1, 2)})
    sess = cands[backend].open_session(path)
    x = np.random.default_rng(0).random((1, 3, 416, 416), np.float32)
    for _ in range(5):
        sess.run(x)
    ms = []
    for _ in range(runs):
        t = time.perf_counter()
        sess.run(x)
        ms.append((time.perf_counter() - t) * 1e3)
    sess.close()
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 99))


def add_row(res, label: str, n: int, recs: list, fps: list, seconds: float,
            local_p50: float) -> None:
    """Add one server's row for a fleet of ``n`` (``recs``: every repeat's client records)."""
    p50s = [float(np.percentile(r['lat'], 50)) for r in recs if r['lat']]
    p99s = [float(np.percentile(r['lat'], 99)) for r in recs if r['lat']]
    asked = sum(r['rate'] * seconds for r in recs) / max(1, len(fps))
    drop = [r['dropped'] / max(1, r['frames']) for r in recs]
    pays = sum(1 for p, d in zip(p50s, drop) if p < local_p50 and d < 0.05)
    res.add(server=label, clients=n, asked_fps=asked / seconds,
            served_fps=statistics.median(fps), each=' / '.join(f'{f:.1f}' for f in fps),
            p50_median=statistics.median(p50s), p50_worst=max(p50s),
            p99_median=statistics.median(p99s), p99_worst=max(p99s),
            dropped=float(np.mean(drop)), failed=sum(r['failed'] for r in recs),
            local_p50=local_p50, pays=f'{pays} of {len(recs)}')
    print(f'[triton_fleet] {label} {n} clients: {statistics.median(fps):.1f} results/s '
          f"({', '.join(f'{f:.1f}' for f in fps)}), p50 {statistics.median(p50s):.1f} ms, "
          f'p99 {statistics.median(p99s):.1f} ms, dropped {np.mean(drop):.2f}', flush=True)


def main(argv=None) -> int:
    """Measure every fleet size with and without the batcher; write the table."""
    import benchlib
    from edge_infer import paths
    from edge_infer.backends.measure.load_probe import describe, LoadProbe
    from edge_infer.core.registry import load_models
    from edge_infer.testing import triton_server
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--clients', default='1,2,4,8,16,32')
    ap.add_argument('--seconds', type=float, default=6.0)
    ap.add_argument('--rates', default='10,15,20,30', help='camera Hz of the clients, in turn')
    ap.add_argument('--backend', default='openvino/cpu/t1/bf16')
    ap.add_argument('--repeats', type=int, default=1,
                    help='runs of each fleet size against each server, alternating')
    benchlib.common_args(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.clients, args.seconds = '1,4', 3.0
    why = triton_server.skip_reason()
    if why:
        print(f'triton_fleet: cannot run here: {why}', file=sys.stderr)
        return 1
    path = paths.models_dir() / load_models()['nanodet'].file
    rates = [float(r) for r in args.rates.split(',')]
    sizes = [int(n) for n in args.clients.split(',')]
    local_p50, local_p99 = local_figures(path, args.backend)
    date = datetime.date.today().strftime('%Y%m%d')
    res = benchlib.Results(f'triton_fleet_{date}',
                           'Many robots, one Triton server: NanoDet, clients 1-32',
                           'issue 38: throughput and p50/p99 per client with and without '
                           'dynamic batching; where the shared server stops paying',
                           args.machine, args.out)
    probe = LoadProbe().start()
    t_start = time.monotonic()
    servers = (('batcher 8 / 100 us', 8), ('no batcher', 0))
    with tempfile.TemporaryDirectory() as tmp, \
            triton_server.served(pathlib.Path(tmp) / 'b', {'nanodet': args.backend}) as batched, \
            triton_server.served(pathlib.Path(tmp) / 'n', {'nanodet': args.backend},
                                 max_batch=0) as plain:
        urls = {'batcher 8 / 100 us': batched.url, 'no batcher': plain.url}
        for n in sizes:
            recs: dict = {label: [] for label, _ in servers}
            fps: dict = {label: [] for label, _ in servers}
            for rep in range(args.repeats):
                order = servers if rep % 2 == 0 else servers[::-1]
                for label, _ in order:
                    got = run_fleet(urls[label], path, n, rates, args.seconds)
                    recs[label] += got
                    fps[label].append(sum(len(r['lat']) for r in got) / args.seconds)
            for label, _ in servers:
                add_row(res, label, n, recs[label], fps[label], args.seconds, local_p50)
    load = describe(probe.stop())
    res.note(f'Server: the bundled tritonserver, NanoDet on {args.backend} (Python backend, '
             f"1 instance, serve's defaults: uint8 frame in, the cells over 0.05 out). "
             f'Clients: separate processes, real frames, plain gRPC on '
             f'loopback, {args.repeats} repeat(s) per size alternating the servers, cameras at '
             f"{', '.join(f'{r:g}' for r in rates)} Hz in turn, {args.seconds:g} s each; a "
             'frame due while the previous one is out is dropped (counted).')
    res.note(f'Local choice, each client alone on this machine: {args.backend} p50 '
             f'{local_p50:.2f} ms, p99 {local_p99:.2f} ms. "pays": clients whose p50 is under '
             'that and who lost under 5 % of their frames.')
    res.note(f"Load from other work during the whole run (this benchmark's server and "
             f'clients share the cores but do not count in it): {load}; '
             f'{time.monotonic() - t_start:.0f} s.')
    res.write(['server', 'clients', 'asked_fps', 'served_fps', 'each', 'p50_median', 'p50_worst',
               'p99_median', 'p99_worst', 'dropped', 'failed', 'local_p50', 'pays'],
              ['server', 'clients', 'camera frames/s asked', 'results/s',
               'results/s each repeat', 'p50 ms (median '
               'client)', 'p50 ms (worst client)', 'p99 ms (median client)',
               'p99 ms (worst client)', 'dropped share', 'failed', 'local p50 ms',
               'server pays'])
    return 0


if __name__ == '__main__':
    sys.exit(main())
