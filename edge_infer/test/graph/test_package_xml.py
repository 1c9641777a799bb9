# Copyright 2026 edge_infer contributors. Apache-2.0.
"""package.xml of both packages: format 3, and every import is a declared dependency.

Every module imported by the ament package (its Python package, launch files,
setup.py and tests; found with ``ast``, including imports inside functions,
``try`` blocks and ``pytest.importorskip``) must be one of:

- the standard library, or a module of this repository;
- a ROS package declared in package.xml under its own name (rclpy, *_msgs, ...);
- a Python module with a rosdep key declared in package.xml (ROSDEP_KEYS);
- a Python module listed in pip-requirements.txt (no rosdep key: the README's
  robot path installs that list into a virtual environment).

Imports of the package itself and its launch files need an exec dependency,
the tests' a test (or exec) dependency, setup.py's a build one.
"""

import ast
import pathlib
import re
import sys
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parents[3]
PKG = ROOT / 'edge_infer'

# Python modules with a rosdep key (rosdistro rosdep/python.yaml): import name -> key.
ROSDEP_KEYS = {
    'catkin_pkg': 'python3-catkin-pkg',
    'cv2': 'python3-opencv',
    'hypothesis': 'python3-hypothesis',
    'matplotlib': 'python3-matplotlib',
    'numpy': 'python3-numpy',
    'PIL': 'python3-pil',
    'psutil': 'python3-psutil',
    'pytest': 'python3-pytest',
    'setuptools': 'python3-setuptools',
    'yaml': 'python3-yaml',
}
# Packages the tests run as commands rather than import.
TEST_TOOLS = {'ros2bag', 'rosbag2_storage_mcap'}   # `ros2 bag play` of an mcap bag
SKIP_DIRS = {'build', 'install', 'log', '__pycache__'}
EXEC = {'depend', 'exec_depend'}
BUILD = {'depend', 'build_depend', 'buildtool_depend'}
# Tests run where the package was built (colcon test): build dependencies count for them.
KINDS = {'run': EXEC, 'test': EXEC | BUILD | {'test_depend'}, 'build': BUILD}


def _deps_by_kind(pkg: str) -> dict:
    tree = ET.parse(ROOT / pkg / 'package.xml').getroot()
    assert tree.tag == 'package' and tree.get('format') == '3'
    assert tree.findtext('name') == pkg
    assert tree.findtext('license') and tree.findtext('version')
    out = {}
    for e in tree:
        if e.tag.endswith('depend'):
            out.setdefault(e.text.strip(), set()).add(e.tag)
    return out


def _deps(pkg: str) -> set:
    return set(_deps_by_kind(pkg))


def pip_modules(path: pathlib.Path = PKG / 'pip-requirements.txt') -> dict:
    """Return {import name: distribution} of pip-requirements.txt (optional lines included)."""
    out = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        optional = re.match(r'#\s*optional:\s*(.*)', line)
        if optional:
            line = optional.group(1)
        elif not line or line.startswith('#'):
            continue
        dist = re.match(r'[A-Za-z0-9][A-Za-z0-9._-]*', line).group(0)
        named = re.search(r'\(import ([A-Za-z_][A-Za-z0-9_]*)\)', line)
        out[named.group(1) if named else dist.lower().replace('-', '_')] = dist
    return out


def _walk(top: pathlib.Path):
    for path in sorted(top.rglob('*.py')):
        rel = path.relative_to(top).parts
        if not any(p.startswith('.') or p in SKIP_DIRS for p in rel):
            yield path


def local_modules() -> set:
    """Return the top-level names this repository provides on the tests' import path.

    The package, and the modules of the folders its tests put on ``sys.path``
    (test/ and its rooms, bench/ and its rooms, tools/): a module deeper down
    (``backends/libs/openvino.py``) is not importable as a top-level name, so it does not
    hide a library.
    """
    names = set()
    rooms = [d for d in (PKG / 'test').iterdir() if d.is_dir() and any(d.glob('test_*.py'))]
    bench = [ROOT / 'bench', *(d for d in (ROOT / 'bench').glob('*') if d.is_dir())]
    for folder in (PKG, PKG / 'test', *rooms, *bench, ROOT / 'tools'):
        for path in folder.glob('*.py'):
            names.add(path.stem)
        names.update(d.name for d in folder.iterdir() if (d / '__init__.py').is_file())
    return names


