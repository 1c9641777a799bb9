# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The remote servers' settings: the node's parameters over config/backends.yaml (no server)."""

from edge_infer import graph
from edge_infer.backends.candidates import remote_candidates
from edge_infer.backends.config import DEFAULTS
from edge_infer.backends.remote_config import apply_remote, check_remote, from_argument, KEYS
from edge_infer.nodes.perception_params import check, PARAMETERS
import pytest


def _node(**over):
    values = {k: v for k, (v, _) in PARAMETERS.items()}
    values['model'] = 'nanodet'
    values.update(over)
    return values


def test_one_name_per_idea_in_the_file_and_the_node():
    for key in KEYS:
        assert key in DEFAULTS and key in PARAMETERS, key


def test_the_defaults_pass_and_change_nothing():
    check(_node())
    cfg = dict(DEFAULTS)
    assert apply_remote(cfg, _node()) == []
    assert cfg == DEFAULTS


@pytest.mark.parametrize('over, says', [
    ({'remote_servers': ['http://box:8000']}, 'grpc://host:port'),
    ({'remote_timeout_ms': -1.0}, 'remote_timeout_ms'),
    ({'remote_retry_s': 0.0}, "'remote_retry_s' is 0.0"),
    ({'remote_tls_ca': '/nonexistent/ca.pem'}, 'no such file'),
])
def test_a_bad_remote_parameter_is_named(over, says):
    with pytest.raises(ValueError, match=says):
        check(_node(**over))


def test_the_retry_reaches_the_run_time_choice():
    assert check(_node(remote_retry_s=5.0)).remote_retry_s == 5.0
    assert check(_node()).remote_retry_s == 30.0


def test_a_client_certificate_needs_its_key(tmp_path):
    cert = tmp_path / 'c.pem'
    cert.write_text('x')
    with pytest.raises(ValueError, match='go together'):
        check_remote({'remote_tls_cert': str(cert), 'remote_tls_key': ''})


def test_the_node_adds_servers_and_replaces_the_rest(tmp_path):
    ca = tmp_path / 'ca.pem'
    ca.write_text('x')
    cfg = dict(DEFAULTS, remote_servers=['grpc://a:8001'])
    changed = apply_remote(cfg, _node(remote_servers=['', 'grpc://a:8001', 'grpc://b:9001'],
                                      remote_timeout_ms=80.0, remote_tls_ca=str(ca),
                                      remote_token='s3cret'))
    assert cfg['remote_servers'] == ['grpc://a:8001', 'grpc://b:9001']
    assert cfg['remote_timeout_ms'] == 80.0 and cfg['remote_tls_ca'] == str(ca)
    assert not any('s3cret' in c for c in changed)      # a token is never logged
    cands = remote_candidates(cfg, 'nanodet', tmp_path / 'nanodet.onnx')
    assert [c.name for c in cands] == ['triton/a/nanodet', 'triton/b:9001/nanodet']
    assert all(c.use_tls and c.timeout_ms == 80.0 for c in cands)
    assert cands[0].headers['authorization'] == 'Bearer s3cret'
    assert 'TLS' in cands[0].tensor_passing


def test_no_tls_on_a_network_address_is_said():
    cands = remote_candidates(dict(DEFAULTS, remote_servers=['grpc://10.0.0.5:8001']),
                              'nanodet', None)
    assert 'no TLS on a non-loopback address' in cands[0].tensor_passing
    assert cands[0].headers is None


def test_the_launch_argument_sets_every_perception_node():
    assert from_argument('-') is None and from_argument('') == ['']
    servers = from_argument('grpc://gpu:8001, grpc://b:9001')
    assert servers == ['grpc://gpu:8001', 'grpc://b:9001']
    (p,) = graph.plan(node_params={'remote_servers': servers})
    assert p.params['detector']['ros__parameters']['remote_servers'] == servers
    with pytest.raises(graph.GraphError, match='grpc://host:port'):
        graph.plan(node_params={'remote_servers': ['http://gpu:8000']})
