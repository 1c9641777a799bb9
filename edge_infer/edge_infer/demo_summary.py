# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The demo's summary: figures from what it received, and their printout (demo.py runs it).

Per node: frames, latency, energy, the backend and its share; the detector's
classes and tracks, people per frame, the person mask's share, power,
memory by node state.
"""

import collections
from typing import Any, Dict

import numpy as np

#: The perception nodes of config/perception.yaml: node -> (result topic, message type)
RESULT_TOPICS = {'detector': ('/detector/detections', 'DetectionArray'),
                 'classifier': ('/classifier/classification', 'Classification'),
                 'pose': ('/pose/poses', 'PoseDetectionArray'),
                 'segmenter': ('/segmenter/segmentation', 'Segmentation')}


def percentile(values, q):
    """Return the ``q``-th percentile of ``values`` (NaN when there are none)."""
    return float(np.percentile(values, q)) if len(values) else float('nan')


def stamp_ns(header_or_time) -> int:
    """Return a header's (or a Time's) stamp in nanoseconds."""
    t = getattr(header_or_time, 'stamp', header_or_time)
    return t.sec * 1_000_000_000 + t.nanosec


def summarize(collector, info: dict, player_line: str) -> dict:
    """Return the demo's figures from what ``collector`` (demo.Collector) received."""
    s: Dict[str, Any] = {'player': player_line, 'nodes': {}, 'classes': collections.Counter()}
    for name in RESULT_TOPICS:
        msgs = collector.results[name]
        d = collector.diag.get(name, {})
        s['nodes'][name] = {
            'model': msgs[0].model if msgs else d.get('model', ''),
            'backend': msgs[-1].backend if msgs else d.get('backend', ''),
            'received': int(d.get('received', 0)), 'processed': int(d.get('processed', 0)),
            'dropped': int(d.get('dropped', 0)), 'rejected': int(d.get('rejected', 0)),
            'results': len(msgs),
            'inference_p50': percentile([m.inference_ms for m in msgs], 50),
            'inference_p95': percentile([m.inference_ms for m in msgs], 95),
            'total_p50': percentile([m.preprocess_ms + m.inference_ms + m.postprocess_ms
                                     for m in msgs], 50),
            'total_p95': percentile([m.preprocess_ms + m.inference_ms + m.postprocess_ms
                                     for m in msgs], 95),
            # the node's own clock, frame taken -> result published (diagnostics)
            'node_p50': float(d.get('latency_p50_ms', 'nan')),
            'energy': _energy_summary(collector.energy[name]),
            'served_by': collections.Counter(m.backend for m in msgs),
        }
    for m in collector.results['detector']:
        s['classes'].update(d.label for d in m.detections)
    s['tracks'] = _track_summary(collector.results['detector'],
                                 collector.diag.get('detector', {}))
    people = [len(m.poses) for m in collector.results['pose']]
    s['people'] = collections.Counter(people)
    shares = [m.class_fractions[1] for m in collector.results['segmenter']
              if len(m.class_fractions) > 1]
    s['mask_share'] = (percentile(shares, 10), percentile(shares, 50), percentile(shares, 90))
    s['published'] = {t: v['count'] for t, v in info['topics'].items()}
    s['power'] = _power_summary(collector.power)
    s['backends'] = {n: (r.chosen, r.reason, sum(c.status == 'ok' for c in r.candidates),
                         len(r.candidates)) for n, r in collector.reports.items()}
    s['memory'] = dict(collector.memory)
    s['settled_s'] = collector.settled_s
    return s


