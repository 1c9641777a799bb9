# Copyright 2026 edge_infer contributors. Apache-2.0.
"""JPEG decode time: simplejpeg in strict mode (what the nodes use) vs OpenCV's imdecode.

    ./run.sh exec python bench/probes/jpeg_decode.py [--bag DIR] [--rounds 9]

Both are libjpeg-turbo; simplejpeg's strict mode raises on the corrupt data
that cv2.imdecode decodes into a wrong image (printing only libjpeg's
"Corrupt JPEG data" on stderr). Decodes every JPEG of the bag's
/camera/image_raw/compressed topic of the most common size (the demo bag:
768x576) to BGR, the two decoders interleaved round by round (their order
alternating), and prints the median per-image time of the rounds with min/max
(also written to ``jpeg_decode.csv`` / ``.md`` through benchlib).
"""

import argparse
import collections
import pathlib
import time

import benchlib
import cv2
from edge_infer import paths
from edge_infer.core.bag_read import iter_bag_frames
from edge_infer.core.cdr import parse_compressed_image
import numpy as np
import simplejpeg


def main() -> None:
    """Measure; print and save the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--bag', type=pathlib.Path, default=paths.data_home() / 'bags' / 'demo')
    ap.add_argument('--rounds', type=int, default=9)
    benchlib.common_args(ap)
    args = ap.parse_args()
    rounds = min(args.rounds, 3) if args.quick else args.rounds
    res = benchlib.Results('jpeg_decode', 'JPEG decode time: simplejpeg strict vs '
                           'cv2.imdecode', '(probe)', args.machine, args.out)
    jpegs = [bytes(parse_compressed_image(raw).data) for topic, _, _, raw in
             iter_bag_frames(args.bag) if topic.endswith('/compressed')]
    sizes = collections.Counter(simplejpeg.decode_jpeg_header(j)[:2] for j in jpegs)
    (h, w), _ = sizes.most_common(1)[0]
    jpegs = [j for j in jpegs if simplejpeg.decode_jpeg_header(j)[:2] == (h, w)]
    arrays = [np.frombuffer(j, np.uint8) for j in jpegs]
    for j, a in zip(jpegs, arrays):     # same pixels from both (and warm caches)
        assert np.array_equal(simplejpeg.decode_jpeg(j, 'BGR', strict=True),
                              cv2.imdecode(a, cv2.IMREAD_COLOR))

    def run_cv2():
        for a in arrays:
            cv2.imdecode(a, cv2.IMREAD_COLOR)

    def run_simplejpeg():
        for j in jpegs:
            simplejpeg.decode_jpeg(j, 'BGR', strict=True)
    times = {'cv2.imdecode': [], 'simplejpeg strict': []}
    runs = {'cv2.imdecode': run_cv2, 'simplejpeg strict': run_simplejpeg}
    for r in range(rounds):
        for name in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
            t0 = time.perf_counter()
            runs[name]()
            times[name].append((time.perf_counter() - t0) / len(jpegs) * 1e3)
    res.note(f'{len(jpegs)} JPEGs of {w}x{h} from {benchlib.shown_path(str(args.bag))} '
             f'(mean {np.mean([len(j) for j in jpegs]) / 1e3:.0f} kB), {rounds} interleaved '
             f'rounds, OpenCV {cv2.__version__}, simplejpeg {simplejpeg.__version__}; '
             'ms per image: median of the rounds (min, max)')
    base = benchlib.summary(times['cv2.imdecode'])['median']
    for name, ts in times.items():
        s = benchlib.summary(ts)
        med = s['median']
        print(f'  {name:<18} {med:6.3f} ms per image (min {s["min"]:.3f}, max {s["max"]:.3f}), '
              f'{med / base:.2f}x cv2')
        res.add(decoder=name, ms_median=med, ms_min=s['min'], ms_max=s['max'], rounds=s['n'],
                vs_cv2=med / base)
    res.write(['decoder', 'ms_median', 'ms_min', 'ms_max', 'vs_cv2'],
              ['decoder', 'ms per image (median)', 'min', 'max', 'x cv2'])


if __name__ == '__main__':
    main()