def imported_modules(path: pathlib.Path) -> set:
    """Return the top-level names of every absolute import in ``path``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Call) and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, 'id', '')
            if name in ('importorskip', 'import_module'):
                found.add(node.args[0].value)
    return {m.split('.')[0] for m in found}


def kind_of(path: pathlib.Path) -> str:
    """Return 'test', 'build' (setup.py) or 'run' for a file of the package."""
    rel = path.relative_to(PKG).parts
    if rel[0] == 'test':
        return 'test'
    return 'build' if rel == ('setup.py',) else 'run'


def undeclared(imports: dict, deps_by_kind: dict, pip: dict, local: set) -> list:
    """Return one line per import package.xml does not cover.

    ``imports``: {(file label, kind): top-level module names}.
    """
    tags = {'run': 'exec_depend', 'test': 'test_depend', 'build': 'buildtool_depend'}
    problems = []
    for (label, kind), modules in sorted(imports.items()):
        for mod in sorted(modules):
            if mod in sys.stdlib_module_names or mod in local or mod in pip:
                continue
            key = ROSDEP_KEYS.get(mod, mod)
            if deps_by_kind.get(key, set()) & KINDS[kind]:
                continue
            hint = '' if mod in ROSDEP_KEYS else (
                ' (a ROS package; a Python module instead needs its rosdep key in '
                'ROSDEP_KEYS or a line in pip-requirements.txt)')
            problems.append(f'{label}: imports {mod}: declare <{tags[kind]}>{key}'
                            f'</{tags[kind]}>{hint}')
    return problems


def test_edge_infer_declares_everything_it_imports():
    deps = _deps_by_kind('edge_infer')
    files = list(_walk(PKG))
    assert any(f.parts[-2:] == ('launch', 'perception.launch.py') for f in files)
    imports = {(str(f.relative_to(ROOT)), kind_of(f)): imported_modules(f) for f in files}
    problems = undeclared(imports, deps, pip_modules(), local_modules())
    assert not problems, 'imported but not declared in package.xml:\n' + '\n'.join(problems)
    missing_tools = {t for t in TEST_TOOLS if 'test_depend' not in deps.get(t, set())}
    assert not missing_tools, f'tests run these packages, declare them: {missing_tools}'
    assert (PKG / 'resource' / 'edge_infer').is_file()


def test_the_import_check_finds_what_is_missing(tmp_path):
    """The check itself: nested, optional and importorskip imports all count, by kind."""
    req = tmp_path / 'pip-requirements.txt'
    req.write_text('onnx  # comment\n# a comment line\n'
                   '# optional: nvidia-ml-py  (import pynvml) NVML\n')
    assert pip_modules(req) == {'onnx': 'onnx', 'pynvml': 'nvidia-ml-py'}
    src = tmp_path / 'node.py'
    src.write_text('def f():\n    try:\n        import tflite_runtime.interpreter\n'
                   '    except ImportError:\n        pass\n    from rosbag2_py import X\n'
                   '    import numpy, onnx, pynvml\n    from . import sibling\n')
    test = tmp_path / 'test_x.py'
    test.write_text("import pytest\nlaunch_pytest = pytest.importorskip('launch_pytest')\n"
                    'import cv2\nimport numpy\nimport os\nfrom edge_infer import graph\n')
    assert imported_modules(src) == {'tflite_runtime', 'rosbag2_py', 'numpy', 'onnx', 'pynvml'}
    assert imported_modules(test) == {'pytest', 'launch_pytest', 'cv2', 'numpy', 'os',
                                      'edge_infer'}
    deps = {'python3-pytest': {'test_depend'}, 'python3-numpy': {'exec_depend'},
            'python3-opencv': {'test_depend'}}
    problems = undeclared({('node.py', 'run'): imported_modules(src),
                           ('test_x.py', 'test'): imported_modules(test),
                           ('lib.py', 'run'): {'cv2'}},
                          deps, pip_modules(req), {'edge_infer'})
    assert problems == [
        'lib.py: imports cv2: declare <exec_depend>python3-opencv</exec_depend>',
        'node.py: imports rosbag2_py: declare <exec_depend>rosbag2_py</exec_depend> (a ROS '
        'package; a Python module instead needs its rosdep key in ROSDEP_KEYS or a line in '
        'pip-requirements.txt)',
        'node.py: imports tflite_runtime: declare <exec_depend>tflite_runtime</exec_depend> '
        '(a ROS package; a Python module instead needs its rosdep key in ROSDEP_KEYS or a '
        'line in pip-requirements.txt)',
        'test_x.py: imports launch_pytest: declare <test_depend>launch_pytest</test_depend> '
        '(a ROS package; a Python module instead needs its rosdep key in ROSDEP_KEYS or a '
        'line in pip-requirements.txt)']


def test_setup_py_installs_every_config_and_launch_file():
    """Every file of config/ and launch/ is in setup.py's data_files (what colcon installs)."""
    import json
    import subprocess
    # setup.py as colcon runs it (its own process, in the package folder), setup() recorded
    code = ('import json, runpy, setuptools\n'
            'setuptools.setup = lambda **kw: print(json.dumps(kw["data_files"]))\n'
            'runpy.run_path("setup.py")\n')
    res = subprocess.run([sys.executable, '-c', code], cwd=PKG, capture_output=True, text=True,
                         timeout=60, check=True)
    data_files = json.loads(res.stdout.strip().splitlines()[-1])
    installed = {(dest, src) for dest, files in data_files for src in files}
    expected = set()
    for folder in ('config', 'launch'):
        for path in (PKG / folder).rglob('*'):
            rel = path.relative_to(PKG)
            if path.is_file() and '__pycache__' not in rel.parts:
                expected.add((f'share/edge_infer/{rel.parent.as_posix()}', rel.as_posix()))
    assert ('share/edge_infer/config/executor_profiles',
            'config/executor_profiles/jetson_xavier_example.yaml') in expected
    assert expected - installed == set(), 'not installed by setup.py'
    assert ('share/edge_infer', 'package.xml') in installed
    assert ('share/ament_index/resource_index/packages', 'resource/edge_infer') in installed


def test_edge_infer_msgs_is_an_interface_package():
    deps = _deps('edge_infer_msgs')
    assert {'ament_cmake', 'rosidl_default_generators', 'rosidl_default_runtime'} <= deps
    cmake = (ROOT / 'edge_infer_msgs' / 'CMakeLists.txt').read_text()
    for msg in (ROOT / 'edge_infer_msgs' / 'msg').glob('*.msg'):
        assert f'msg/{msg.name}' in cmake, f'{msg.name} not generated'
