# Copyright 2026 edge_infer contributors. Apache-2.0.
"""XML lint: every XML file of both packages parses; package.xml is valid format 3.

Three checks, as a ROS package's ``test_xmllint`` makes them:

- every ``*.xml`` file of ``edge_infer`` and ``edge_infer_msgs`` (package
  manifests, the Fast DDS profile in ``config/``, launch XML if any) is
  well-formed;
- both package.xml files are valid ROS package format 3 as catkin_pkg (what
  colcon, rosdep and bloom read them with) parses them, with no warnings;
- ``ament_xmllint`` (xmllint against the schema each file names) where it is
  installed, as on a robot; without it that test is skipped with the reason.
"""

import pathlib
import xml.dom.minidom

from catkin_pkg.package import parse_package
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
PACKAGES = [ROOT / 'edge_infer', ROOT / 'edge_infer_msgs']
SKIP_DIRS = {'build', 'install', 'log', '__pycache__'}


def xml_files() -> list:
    """Return every XML file of both packages (build outputs and hidden folders left out)."""
    found = []
    for pkg in PACKAGES:
        for path in sorted(pkg.rglob('*.xml')):
            parts = path.relative_to(pkg).parts[:-1]
            if not any(p in SKIP_DIRS or p.startswith('.') for p in parts):
                found.append(path)
    return found


def test_the_xml_files_are_found():
    names = {str(p.relative_to(ROOT)) for p in xml_files()}
    # the walk must see the files this suite is about, or the checks below prove nothing
    assert {'edge_infer/package.xml', 'edge_infer_msgs/package.xml',
            'edge_infer/config/fastdds_large_frames.xml',
            'edge_infer/config/fastdds_container.xml'} <= names, names


@pytest.mark.parametrize('path', xml_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_xml_is_well_formed(path):
    xml.dom.minidom.parse(str(path))     # raises ExpatError with the line and column


@pytest.mark.parametrize('pkg', PACKAGES, ids=lambda p: p.name)
def test_package_xml_is_valid_format_3(pkg):
    warnings = []
    package = parse_package(str(pkg / 'package.xml'), warnings=warnings)
    assert warnings == []
    assert package.package_format == 3
    assert package.name == pkg.name
    assert package.licenses == ['Apache-2.0']
    assert package.maintainers and all(m.email for m in package.maintainers)


def test_both_packages_name_the_same_maintainers():
    people = [{(m.name, m.email) for m in parse_package(str(pkg / 'package.xml')).maintainers}
              for pkg in PACKAGES]
    assert people[0] == people[1]


@pytest.mark.linter
@pytest.mark.xmllint
def test_xmllint():
    try:
        from ament_xmllint.main import main
    except ImportError as e:
        pytest.skip(f'ament_xmllint is not installed ({e}); a ROS 2 install has it')
    rc = main(argv=[str(p) for p in xml_files()])
    assert rc == 0, f'ament_xmllint found errors (rc {rc!r}); see the output above'