def _track_summary(msgs, diag: dict) -> dict:
    """Return the detector's tracks: ids, their lengths (first to last stamp), boxes with ids."""
    first: Dict[int, float] = {}
    last: Dict[int, float] = {}
    boxes = with_id = people = people_with_id = 0
    for m in msgs:
        t = stamp_ns(m.header) * 1e-9
        for d in m.detections:
            boxes += 1
            people += d.label == 'person'
            if d.track_id >= 0:
                with_id += 1
                people_with_id += d.label == 'person'
                first.setdefault(d.track_id, t)
                last[d.track_id] = t
    spans = [last[i] - first[i] for i in first]
    return {'tracks': len(first), 'median_s': percentile(spans, 50), 'boxes': boxes,
            'with_id': with_id / boxes if boxes else float('nan'),
            'people_with_id': people_with_id / people if people else float('nan'),
            'withheld': int(diag.get('untracked_withheld', 0) or 0),
            'given_back': diag.get('ids_given_back', '')}


def _energy_summary(records) -> dict:
    """Energy per inference of one model from its ~/energy records (one per result).

    Not from the results' ``energy``: a result goes out before its power
    sample (joules NaN, source 'pending') and the record follows on ~/energy
    with the same header.
    """
    metered = [r.energy for r in records if np.isfinite(r.energy.joules)]
    missing = len(records) - len(metered)     # no power sample covered the run
    if not metered:
        return {'metered': 0, 'records': len(records), 'missing': missing}
    joules = np.array([e.joules for e in metered])
    errors = np.array([e.error_j for e in metered])
    return {'metered': len(metered), 'records': len(records), 'missing': missing,
            'source': metered[-1].source, 'measured': bool(metered[-1].measured),
            'rate_hz': float(np.median([e.sample_rate_hz for e in metered])),
            'j_p50': float(np.median(joules)), 'j_mean': float(joules.mean()),
            'err_p50': float(np.median(errors)),
            'w_mean': float(np.median([e.average_watts for e in metered]))}


def _power_summary(samples) -> dict:
    if not samples:
        return {}
    watts = np.array([p.total_watts for p in samples])
    last = samples[-1]
    return {'messages': len(samples), 'source': last.source, 'measured': last.measured,
            'rate_hz': float(np.median([p.sample_rate_hz for p in samples])),
            'w_mean': float(watts.mean()), 'w_min': float(min(p.min_watts for p in samples)),
            'w_max': float(max(p.max_watts for p in samples)),
            'energy_j': float(last.energy_j), 'elapsed_s': float(last.elapsed_s),
            'sample': last}


