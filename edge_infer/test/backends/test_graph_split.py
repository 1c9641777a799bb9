# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A graph over two processes (config/graph_two_processes.yaml): what each process is given."""

from edge_infer import graph, paths
from edge_infer.validate import check_params


def test_two_processes_share_the_nodes_and_the_second_is_renamed():
    plans = graph.plan(graph=graph.load_graph(paths.config_dir() / 'graph_two_processes.yaml'))
    assert [p.name for p in plans] == ['perception_container', 'perception_container_b']
    first, second = plans
    assert first.lifecycle_nodes == ['telemetry', 'detector', 'segmenter']
    assert second.lifecycle_nodes == ['classifier', 'pose']     # no second telemetry node
    # the executable names its node perception_container: the second is renamed,
    # so that it reads its own section of the params file
    assert 'perception_container:__node' not in first.remappings
    assert second.remappings['perception_container:__node'] == 'perception_container_b'
    own = second.params['perception_container_b']['ros__parameters']
    assert own['nodes'] == ['classifier', 'pose'] and own['telemetry'] == ''
    # the rest of its section is the first container's
    base = first.params['perception_container']['ros__parameters']
    assert own['frame_order'] == base['frame_order']
    for p in plans:
        check_params(p.params, p.name, 'graph_two_processes.yaml')


def test_a_camera_remap_reaches_both_processes():
    plans = graph.plan(camera_topic='/front/image_raw', graph=graph.load_graph(
        paths.config_dir() / 'graph_two_processes.yaml'))
    for p in plans:
        assert p.remappings['/camera/image_raw'] == '/front/image_raw'
