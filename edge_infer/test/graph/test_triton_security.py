# Copyright 2026 edge_infer contributors. Apache-2.0.
"""gRPC over TLS and a token, against the REAL bundled server; certificates made here (openssl).

A CA, a server certificate for 127.0.0.1 and a client certificate, made by
the ``openssl`` command in a temporary folder. The server
(``edge_infer serve``'s, ``--tls-cert/--tls-key``, ``--token-file``) answers a
robot that trusts the CA and sends the token; it refuses one without TLS,
without the token or with another, each with its reason. With
``--tls-client-ca`` it wants the robot's certificate too (mutual TLS).
"""

import pathlib
import shutil
import subprocess

from edge_infer import paths
from edge_infer.backends.libs.triton import TritonBackend
from edge_infer.core.registry import load_models
from edge_infer.testing import triton_server
from edge_infer.tools.triton.serve import exposure
import numpy as np
import pytest

WHY = triton_server.skip_reason() or ('' if shutil.which('openssl') else 'no openssl command')
SERVED = 'onnxruntime/cpu/t1'
TOKEN = 'robot-fleet-7f3a'


def _openssl(*args: str, cwd: pathlib.Path) -> None:
    subprocess.run(['openssl', *args], cwd=cwd, check=True, capture_output=True)


def _signed(d: pathlib.Path, name: str, subject: str, ext: str) -> None:
    """Make ``name``.key and ``name``.pem, signed by the CA in ``d``."""
    (d / f'{name}.ext').write_text(ext)
    _openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f'{name}.key', '-subj',
             subject, '-out', f'{name}.csr', cwd=d)
    _openssl('x509', '-req', '-in', f'{name}.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key',
             '-CAcreateserial', '-days', '2', '-out', f'{name}.pem', '-extfile', f'{name}.ext',
             cwd=d)


@pytest.fixture(scope='module')
def certs(tmp_path_factory):
    if WHY:
        pytest.skip(WHY)
    d = tmp_path_factory.mktemp('certs')
    _openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out',
             'ca.pem', '-days', '2', '-subj', '/CN=edge_infer test CA', cwd=d)
    _signed(d, 'server', '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1,DNS:localhost\n'
            'extendedKeyUsage=serverAuth\n')
    _signed(d, 'client', '/CN=robot1', 'extendedKeyUsage=clientAuth\n')
    (d / 'token').write_text(TOKEN + '\n')
    return d


@pytest.fixture(scope='module')
def model_path():
    path = paths.models_dir() / load_models()['nanodet'].file
    if not path.is_file():
        pytest.skip(f'{path} missing: edge_infer prepare')
    return path


@pytest.fixture(scope='module')
def server(certs, model_path, tmp_path_factory):
    with triton_server.served(tmp_path_factory.mktemp('tls'), {'nanodet': SERVED},
                              tls_cert=str(certs / 'server.pem'),
                              tls_key=str(certs / 'server.key'),
                              token=(certs / 'token').read_text().strip()) as s:
        yield s


def _robot(url, path, **security):
    return TritonBackend(url, 'nanodet', path, shm=False, security=security)


def test_tls_and_the_token_serve_frames(server, certs, model_path):
    robot = _robot(server.url, model_path, remote_tls_ca=str(certs / 'ca.pem'),
                   remote_token=TOKEN)
    ok, why = robot.available()
    assert ok and 'TLS' in why, why
    sess = robot.open_session(model_path)
    try:
        out = sess.run(np.random.default_rng(1).integers(0, 256, (1, 416, 416, 3), np.uint8))
        assert out and all(np.isfinite(o).all() for o in out)
    finally:
        sess.close()


@pytest.mark.parametrize('security, says', [
    ({'remote_token': TOKEN}, 'down or unreachable'),       # no TLS: no handshake
    ({'remote_tls_ca': 'ca.pem'}, 'wants a token (remote_token), none set'),
    ({'remote_tls_ca': 'ca.pem', 'remote_token': 'guess'}, 'this one is not it'),
])
def test_a_robot_without_tls_or_the_token_is_refused(server, certs, model_path,
                                                     security, says):
    security = {k: str(certs / v) if k == 'remote_tls_ca' else v for k, v in security.items()}
    ok, why = _robot(server.url, model_path, **security).available()
    assert not ok and says in why, why


def test_mutual_tls_wants_the_robots_certificate(certs, model_path, tmp_path):
    with triton_server.served(tmp_path, {'nanodet': SERVED}, tls_cert=str(certs / 'server.pem'),
                              tls_key=str(certs / 'server.key'),
                              tls_client_ca=str(certs / 'ca.pem')) as s:
        ca = str(certs / 'ca.pem')
        ok, why = _robot(s.url, model_path, remote_tls_ca=ca).available()
        assert not ok and 'down or unreachable' in why, why
        ok, why = _robot(s.url, model_path, remote_tls_ca=ca,
                         remote_tls_cert=str(certs / 'client.pem'),
                         remote_tls_key=str(certs / 'client.key')).available()
        assert ok, why


def test_serve_warns_once_where_the_network_can_read_it():
    assert exposure('127.0.0.1', tls=False, token=False) == ''
    assert exposure('0.0.0.0', tls=True, token=False) == ''
    assert 'without TLS' in exposure('0.0.0.0', tls=False, token=False)
    assert 'the token too' in exposure('192.0.2.2', tls=False, token=True)
