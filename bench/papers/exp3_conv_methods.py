# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Experiment 3: conv methods, direct vs im2col+GEMM vs im2row+GEMM, per layer and whole model.

    ./run.sh exec python bench/papers/exp3_conv_methods.py [--models nanodet mobilenet_v2]
        [--layer-repeats 7] [--model-repeats 5] [--blas-threads N] [--quick]

Reproduces Park & Chung n.d., Table 1: the run time of a CNN with every
conv layer computed by the direct 6-loop method (MCMK), by im2col + GEMM and
by im2row + GEMM (OpenBLAS), and the speed-up of the best over direct.

The conv kernels are edge_infer's numpy BLAS backend
(edge_infer.backends.libs.blas): ``im2col`` (patch matrix [C k k, Ho Wo], one
GEMM), ``im2row`` (patch rows [Ho Wo, C k k], GEMM, transpose back) and
``direct`` (no patch matrix and no BLAS: per kernel offset, an einsum over
channels of a strided view of the input, accumulated). The backend itself
runs 1x1 convs as one plain GEMM and depthwise convs as per-offset
multiply-adds whatever the method; to compare the methods on every layer, as
Darknet does in the seed, this experiment lowers those layers too (a 1x1 conv
as a dense conv, a depthwise conv as a grouped conv with C groups) and times
the backend's own kernel for them beside, as ``native``.

Per model (random float32 input of the model's shape, seed 0):
1. per conv layer of a distinct shape (layers alike run alike; the count is
   given): each method once, checked against a one-node ONNX Runtime model of
   the same conv (max |diff| relative to max(1, max |ref|); over ``TOLERANCE``
   marks the method wrong and out of the race), then ``--layer-repeats`` timed
   calls each, median;
2. whole model, all conv layers by one method (direct, im2col, im2row), the
   per-layer best of step 1 (``tuned``), the backend as shipped with its own
   load-time tuning (``backend auto``) and ONNX Runtime CPU (all cores) as the
   reference: one warm-up run each, checked against ONNX Runtime's outputs,
   then ``--model-repeats`` rounds, each running every mode once in rotating
   order; median, min and max over the rounds.
Speed-up = direct time / method time, from the same run.
"""

import argparse
import pathlib
import sys
import time
from typing import Dict, List, Optional

import benchlib
from edge_infer import paths
from edge_infer.backends.libs.blas import BlasBackend
from exp1_sgemm import blas_name, loadavg, OpenBlas
import numpy as np

METHODS = ('direct', 'im2col', 'im2row')
NATIVE = 'native'
LOWERED = {'pointwise': 'dense', 'depthwise': 'grouped'}
TOLERANCE = 1e-4
MODELS = ('nanodet', 'mobilenet_v2')


class Layer:
    """One conv layer of a loaded numpy-blas session, runnable by any method."""

    def __init__(self, conv, node: str):
        self.conv = conv
        self.node = node
        self.native_kind = conv.kind
        self.lowered_kind = LOWERED.get(conv.kind, conv.kind)
        self.count = 1
        self.nodes = [node]

    @property
    def candidates(self) -> List[str]:
        """Return the methods this layer can run: the three, plus native for 1x1/depthwise."""
        return list(METHODS) + ([NATIVE] if self.native_kind in LOWERED else [])

    def scratch_need(self) -> int:
        """Return the float32 scratch the layer needs for any method, lowered or native."""
        need = 0
        for kind in (self.native_kind, self.lowered_kind):
            self.conv.kind = kind
            need = max([need] + [self.conv.scratch_need(m) for m in METHODS])
        self.conv.kind = self.native_kind
        return need

    def use(self, method: str) -> None:
        """Make ``method`` the layer's method (what a whole-model run will use)."""
        if method == NATIVE:
            self.conv.kind = self.native_kind
        else:
            self.conv.kind = self.lowered_kind
            self.conv.method = method

    def run(self, x: np.ndarray, method: str) -> np.ndarray:
        """Convolve x with ``method``; return the layer's (reused) output buffer."""
        self.use(method)
        return self.conv(x)

    def random_input(self, rng: np.random.Generator) -> np.ndarray:
        """Return a random input of the layer's shape."""
        c = self.conv
        return rng.standard_normal((c.n, c.c, c.h, c.wd)).astype(np.float32)

    def onnx_model(self):
        """Return a one-node ONNX model of this conv (same weights, bias and attributes)."""
        from onnx import helper, numpy_helper, TensorProto
        c = self.conv
        w = c.wg.reshape(c.m, c.cg, c.kh, c.kw)
        inits = [numpy_helper.from_array(w, 'W')]
        ins = ['x', 'W']
        if c.bias is not None:
            inits.append(numpy_helper.from_array(c.bias.reshape(c.m), 'B'))
            ins.append('B')
        node = helper.make_node('Conv', ins, ['y'], strides=[c.sh, c.sw],
                                dilations=[c.dh, c.dw], pads=list(c.pads), group=c.group,
                                kernel_shape=[c.kh, c.kw])
        vi = helper.make_tensor_value_info
        graph = helper.make_graph([node], 'conv', [vi('x', TensorProto.FLOAT,
                                                      [c.n, c.c, c.h, c.wd])],
                                  [vi('y', TensorProto.FLOAT, None)], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])
        model.ir_version = 8
        return model


