# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Every launch argument and node parameter, checked before any process starts.

``ros2 launch edge_infer perception.launch.py`` (and ``edge_infer bringup``,
through :func:`edge_infer.graph.plan`) call these before they start
anything. The first bad value raises :class:`ArgumentError` with one line
that names the argument, or the node and parameter of the params file, and
says what would do; ``ros2 launch`` prints it ("Caught exception in launch
...") and exits 1, ``edge_infer bringup`` prints it and exits 1. Without
this, ``camera_topic:="''"`` started a container that died with a traceback
("Couldn't parse remap rule") while the launch exited 0, and an integer
where the node declares a double (``max_latency_ms: 5``) stopped the whole
container.

Topic names, namespaces and node names are checked with rclpy's own
validation (the rules rcl applies to remappings); models against the
registry the node reads (its ``registry`` parameter plus the user's);
a forced ``backend`` against the manager's candidates; every parameter's
type against the node's declaration (ROS refuses another type), and numbers
against their ranges.
"""

import pathlib
import sys
from typing import Callable, Dict, Iterable, Optional

TRUE = ('true', '1', 'yes', 'on')
FALSE = ('false', '0', 'no', 'off')
# parameters every rclpy node has
STANDARD = ('use_sim_time', 'start_type_description_service')


class GraphError(ValueError):
    """The graph description or an argument is unusable (:mod:`edge_infer.graph` raises it too)."""


class ArgumentError(GraphError):
    """A launch argument or a node parameter has a value nothing could start with."""


def _first_line(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text.split(': ', 1)[-1].rstrip(':')


def topic(what: str, value: str) -> str:
    """Return ``value`` if rclpy accepts it as a topic name, else raise naming ``what``."""
    from rclpy.exceptions import NameValidationException
    from rclpy.validate_full_topic_name import validate_full_topic_name
    from rclpy.validate_topic_name import validate_topic_name
    try:
        validate_topic_name(value)
        # the name as rcl expands it (a relative or private name under some namespace)
        validate_full_topic_name('/' + value.lstrip('~').lstrip('/') if value != '~' else '/n')
    except NameValidationException as exc:
        raise ArgumentError(f'{what} {value!r}: not a valid ROS topic name: '
                            f'{_first_line(exc)}') from None
    return value


def namespace(what: str, value: str) -> str:
    """Return the namespace if it is empty or valid (a relative one is taken under /)."""
    if not value:
        return value
    from rclpy.exceptions import NameValidationException
    from rclpy.validate_namespace import validate_namespace
    try:
        validate_namespace(value if value.startswith('/') else '/' + value)
    except NameValidationException as exc:
        raise ArgumentError(f'{what} {value!r}: not a valid ROS namespace: '
                            f'{_first_line(exc)}') from None
    return value


def node_name(what: str, value: str) -> str:
    """Return ``value`` if rclpy accepts it as a node name."""
    from rclpy.exceptions import NameValidationException
    from rclpy.validate_node_name import validate_node_name
    try:
        validate_node_name(value)
    except NameValidationException as exc:
        raise ArgumentError(f'{what} {value!r}: not a valid ROS node name: '
                            f'{_first_line(exc)}') from None
    return value


def boolean(what: str, value: str) -> bool:
    """Return a launch argument's truth value; anything but true/false (1/0, yes/no) raises."""
    if value.lower() in TRUE:
        return True
    if value.lower() in FALSE:
        return False
    raise ArgumentError(f'{what} {value!r}: use true or false')


def number(what: str, value: str, low: float, kind=float):
    """Return ``value`` as ``kind`` if it is a number of at least ``low``, else raise."""
    try:
        out = kind(value)
    except ValueError:
        out = None
    if out is None or not out >= low:
        raise ArgumentError(f'{what} {value!r}: use {"an integer" if kind is int else "a number"}'
                            f' of {low:g} or more')
    return out


def one_of(what: str, value: str, allowed: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``allowed``."""
    allowed = list(allowed)
    if value not in allowed:
        raise ArgumentError(f"{what} {value!r}: use one of {', '.join(allowed)}")
    return value


# ------------------------------------------------------------------ the params file
def _kind(default) -> str:
    return ('bool' if isinstance(default, bool) else 'integer' if isinstance(default, int)
            else 'double' if isinstance(default, float) else 'string'
            if isinstance(default, str) else 'string list')


def _typed(where: str, values: dict, declared: Dict[str, tuple]) -> None:
    """Raise for a parameter the node does not declare, or one of another type."""
    for key, value in values.items():
        if key in STANDARD or key.startswith('qos_overrides'):
            continue
        if key not in declared:
            raise ArgumentError(f"{where}: unknown parameter '{key}' (known: "
                                f"{', '.join(sorted(declared))})")
        want = _kind(declared[key][0])
        strings = isinstance(value, list) and all(isinstance(v, str) for v in value)
        ok = {'bool': isinstance(value, bool),
              'integer': isinstance(value, int) and not isinstance(value, bool),
              'double': isinstance(value, float),
              'string': isinstance(value, str),
              'string list': strings}[want]
        if not ok:
            hint = f' (write {value}.0)' if want == 'double' and isinstance(value, int) else ''
            raise ArgumentError(f"{where}: parameter '{key}' is {value!r}: the node declares "
                                f'a {want}{hint}')


def _perception(where: str, p: dict, registry_cache: dict) -> None:
    """Check one perception node's values (its parameters with their defaults applied)."""
    from .core.registry import load_models, RegistryError
    from .nodes.perception_params import check

    def bad(key: str, use: str) -> ArgumentError:
        return ArgumentError(f"{where}: parameter '{key}' is {p[key]!r}: use {use}")
    try:
        check(p)    # the node's own check at configure
    except ValueError as exc:
        raise ArgumentError(f'{where}: {exc}') from None
    topic(f"{where}: parameter 'image_topic'", p['image_topic'])
    for t in p['image_topics'] or []:
        topic(f"{where}: parameter 'image_topics'", t)
    if p['output_topic']:
        topic(f"{where}: parameter 'output_topic'", p['output_topic'])
    if p['registry'] and not pathlib.Path(p['registry']).is_file():
        raise bad('registry', 'an existing models file')
    if p['registry'] not in registry_cache:
        try:
            registry_cache[p['registry']] = load_models(p['registry'] or None)
        except (RegistryError, OSError, ValueError) as exc:
            raise ArgumentError(f"{where}: parameter 'registry': {exc}") from None
    models = registry_cache[p['registry']]
    if p['model'] not in models:
        raise bad('model', f"a model of the registry ({', '.join(sorted(models))})")
    if p['backend'] not in ('', 'auto'):
        from . import paths
        from .backends.manager import BackendManager
        spec = models[p['model']]
        models_dir = pathlib.Path(p['models_dir'] or paths.models_dir())
        names = sorted(b.name for b in BackendManager(log=lambda line: None).candidates(
            spec, models_dir / spec.file))
        if p['backend'] not in names:
            raise bad('backend', f"'auto' or a candidate ({', '.join(names)})")


def check_params(params: dict, process: str, source: str,
                 warn: Optional[Callable[[str], None]] = None) -> None:
    """Check the params-file content of one process before it starts; raise on the first error.

    ``params``: node name -> {'ros__parameters': {...}} (unqualified keys);
    ``process``: the process's own node (its section names the hosted nodes);
    ``source``: the file's name, for the messages. A deprecated parameter of
    the process (container_params.RENAMED) is moved to its new name in
    ``params``, with one ``warn`` line (default: to stderr), so the process
    starts with the new name and does not say it again.
    """
    from .nodes.container_params import (FRAME_ORDERS, PARAMETERS as container, renamed,
                                         ROS_EXECUTORS)
    from .nodes.perception_params import PARAMETERS
    from .nodes.telemetry_params import PARAMETERS as TELEMETRY

    def section(name: str) -> dict:
        body = params.get(name) or {}
        if not isinstance(body, dict) or not isinstance(body.get('ros__parameters', {}), dict):
            raise ArgumentError(f'{source}: {name}: expected a ros__parameters mapping')
        return body.get('ros__parameters') or {}
    own = section(process)
    if warn is None:
        def warn(line: str) -> None:
            print(f'{source}: {process}: {line}', file=sys.stderr)
    try:
        moved = renamed(own, warn)
    except ValueError as exc:
        raise ArgumentError(f'{source}: {process}: {exc}') from None
    own.clear()
    own.update(moved)
    _typed(f'{source}: {process}', own, container)
    names = list(own.get('nodes', ['detector', 'classifier', 'pose', 'segmenter']))
    telemetry = own.get('telemetry', 'telemetry')
    for n in names:
        node_name(f"{source}: {process}: parameter 'nodes':", n)
        if n not in params:
            raise ArgumentError(f"{source}: {process}: parameter 'nodes' names '{n}', which "
                                f'has no section in {source}')
    if len(set(names)) != len(names) or telemetry in names:
        raise ArgumentError(f"{source}: {process}: parameter 'nodes' {names}: use distinct "
                            f"names, other than the telemetry node's ('{telemetry}')")
    if telemetry:
        node_name(f"{source}: {process}: parameter 'telemetry'", telemetry)
    if telemetry in params:
        values = section(telemetry)
        _typed(f'{source}: {telemetry}', values, TELEMETRY)
        for key, value in values.items():
            if key.endswith(('_hz', '_s')) and not value > 0:
                raise ArgumentError(f"{source}: {telemetry}: parameter '{key}' is {value!r}: "
                                    f'use a positive number')
    if own.get('ros_executor', 'events') not in ROS_EXECUTORS:
        raise ArgumentError(f"{source}: {process}: parameter 'ros_executor' is "
                            f"{own['ros_executor']!r}: use one of {', '.join(ROS_EXECUTORS)}")
    if own.get('frame_order', 'adaptive') not in FRAME_ORDERS:
        raise ArgumentError(f"{source}: {process}: parameter 'frame_order' is "
                            f"{own['frame_order']!r}: use one of {', '.join(FRAME_ORDERS)}")
    if own.get('thread_budget', 0) < -1:
        raise ArgumentError(f"{source}: {process}: parameter 'thread_budget' is "
                            f"{own['thread_budget']}: use -1 (no cap), 0 (automatic) or more")
    cache: dict = {}
    for n in names:
        values = section(n)
        _typed(f'{source}: {n}', values, PARAMETERS)
        _perception(f'{source}: {n}', {**{k: d for k, (d, _) in PARAMETERS.items()}, **values},
                    cache)


def check_arguments(args: Dict[str, str]) -> Dict:
    """Check the launch file's own arguments; return the typed values of the supervision ones."""
    if args.get('camera_topic'):
        topic("launch argument 'camera_topic'", args['camera_topic'])
    for t in [t.strip() for t in args.get('cameras', '').split(',') if t.strip()]:
        topic("launch argument 'cameras'", t)
    namespace("launch argument 'namespace'", args.get('namespace', ''))
    for n in [n for n in args.get('nodes', '').split(',') if n.strip()]:
        node_name("launch argument 'nodes':", n.strip())
    if args.get('params_file') and not pathlib.Path(args['params_file']).is_file():
        raise ArgumentError(f"launch argument 'params_file' {args['params_file']!r}: "
                            f'no such file')
    out: Dict[str, object] = {k: boolean(f"launch argument '{k}'", args[k])
                              for k in ('autostart', 'keep_partial', 'respawn') if k in args}
    if 'respawn_delay' in args:
        out['respawn_delay'] = number("launch argument 'respawn_delay'", args['respawn_delay'],
                                      0.0)
    if 'respawn_max' in args:
        out['respawn_max'] = number("launch argument 'respawn_max'", args['respawn_max'], 1,
                                    int)
    return out
