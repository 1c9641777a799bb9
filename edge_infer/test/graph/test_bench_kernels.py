# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The kernels of bench experiments 1 (SGEMM) and 3 (conv methods) compute what they claim."""

import pathlib
import sys

from edge_infer import paths
import numpy as np
import pytest

BENCH = pathlib.Path(__file__).resolve().parents[3] / 'bench'
HAVE_BENCH = (BENCH / 'papers' / 'exp1_sgemm.py').is_file()
# A mark, not a module-level skip (that ends a whole folder's collection under
# launch_testing's pytest plugin).
pytestmark = pytest.mark.skipif(
    not HAVE_BENCH, reason=f'no bench/ folder beside the package ({BENCH}): installed package')
if HAVE_BENCH:
    sys.path[:0] = [str(BENCH), str(BENCH / 'papers')]     # benchlib; the experiments
    import exp1_sgemm as e1  # noqa: I100
    import exp3_conv_methods as e3  # noqa: I100


def _ab(n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, n)).astype(np.float32),
            rng.standard_normal((n, n)).astype(np.float32))


def test_gflops_formula():
    # 2 n^3 flops: n = 1000 in 1 s is 2 GFLOP/s; n = 512 in 1 ms is 268.435456 GFLOP/s
    assert e1.gflops(1000, 1000.0) == pytest.approx(2.0)
    assert e1.gflops(512, 1.0) == pytest.approx(2 * 512 ** 3 / 1e-3 / 1e9)
    assert e1.gflops(512, 2.0) == pytest.approx(e1.gflops(512, 1.0) / 2)


@pytest.mark.parametrize('threads', [1, 2])
def test_ort_matmul_equals_numpy(threads):
    lib = e1.OrtMatMul(threads)
    ok, why = lib.probe()
    assert ok, why
    a, b = _ab(48)
    call = lib.bind(a, b)
    call()
    np.testing.assert_allclose(lib.fetch(), a @ b, rtol=0, atol=1e-4)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    row = e1.measure(lib, a, b, ref, repeats=2, min_seconds=0)
    assert row['status'] == 'ok' and row['rel_err'] < e1.TOLERANCE
    assert row['gflops_median'] == pytest.approx(e1.gflops(48, row['ms_median']))
    assert row['gflops_min'] <= row['gflops_median'] <= row['gflops_max']


def test_numpy_blas_threads_and_product():
    blas = e1.OpenBlas()
    before = blas.threads()
    lib = e1.NumpyBlas(1, blas)
    ok, why = lib.probe()
    if not blas.ok:     # numpy without OpenBLAS: the 1-thread row must say why
        assert not ok and why
        return
    a, b = _ab(40)
    try:
        call = lib.bind(a, b)
        assert blas.threads() == 1
        call()
        np.testing.assert_allclose(lib.fetch(), a @ b, rtol=0, atol=1e-4)
    finally:
        blas.set_threads(before)
    assert blas.threads() == before