def ort_session(model, threads: Optional[int] = None):
    """Return an ONNX Runtime CPU session of a model (path or ModelProto)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    if threads:
        so.intra_op_num_threads = threads
    src = str(model) if isinstance(model, (str, pathlib.Path)) else model.SerializeToString()
    return ort.InferenceSession(src, so, providers=['CPUExecutionProvider'])


def rel_diff(out, ref) -> float:
    """Return max |out - ref| / max(1, max |ref|) (the blas backend tests' measure)."""
    out, ref = np.asarray(out), np.asarray(ref)
    if out.shape != ref.shape:
        return float('inf')
    return float(np.abs(out - ref).max() / max(1.0, float(np.abs(ref).max())))


def load_layers(path: pathlib.Path) -> tuple:
    """Load ``path`` with the numpy-blas backend; return (session, [Layer] in model order)."""
    sess = BlasBackend('im2col').open_session(path)      # no load-time tuning
    layers = [Layer(conv, entry['node']) for conv, entry in zip(sess._convs, sess.plan)]
    return sess, layers


def bind_all(layers: List[Layer]) -> np.ndarray:
    """Give every layer one shared scratch big enough for any method; return it."""
    scratch = np.empty(max((la.scratch_need() for la in layers), default=0), np.float32)
    for la in layers:
        la.conv.bind(scratch)
    return scratch


def distinct(layers: List[Layer]) -> List[Layer]:
    """Return the first layer of every distinct shape, with its count and node names."""
    seen: Dict[tuple, Layer] = {}
    for la in layers:
        k = la.conv.key()
        if k in seen:
            seen[k].count += 1
            seen[k].nodes.append(la.node)
        else:
            seen[k] = la
    return list(seen.values())


def best_method(ms: Dict[str, float], ok: Dict[str, bool]) -> Optional[str]:
    """Return the fastest method among those whose output matched ONNX Runtime."""
    good = {m: t for m, t in ms.items() if ok.get(m) and t == t}
    return min(good, key=good.get) if good else None


def check_layer(layer: Layer, x: np.ndarray, sess=None) -> Dict[str, float]:
    """Run every candidate method once; return its rel. diff from ONNX Runtime's conv."""
    sess = sess or ort_session(layer.onnx_model(), threads=1)
    ref = sess.run(None, {'x': x})[0]
    return {m: rel_diff(layer.run(x, m), ref) for m in layer.candidates}


def measure_layers(model: str, layers: List[Layer], repeats: int, res: benchlib.Results,
                   rng: np.random.Generator) -> List[dict]:
    """Check and time every distinct layer by every method; return one summary per layer."""
    out = []
    for i, la in enumerate(layers):
        x = la.random_input(rng)
        diffs = check_layer(la, x)
        ms, ok = {}, {}
        for m in la.candidates:
            ok[m] = diffs[m] <= TOLERANCE
            s = benchlib.summary(benchlib.time_calls(lambda m=m: la.run(x, m), repeats,
                                                     warmup=0))
            ms[m] = s['median']
            res.add(model=model, scope='layer', layer=la.node, layers=la.count,
                    kind=la.native_kind, shape=la.conv.describe(), method=m,
                    ms_median=s['median'], ms_min=s['min'], ms_max=s['max'], runs=s['n'],
                    rel_diff=diffs[m], status='ok' if ok[m] else 'wrong')
        best = best_method(ms, ok)
        summ = {'model': model, 'index': i, 'layer': la.node, 'layers': la.count,
                'kind': la.native_kind, 'shape': la.conv.describe(), 'best': best,
                'speedup': ms['direct'] / ms[best] if best else float('nan'),
                'max_rel_diff': max(diffs.values()),
                'wrong': [m for m in la.candidates if not ok[m]]}
        summ.update({f'{m}_ms': ms[m] for m in la.candidates})
        out.append(summ)
        print(f'{model} layer {i:2d} x{la.count} {la.native_kind:9s} {summ["shape"]:38s} '
              + ' '.join(f'{m} {ms[m]:8.3f}' for m in la.candidates)
              + f'  best {best} x{summ["speedup"]:.2f}  diff {summ["max_rel_diff"]:.1e}',
              flush=True)
    return out


class ModelMode:
    """A whole model run one way: a numpy-blas session with its conv methods set, or ORT."""

    def __init__(self, name: str, run, close=None, detail: str = ''):
        self.name = name
        self.run = run
        self.close = close or (lambda: None)
        self.detail = detail


def blas_mode(path: pathlib.Path, name: str, choice) -> ModelMode:
    """Return a numpy-blas session whose every conv runs ``choice(layer)``'s method."""
    sess, layers = load_layers(path)
    scratch = bind_all(layers)
    for la in layers:
        la.use(choice(la))
    mode = ModelMode(name, sess.run, sess.close)
    mode.scratch = scratch      # keep it alive with the session
    return mode


def model_modes(path: pathlib.Path, best: Dict[tuple, str], auto: bool) -> List[ModelMode]:
    """Return the whole-model modes: each method on every layer, tuned, backend auto, ORT."""
    modes = [blas_mode(path, m, lambda la, m=m: m) for m in METHODS]
    modes.append(blas_mode(path, 'tuned', lambda la: best.get(
        la.conv.key(), NATIVE if la.native_kind in LOWERED else 'im2col')))
    if auto:
        t = time.perf_counter()
        sess = BlasBackend('auto').open_session(path)
        load_s = time.perf_counter() - t
        picks: Dict[str, int] = {}
        for e in sess.plan:
            picks[e['method']] = picks.get(e['method'], 0) + 1
        modes.append(ModelMode('backend auto', sess.run, sess.close,
                               f'load {load_s * 1e3:.0f} ms of which tuning '
                               f'{sess.tune_ms:.0f} ms;'
                               f' picks ' + ', '.join(f'{k} x{v}' for k, v in picks.items())))
    ort = ort_session(path)
    name = ort.get_inputs()[0].name
    modes.append(ModelMode('onnxruntime cpu', lambda x: ort.run(None, {name: x}),
                           detail='ONNX Runtime CPU EP, default threads (all cores)'))
    return modes


def measure_model(model: str, modes: List[ModelMode], x: np.ndarray, repeats: int,
                  res: benchlib.Results) -> List[dict]:
    """Check every mode against ONNX Runtime, then time them in rotating rounds."""
    ref = [np.array(o, copy=True) for o in modes[-1].run(x)]
    diffs = {}
    for m in modes:
        out = m.run(x)          # the warm-up run, checked
        diffs[m.name] = max(rel_diff(o, r) for o, r in zip(out, ref))
    times: Dict[str, List[float]] = {m.name: [] for m in modes}
    for r in range(repeats):
        k = r % len(modes)
        for m in modes[k:] + modes[:k]:
            t = time.perf_counter()
            m.run(x)
            times[m.name].append((time.perf_counter() - t) * 1e3)
    rows = []
    for m in modes:
        s = benchlib.summary(times[m.name])
        rows.append(res.add(model=model, scope='model', layer='(whole model)', method=m.name,
                            ms_median=s['median'], ms_min=s['min'], ms_max=s['max'],
                            runs=s['n'], rel_diff=diffs[m.name],
                            status='ok' if diffs[m.name] <= TOLERANCE else 'wrong',
                            detail=m.detail))
    direct = next(r['ms_median'] for r in rows if r['method'] == 'direct')
    ort_ms = rows[-1]['ms_median']
    for r in rows:
        r['speedup'] = direct / r['ms_median']
        r['vs_ort'] = r['ms_median'] / ort_ms
        print(f'{model} whole model {r["method"]:16s} {r["ms_median"]:9.1f} ms '
              f'(min {r["ms_min"]:.1f}, max {r["ms_max"]:.1f}) direct/this x{r["speedup"]:.2f}'
              f'  diff {r["rel_diff"]:.1e} {r["status"]}', flush=True)
    return rows


def add_notes(res: benchlib.Results, model: str, layer_rows: List[dict],
              model_rows: List[dict]) -> None:
    """Write the computed notes of one model."""
    ok = {r['method']: r for r in model_rows if r['status'] == 'ok'}
    for r in model_rows:
        if r['status'] != 'ok':
            res.note(f'{model}: {r["method"]} WRONG (rel. diff {r["rel_diff"]:.1e} from ONNX '
                     f'Runtime > {TOLERANCE:g}): not counted.')
    strict = {m: ok[m]['ms_median'] for m in METHODS if m in ok}
    if 'direct' in strict and len(strict) > 1:
        best = min((m for m in strict if m != 'direct'), key=strict.get)
        line = (f'{model}: whole model, every conv by one method: '
                + ', '.join(f'{m} {strict[m]:.1f} ms' for m in METHODS if m in strict)
                + f'; best {best}, x{strict["direct"] / strict[best]:.2f} faster than direct')
        if 'im2col' in strict and 'im2row' in strict:
            line += f'; im2col / im2row = x{strict["im2col"] / strict["im2row"]:.2f}'
        res.note(line + '.')
    if 'direct' in ok and 'tuned' in ok:
        res.note(f'{model}: tuned per layer {ok["tuned"]["ms_median"]:.1f} ms, '
                 f'x{ok["direct"]["ms_median"] / ok["tuned"]["ms_median"]:.2f} vs direct'
                 + (f'; ONNX Runtime {ok["onnxruntime cpu"]["ms_median"]:.1f} ms, the tuned '
                    f'numpy-blas is x{ok["tuned"]["vs_ort"]:.2f} its time'
                    if 'onnxruntime cpu' in ok else '') + '.')
    if 'backend auto' in ok:
        auto = ok['backend auto']
        res.note(f'{model}: backend auto (as shipped: 1x1 and depthwise native, dense tuned at '
                 f'load) {auto["ms_median"]:.1f} ms; {auto["detail"]}.')
    done = [r for r in layer_rows if r['best']]
    if done:
        wins: Dict[str, int] = {}
        for r in done:
            wins[r['best']] = wins.get(r['best'], 0) + r['layers']
        top = max(done, key=lambda r: r['speedup'])
        low = min(done, key=lambda r: r['speedup'])
        res.note(f'{model}: per layer ({len(done)} distinct shapes, {sum(wins.values())} conv '
                 f'layers), fastest method: ' + ', '.join(f'{m} on {n}' for m, n in
                                                          sorted(wins.items()))
                 + f' layers; best / direct from x{low["speedup"]:.2f} ({low["shape"]}) to '
                 f'x{top["speedup"]:.2f} ({top["shape"]}, best {top["best"]}).')
        slower = [r for r in done if r['im2row_ms'] > r['im2col_ms']]
        res.note(f'{model}: im2row slower than im2col on {len(slower)} of {len(done)} distinct '
                 'layers (here im2row gathers the rows by a transposing copy out of NCHW and '
                 'transposes the [Ho Wo, M] product back to NCHW; im2col writes straight '
                 'into NCHW).')
        for kind in LOWERED:
            rs = [r for r in done if r['kind'] == kind and f'{NATIVE}_ms' in r]
            if not rs:
                continue
            lowered = [min(r[f'{m}_ms'] for m in METHODS) for r in rs]
            ratio = [r[f'{NATIVE}_ms'] / lo for r, lo in zip(rs, lowered)]
            res.note(f"{model}: {kind} layers: the backend's native kernel is best on "
                     f'{sum(r["best"] == NATIVE for r in rs)} of {len(rs)} shapes; native / '
                     f'best lowered method = x{min(ratio):.2f}-x{max(ratio):.2f}.')
        sums = {m: sum(r[f'{m}_ms'] * r['layers'] for r in done) for m in METHODS}
        sums['per-layer best'] = sum(r[f'{r["best"]}_ms'] * r['layers'] for r in done)
        res.note(f'{model}: conv layers alone, sum of per-layer medians x count: '
                 + ', '.join(f'{m} {v:.1f} ms' for m, v in sums.items()) + '.')
    for r in layer_rows:
        if r['wrong']:
            res.note(f'{model} layer {r["layer"]}: {", ".join(r["wrong"])} WRONG vs ONNX '
                     f'Runtime; not counted.')


def md_table(columns, headers, rows) -> List[str]:
    """Return a Markdown table of ``rows`` (benchlib's number format)."""
    out = ['| ' + ' | '.join(headers) + ' |', '|' + '---|' * len(headers)]
    out += ['| ' + ' | '.join(benchlib.fmt(r.get(c)) for c in columns) + ' |' for r in rows]
    return out


def plot_fn(layer_rows: Dict[str, List[dict]], model_rows: Dict[str, List[dict]]):
    """Return the plot callback: per-layer best/direct bars per model, whole-model times."""
    colors = {'direct': 'tab:grey', 'im2col': 'tab:blue', 'im2row': 'tab:orange',
              NATIVE: 'tab:green', 'tuned': 'tab:purple', 'backend auto': 'tab:brown',
              'onnxruntime cpu': 'black'}

    def plot(plt, rows):
        from matplotlib.patches import Patch
        models = list(layer_rows)
        fig = plt.figure(figsize=(11, 7.5))
        gs = fig.add_gridspec(2, max(1, len(models)))
        for i, model in enumerate(models):
            ax = fig.add_subplot(gs[0, i])
            lr = layer_rows[model]
            ax.bar(range(len(lr)), [r['speedup'] for r in lr],
                   color=[colors.get(r['best'], 'tab:red') for r in lr])
            ax.axhline(1.0, color='k', lw=0.8)
            ax.set_yscale('log')
            ax.set_xticks(range(len(lr)))
            ax.tick_params(axis='x', labelsize=6)
            ax.set_title(f'{model}: per distinct conv layer', fontsize=9)
            ax.set_xlabel('conv layer (distinct shapes, model order; see the table)', fontsize=8)
            ax.set_ylabel('direct ms / best ms', fontsize=8)
            ax.legend(handles=[Patch(color=c, label=f'best: {m}') for m, c in colors.items()
                               if any(r['best'] == m for r in lr)], fontsize=7)
            ax.grid(True, axis='y', which='both', alpha=0.3)
        ax = fig.add_subplot(gs[1, :])
        names = list(dict.fromkeys(r['method'] for rs in model_rows.values() for r in rs))
        width = 0.8 / max(1, len(names))
        for j, name in enumerate(names):
            xs, ys, lo, hi = [], [], [], []
            for i, model in enumerate(model_rows):
                r = next((r for r in model_rows[model] if r['method'] == name), None)
                if r is not None:
                    xs.append(i + j * width)
                    ys.append(r['ms_median'])
                    lo.append(r['ms_median'] - r['ms_min'])
                    hi.append(r['ms_max'] - r['ms_median'])
            ax.bar(xs, ys, width, yerr=[lo, hi], label=name,
                   color=colors.get(name), capsize=2)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(model_rows))])
        ax.set_xticklabels(list(model_rows))
        ax.set_yscale('log')
        ax.set_ylabel('whole model ms (median, min-max)')
        ax.legend(fontsize=7, ncol=3)
        ax.grid(True, axis='y', which='both', alpha=0.3)
    return plot


