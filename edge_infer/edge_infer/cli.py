# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The ``edge_infer`` command: one entry point for the project's tools.

Verbs::

  edge_infer prepare                    fetch + convert models, footage, demo bag,
                                        then the models' variant files (int8)
  edge_infer variants [MODEL ...]       make the fp16 / int8 files (a start never does)
  edge_infer demo [--rate R]            the demo (bag -> container -> summary)
  edge_infer record OUT --video F ...   record a camera bag from a video / images
  edge_infer play BAG [--rate R]        publish a bag's messages (raw CDR)
  edge_infer lifecycle NODE TRANSITION  configure | activate | deactivate | cleanup
                                        | shutdown | get   (like `ros2 lifecycle`)
  edge_infer info                       where config, data and models are
  edge_infer bringup [--nodes a,b] [--camera-topic T] [--bag DIR]
                                        the graph (config/graph.yaml) as processes, active
  edge_infer backends [--no-cache]      inference backends: available or why not
  edge_infer profile MODEL [--objective latency|energy|edp] [--energy] [--no-cache]
                                        measure MODEL on every backend; table + PNG
  edge_infer benchmark [--quick] [--configs auto,openvino/cpu/t1] [--params-file F]
                                        the graph's peak sustainable rate, per node
  edge_infer arm-check [--models probe,M] [--only PATTERN ...]
                                        the backend manager on aarch64 under qemu
  edge_infer model add FILE.onnx [--name N] [--labels FILE] [--family F]
  edge_infer model list | check NAME IMAGE
                                        your own model: recognised, registered, checked
  edge_infer shm-clean [--min-age S]    remove what dead processes left in /dev/shm (DDS, Triton)
  edge_infer serve [--models a,b] [--max-batch N] [--queue-delay-us U] [--grpc-port P]
                                        a Triton server serving the models (docs/triton.md)
  edge_infer serve --write-repo DIR     a model repository for a stock tritonserver
"""

import sys

from .paths import command

VERBS = ('prepare', 'demo', 'record', 'play', 'lifecycle', 'info', 'backends', 'profile',
         'bringup', 'benchmark', 'arm-check', 'model', 'shm-clean', 'serve', 'variants')


def _lifecycle(argv) -> int:
    import argparse

    import rclpy

    from . import procs
    from .nodes.lifecycle_client import LifecycleClient, LifecycleError, TRANSITIONS
    from .nodes.stopping import shut_down_within
    ap = argparse.ArgumentParser(prog='edge_infer lifecycle')
    ap.add_argument('node', help='node name, e.g. /detector')
    ap.add_argument('transition', choices=[*TRANSITIONS, 'get'])
    ap.add_argument('--timeout', type=float, default=30.0)
    args = ap.parse_args(argv)
    procs.use_ros_env_here()
    rclpy.init()
    node = rclpy.create_node('edge_infer_lifecycle')
    code = 1
    try:
        lc = LifecycleClient(node)
        if args.transition != 'get':
            lc.change(args.node, args.transition, args.timeout)
        print(f'{args.node}: {lc.get_state(args.node, args.timeout)}', flush=True)
        code = 0
    except LifecycleError as exc:
        print(f'edge_infer lifecycle: {exc}', file=sys.stderr, flush=True)
    finally:
        code = shut_down_within([node], code)   # the answer is out: a hang must not keep it
    return code


def _info(argv) -> int:
    from . import paths
    from .checksums import sha256_file
    from .core.registry import load_models, user_registry_path
    print(f'command:  {command()}')
    print(f'config:   {paths.config_dir()}')
    print(f'data:     {paths.data_home()}')
    print(f'your models: {user_registry_path()} (edge_infer model add)')
    reg = load_models()
    for name, spec in reg.items():
        f = paths.models_dir() / spec.file
        state = f'missing (run: {command()} prepare)'
        if f.is_file():
            state = 'ok' if sha256_file(f) == spec.sha256 else 'CHECKSUM MISMATCH'
        print(f'model:    {name:<14} {spec.task:<15} {f} [{state}]')
    return 0


def main(argv=None) -> int:
    """Dispatch ``edge_infer VERB ...`` to the tool of that verb."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ('-h', '--help') or argv[0] not in VERBS:
        print(__doc__.strip())
        return 0 if argv and argv[0] in ('-h', '--help') else 2
    verb, rest = argv[0], argv[1:]
    if verb == 'prepare':
        from .data import main as run
        return run(['prepare', *rest])
    if verb == 'demo':
        from .demo import main as run
    elif verb == 'record':
        from .tools.bag.record import main as run
    elif verb == 'play':
        from .tools.bag.play import main as run
    elif verb == 'lifecycle':
        return _lifecycle(rest)
    elif verb == 'backends':
        from .backends.tool import backends_main as run
    elif verb == 'profile':
        from .backends.tool import profile_main as run
    elif verb == 'bringup':
        from .bringup import main as run
    elif verb == 'benchmark':
        from .tools.benchmark.main import main as run
    elif verb == 'arm-check':
        from .tools.armcheck.check import main as run
    elif verb == 'model':
        from .tools.models.user import main as run
    elif verb == 'shm-clean':
        from .shm import main as run
    elif verb == 'serve':
        from .tools.triton.serve import main as run
    elif verb == 'variants':
        from .backends.variants_tool import main as run
    else:
        return _info(rest)
    return run(rest)


if __name__ == '__main__':
    sys.exit(main())