def test_wrong_product_is_marked_wrong():
    class Broken(e1.NumpyBlas):
        def fetch(self):
            return self.c + 1.0
    a, b = _ab(32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    row = e1.measure(Broken(None, e1.OpenBlas()), a, b, ref, repeats=1, min_seconds=0)
    assert row['status'] == 'wrong'
    assert e1.winners([row]) == []


def test_unavailable_libraries_are_reported_with_a_reason(monkeypatch):
    import onnxruntime as ort
    monkeypatch.setitem(sys.modules, 'pyopencl', None)     # import raises ImportError
    monkeypatch.setitem(sys.modules, 'cupy', None)
    monkeypatch.setattr(ort, 'get_available_providers', lambda: ['CPUExecutionProvider'])
    for lib, word in ((e1.ClBlast(), 'pyopencl'), (e1.Cupy(), 'cupy'),
                      (e1.OrtMatMul(device='cuda'), 'CUDAExecutionProvider')):
        ok, why = lib.probe()
        assert not ok and word in why
        row = e1.unavailable_row(lib, why)
        assert row['status'] == 'unavailable' and row['reason'] == why
        assert 'gflops_median' not in row       # no figure for a library that did not run


def test_cpu_bound_from_cpuinfo_text():
    block = ('processor\t: {p}\nphysical id\t: 0\ncore id\t\t: {c}\ncpu MHz\t\t: 2000.000\n'
             'flags\t\t: fpu sse avx avx2 fma\n')
    text = '\n'.join(block.format(p=p, c=c) for p, c in ((0, 0), (1, 0), (2, 1), (3, 1)))
    b = e1.cpu_bound(text, [0, 1, 2, 3])      # 2 cores with 2 hyperthreads each
    assert b['cores'] == 2 and b['lanes'] == 8 and b['fma']
    assert b['gflops_per_pipe'] == pytest.approx(2 * 2.0 * 8 * 2)
    arm = 'processor\t: 0\nFeatures\t: fp asimd evtstrm\n\nprocessor\t: 1\nFeatures\t: fp asimd\n'
    assert 'reason' in e1.cpu_bound(arm, [0, 1])                # no clock anywhere
    b = e1.cpu_bound(arm, [0, 1], {0: 1500000, 1: 1500000})     # cpufreq kHz
    assert b['cores'] == 2 and b['gflops_per_pipe'] == pytest.approx(2 * 1.5 * 4 * 2)


def test_winner_ranges_group_consecutive_sizes():
    rows = []
    for n, g in ((64, (10, 5)), (128, (20, 10)), (256, (15, 30))):
        for label, v in zip(('a', 'b'), g):
            rows.append({'label': label, 'n': n, 'status': 'ok', 'gflops_median': v})
    win = e1.winners(rows)
    assert [(w[0], w[1]) for w in win] == [(64, 'a'), (128, 'a'), (256, 'b')]
    assert e1.winner_ranges(win) == ['a at n=64-128 (x2.00 the runner-up)',
                                     'b at n=256 (x2.00 the runner-up)']


@pytest.fixture(scope='module')
def mobilenet_layers():
    sess, layers = e3.load_layers(paths.models_dir() / 'mobilenet_v2.onnx')
    e3.bind_all(layers)
    yield layers
    sess.close()


@pytest.mark.parametrize('kind', ['dense', 'depthwise', 'pointwise'])
def test_each_conv_method_matches_ort_on_a_mobilenet_layer(mobilenet_layers, kind):
    layer = next(la for la in mobilenet_layers if la.native_kind == kind)
    x = layer.random_input(np.random.default_rng(1))
    diffs = e3.check_layer(layer, x)
    assert set(diffs) == set(layer.candidates)
    assert set(e3.METHODS) <= set(diffs)
    assert (e3.NATIVE in diffs) == (kind != 'dense')
    assert max(diffs.values()) <= e3.TOLERANCE, diffs
    # the methods really differ in how they run: im2col and direct lower the layer
    layer.use('im2col')
    assert layer.conv.kind == e3.LOWERED.get(kind, kind)
    layer.use(e3.NATIVE if kind != 'dense' else 'direct')
    assert layer.conv.kind == kind


def test_a_wrong_method_cannot_win(mobilenet_layers):
    layer = next(la for la in mobilenet_layers if la.native_kind == 'dense')
    x = layer.random_input(np.random.default_rng(2))
    c = layer.conv
    ref = e3.ort_session(layer.onnx_model(), threads=1)     # from the weights as loaded
    saved = c.wg
    try:
        c.wg = saved * 1.5      # corrupts im2col only (im2row and direct use other copies)
        diffs = e3.check_layer(layer, x, ref)
    finally:
        c.wg = saved
    assert diffs['im2col'] > e3.TOLERANCE
    assert diffs['direct'] <= e3.TOLERANCE and diffs['im2row'] <= e3.TOLERANCE
    ok = {m: d <= e3.TOLERANCE for m, d in diffs.items()}
    assert e3.best_method({'im2col': 0.1, 'im2row': 2.0, 'direct': 5.0}, ok) == 'im2row'
    assert e3.best_method({'im2col': 0.1}, {'im2col': False}) is None


def test_distinct_layers_count_every_layer(mobilenet_layers):
    uniq = e3.distinct(mobilenet_layers)
    assert sum(la.count for la in uniq) == len(mobilenet_layers)
    assert len({la.conv.key() for la in uniq}) == len(uniq)
