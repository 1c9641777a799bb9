# Copyright 2026 edge_infer contributors. Apache-2.0.
"""package.xml of both packages: format 3, and every import is a declared dependency."""

import pathlib
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _deps(pkg: str) -> set:
    tree = ET.parse(ROOT / pkg / 'package.xml').getroot()
    assert tree.tag == 'package' and tree.get('format') == '3'
    assert tree.findtext('name') == pkg
    assert tree.findtext('license') and tree.findtext('version')
    return {e.text for e in tree if e.tag.endswith('depend')}


def test_edge_infer_declares_the_ros_packages_it_imports():
    deps = _deps('edge_infer')
    imported = set()
    for py in (ROOT / 'edge_infer' / 'edge_infer').rglob('*.py'):
        for line in py.read_text().splitlines():
            words = line.split()
            if len(words) > 1 and words[0] in ('import', 'from'):
                top = words[1].split('.')[0]
                if top.endswith('_msgs') or top in ('rclpy', 'launch', 'launch_ros'):
                    imported.add(top)
    assert imported <= deps, f'imported but not declared: {imported - deps}'
    assert (ROOT / 'edge_infer' / 'resource' / 'edge_infer').is_file()


def test_edge_infer_msgs_is_an_interface_package():
    deps = _deps('edge_infer_msgs')
    assert {'ament_cmake', 'rosidl_default_generators', 'rosidl_default_runtime'} <= deps
    cmake = (ROOT / 'edge_infer_msgs' / 'CMakeLists.txt').read_text()
    for msg in (ROOT / 'edge_infer_msgs' / 'msg').glob('*.msg'):
        assert f'msg/{msg.name}' in cmake, f'{msg.name} not generated'