def print_summary(s: dict, log) -> None:
    """Print the figures of :func:`summarize`, a line at a time through ``log``."""
    log('')
    log('=== edge_infer demo summary ===')
    log(f"bag player: {s['player']}")
    for topic, n in s['published'].items():
        log(f'  published on {topic}: {n}')
    width = max([20] + [len(n['backend']) + 2 for n in s['nodes'].values()])
    mw = max([8] + [len(n['model']) + 2 for n in s['nodes'].values()])
    hdr = (f"{'node':<11}{'model':<{mw}}{'backend':<{width}}{'recv':>6}{'proc':>6}{'drop':>6}"
           f"{'rej':>5}  {'infer p50/p95 ms':>17}  {'frame p50/p95 ms':>17}"
           f"  {'in->out p50':>11}  {'x infer':>7}")
    log(hdr)
    log('-' * len(hdr))
    for name, n in s['nodes'].items():
        log(f"{name:<11}{n['model']:<{mw}}{n['backend']:<{width}}{n['received']:>6}"
            f"{n['processed']:>6}{n['dropped']:>6}{n['rejected']:>5}  "
            f"{n['inference_p50']:>8.1f}/{n['inference_p95']:<8.1f}  "
            f"{n['total_p50']:>8.1f}/{n['total_p95']:<8.1f}  {n['node_p50']:>11.1f}  "
            f"{n['node_p50'] / n['inference_p50']:>7.2f}")
    log('(infer: the model run; frame: decode + preprocess + infer + postprocess; '
        "in->out: frame taken -> result published, the node's own clock)")
    log('')
    for name, (chosen, why, ok, total) in s['backends'].items():
        log(f'backend of {name}: {chosen} ({ok} of {total} candidates usable here; '
            f'`edge_infer profile` for the table): {why}')
    log('')
    settled = s.get('settled_s')
    log("share of each model's frames per backend " + (
        f'(every choice measured {settled:.1f} s after the bag started):' if settled is not None
        else '(some choice still provisional at the end):'))
    for name, n in s['nodes'].items():
        total = sum(n['served_by'].values()) or 1
        shares = [f'{b} {100 * k / total:.0f} %' for b, k in n['served_by'].most_common()]
        log(f'  {name:<11}' + ', '.join(shares))
    if s.get('memory'):
        log('')
        log('container memory (RSS) by node state:')
        for state, mb in s['memory'].items():
            log(f'  {state:<34}{mb:>7.0f} MB')
    p = s['power']
    log('')
    if p:
        kind = 'measured' if p['measured'] else 'ESTIMATED from CPU load, not a measurement'
        log(f"power: source '{p['source']}' ({kind}), sampled at {p['rate_hz']:.0f} Hz, "
            f"{p['messages']} PowerSample messages")
        log(f"  mean {p['w_mean']:.2f} W (min {p['w_min']:.2f}, max {p['w_max']:.2f}); "
            f"{p['energy_j']:.1f} J over {p['elapsed_s']:.1f} s")
        m = p['sample']
        rails = ', '.join(f'{r.name}={r.watts:.2f} W' for r in m.rails)
        log(f'  last PowerSample: stamp {m.header.stamp.sec}.{m.header.stamp.nanosec:09d} '
            f'source={m.source} measured={m.measured} rate={m.sample_rate_hz:.1f} Hz '
            f'n={m.n_samples} total={m.total_watts:.2f} W [{m.min_watts:.2f}, '
            f'{m.max_watts:.2f}] rails={rails} energy={m.energy_j:.2f} J over '
            f'{m.elapsed_s:.2f} s')
    else:
        log('power: no PowerSample received')
    hdr = (f"{'model':<{mw}}{'metered':>8}  {'J/inference p50':>15}  {'mean':>8}  "
           f"{'+- err p50':>10}  {'W in run':>8}  {'source @ rate':<20}")
    log('energy per inference (~/energy records; window = the model run; overlapping runs '
        'share power equally):')
    log(hdr)
    log('-' * len(hdr))
    for name, n in s['nodes'].items():
        e = n['energy']
        missing = f"  ({e['missing']} without a power sample)" if e['missing'] else ''
        if not e['metered']:
            log(f"{n['model']:<{mw}}{0:>8}  (not metered){missing}")
            continue
        log(f"{n['model']:<{mw}}{e['metered']:>8}  {e['j_p50']:>15.4f}  {e['j_mean']:>8.4f}  "
            f"{e['err_p50']:>10.4f}  {e['w_mean']:>8.2f}  "
            f"{e['source'] + ' @ ' + format(e['rate_hz'], '.0f') + ' Hz':<20}{missing}")
    log('')
    log('detections per class (detector, all frames): ' + ', '.join(
        f'{c} {k}' for c, k in s['classes'].most_common()))
    tr = s['tracks']
    log(f"tracks (detector): {tr['tracks']} ids, median length {tr['median_s']:.1f} s; "
        f"{tr['boxes']} boxes published, {tr['with_id']:.0%} with an id (people "
        f"{tr['people_with_id']:.0%}); {tr['withheld']} boxes without one withheld "
        f"(publish_untracked false); ids given back by appearance: {tr['given_back']}")
    log('people per frame (pose, frames): ' + ', '.join(
        f'{k}: {v}' for k, v in sorted(s['people'].items())))
    p10, p50, p90 = s['mask_share']
    log(f'person mask, share of the picture (segmenter): p10 {p10:.1%}, median {p50:.1%}, '
        f'p90 {p90:.1%}')