def main(argv=None) -> int:
    """Measure every conv layer and every model by every method; write table and plot."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--models', nargs='+', default=list(MODELS),
                    help='bundled models (data dir models/<name>.onnx)')
    ap.add_argument('--layer-repeats', type=int, default=None,
                    help='timed calls per layer and method (default 7; --quick 3)')
    ap.add_argument('--model-repeats', type=int, default=None,
                    help='rounds over the whole-model modes (default 5; --quick 1)')
    ap.add_argument('--max-layers', type=int, default=None,
                    help='distinct conv layers per model (default all; --quick 3)')
    ap.add_argument('--blas-threads', type=int, default=None,
                    help="OpenBLAS threads for the GEMMs (default: OpenBLAS's own)")
    benchlib.common_args(ap)
    args = ap.parse_args(argv)
    layer_reps = args.layer_repeats or (3 if args.quick else 7)
    model_reps = args.model_repeats or (1 if args.quick else 5)
    max_layers = args.max_layers or (3 if args.quick else None)
    res = benchlib.Results('exp3_conv_methods', 'Conv methods: direct vs im2col vs im2row',
                           'Park & Chung n.d. Table 1', machine=args.machine, out_dir=args.out)
    load0 = loadavg()
    blas = OpenBlas()
    if args.blas_threads:
        if not blas.ok:
            ap.error(f'--blas-threads: {blas.reason}')
        blas.set_threads(args.blas_threads)
    rng = np.random.default_rng(0)
    layer_rows, model_rows = {}, {}
    for model in args.models:
        path = paths.models_dir() / f'{model}.onnx'
        t0 = time.monotonic()
        sess, layers = load_layers(path)
        bind_all(layers)
        uniq = distinct(layers)
        if max_layers:
            uniq = uniq[:max_layers]
        layer_rows[model] = measure_layers(model, uniq, layer_reps, res, rng)
        best = {la.conv.key(): r['best'] for la, r in zip(uniq, layer_rows[model])
                if r['best']}
        sess.close()
        x = rng.standard_normal(sess.input_shape).astype(np.float32)
        modes = model_modes(path, best, auto=not args.quick)
        try:
            model_rows[model] = measure_model(model, modes, x, model_reps, res)
        finally:
            for m in modes:
                m.close()
        add_notes(res, model, layer_rows[model], model_rows[model])
        res.note(f'{model}: measured in {time.monotonic() - t0:.0f} s '
                 f'({len(layers)} conv layers, {len(uniq)} distinct shapes timed; input '
                 f'{"x".join(map(str, sess.input_shape))}).')
    res.note("direct here is the backend's: per kernel offset an einsum over channels "
             "(numpy's C loops, vectorised, one thread, no BLAS), not Darknet's scalar "
             '6-loop MCMK with OpenMP as in Park & Chung n.d., so its gap to the GEMM '
             "methods is not like-for-like with Park & Chung's ratios.")
    res.note(f'GEMMs: numpy with {blas_name()}, '
             f'{blas.threads() or "default"} thread(s); the im2col/im2row copies and '
             "direct's einsum run on one thread.")
    res.note('1x1 and depthwise layers: lowered by each method here (1x1 as a dense conv, '
             'depthwise as a grouped conv with C groups of one channel); native = the '
             "backend's own kernel for them (one plain GEMM / per-offset multiply-add), "
             'which tuned may pick. Layers of one shape are timed once; "x" = how many.')
    res.note('Park & Chung n.d. Table 1 (Darknet + OpenBLAS; Tiny-darknet and SqueezeNet on '
             'a Ryzen 1800X and an Odroid XU4): im2row faster than im2col, both far faster '
             'than MCMK, on every model and machine.')
    res.note(f'Load average (1/5/15 min) at start: {load0}; at end: {loadavg()} (the '
             'machine may be shared; min/max show the spread).')
    md_rows = [r for rs in model_rows.values() for r in rs]
    written = res.write(['model', 'method', 'ms_median', 'ms_min', 'ms_max', 'runs', 'speedup',
                         'vs_ort', 'rel_diff', 'status'],
                        ['model', 'mode (whole model)', 'median ms', 'min ms', 'max ms', 'runs',
                         'direct / this', 'this / ORT', 'rel. diff vs ORT', 'status'],
                        plot=plot_fn(layer_rows, model_rows), md_rows=md_rows)
    lines = ['', '## Per conv layer (distinct shapes)', '',
             'ms = median of the timed calls; best among the methods that matched ONNX '
             'Runtime; speed-up = direct ms / best ms.', '']
    lines += md_table(['model', 'index', 'layer', 'layers', 'kind', 'shape', 'direct_ms',
                       'im2col_ms', 'im2row_ms', 'native_ms', 'best', 'speedup',
                       'max_rel_diff'],
                      ['model', '#', 'first layer', 'x', 'kind', 'shape', 'direct ms',
                       'im2col ms', 'im2row ms', 'native ms', 'best', 'direct / best',
                       'max rel. diff'],
                      [r for rs in layer_rows.values() for r in rs])
    with open(written['md'], 'a') as f:
        f.write('\n'.join(lines) + '\n')
    bad = [r for rs in model_rows.values() for r in rs if r['status'] != 'ok']
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
