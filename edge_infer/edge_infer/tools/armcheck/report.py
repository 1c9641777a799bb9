# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The Arm check's report: each emulated run compared with x86 ONNX Runtime, tables, failures.

:mod:`.check` runs the workers under qemu; this module turns their event
logs into the summary, the Markdown tables and the failure lines.
"""

import math
import pathlib
from typing import Dict, List, Optional

import numpy as np

from ...core.backend import Session


class HostReference:
    """x86 ONNX Runtime (CPU, fp32) on the inputs the emulated candidates saw."""

    def __init__(self):
        self._sessions: Dict[str, Session] = {}

    def outputs(self, model: str, x: np.ndarray) -> List[np.ndarray]:
        from ...backends.libs.ort import OrtBackend
        if model not in self._sessions:
            self._sessions[model] = OrtBackend().open_session(pathlib.Path(model))
        return [np.array(o, copy=True) for o in self._sessions[model].run(x)]

    def close(self) -> None:
        for s in self._sessions.values():
            s.close()


def compare(ref: List[np.ndarray], got: List[np.ndarray]) -> dict:
    """Return max |diff| over all outputs, the reference's max |value| and whether shapes fit."""
    if len(ref) != len(got):
        return {'max_abs_diff': math.inf, 'ref_max': math.nan,
                'detail': f'{len(got)} outputs, x86 ORT has {len(ref)}'}
    diff, scale = 0.0, 0.0
    for r, g in zip(ref, got):
        if r.size != g.size:
            return {'max_abs_diff': math.inf, 'ref_max': math.nan,
                    'detail': f'output of {g.size} values, x86 ORT has {r.size}'}
        g = np.asarray(g, np.float32).reshape(r.shape)
        d = float(np.max(np.abs(g - r))) if r.size else 0.0
        diff = max(diff, d if math.isfinite(d) else math.inf)
        scale = max(scale, float(np.max(np.abs(r))) if r.size else 0.0)
    return {'max_abs_diff': diff, 'ref_max': scale, 'detail': ''}


def host_comparisons(outcome: dict, ref: HostReference) -> List[dict]:
    """Compare every recorded first run of a job with x86 ONNX Runtime on the same input."""
    out_dir = pathlib.Path(outcome['out']) / 'io'
    rows = []
    for e in outcome['events']:
        if e['event'] != 'io':
            continue
        try:
            x = np.load(out_dir / e['input'])
            got = [np.load(out_dir / f) for f in e['outputs']]
            cmp = compare(ref.outputs(e['model'], x), got)
        except Exception as exc:  # unreadable file / model: the comparison says so
            cmp = {'max_abs_diff': math.inf, 'ref_max': math.nan,
                   'detail': f'comparison failed: {type(exc).__name__}: {exc}'}
        rows.append({'candidate': e['candidate'], 'precision': e['precision'],
                     'library': e['library'], 'phase': e['phase'],
                     'model_file': pathlib.Path(e['model']).name, **cmp})
    return rows


# ------------------------------------------------------------------------ report
def _fmt(v, spec='.3f') -> str:
    return format(v, spec) if isinstance(v, (int, float)) and math.isfinite(v) else '-'


def _table(rows: List[List[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for k, r in enumerate(rows):
        lines.append('  '.join(c.ljust(w) for c, w in zip(r, widths)) + '  ' + r[-1])
        if k == 0:
            lines.append('-' * (sum(widths) + 2 * len(widths) + 8))
    return '\n'.join(lines)


def _verdict(r: dict, floor: float) -> str:
    """Return the accuracy guard's verdict on a measured candidate."""
    if r['status'] not in ('ok', 'rejected'):
        return '-'
    return ('accepted' if r['status'] == 'ok' else 'rejected') + f' (floor {floor:g})'


def model_table(model: dict, tolerance: float) -> str:
    """Return the aarch64 table of one registry model."""
    diffs = {c['candidate']: c for c in model['comparisons']
             if c['phase'] == 'profile' and c['model_file'] == model['file']}
    rows = [['candidate', 'precision', 'status', 'vs x86 ORT', 'accuracy', 'verdict',
             'p50 ms (EMULATED)', 'detail']]
    for r in model['results']:
        d = diffs.get(r['backend'])
        vs = '-' if d is None else f'{d["max_abs_diff"]:.1e}'
        if d is not None and r['precision'] == 'fp32' and \
                not d['max_abs_diff'] <= tolerance * max(1.0, d['ref_max']):
            vs += ' (!)'
        detail = r['reason'] if r['status'] not in ('ok',) else r.get('accuracy_detail', '')
        rows.append([r['backend'], r['precision'], r['status'], vs, _fmt(r['accuracy']),
                     _verdict(r, model['floor']) + (' *chosen' if r.get('chosen') else ''),
                     _fmt(r['p50_ms'], '.0f'), detail.split(' (')[0][:90]])
    for c in model['crashes']:
        rows.append([c['candidate'], '?', 'CRASHED', '-', '-', '-', '-',
                     f'{c["how"]} during {c["during"]}'])
    for name in model.get('left_out', []):
        rows.append([name, '', 'left out', '-', '-', '-', '-', '--only'])
    return _table(rows)


def probe_table(probe: dict, tolerance: float) -> str:
    """Return the table of the probe job: every candidate, available or why not."""
    diffs = {c['candidate']: c for c in probe['comparisons'] if c['phase'] == 'probe'}
    rows = [['candidate', 'precision', 'on aarch64', 'vs x86 ORT', 'reason']]
    for p in probe['probes']:
        d = diffs.get(p['candidate'])
        vs = '-' if d is None else f'{d["max_abs_diff"]:.1e}'
        rows.append([p['candidate'], p['precision'], 'available' if p['ok'] else
                     'unavailable', vs, p['reason'][:110]])
    for c in probe['crashes']:
        rows.append([c['candidate'], '?', 'CRASHED', '-', f'{c["how"]} during {c["during"]}'])
    return _table(rows)


def summarise(outcome: dict, ref: HostReference, registry: dict) -> dict:
    events = outcome['events']
    env: dict = next((e for e in events if e['event'] == 'environment'), {})
    start: dict = next((e for e in events if e['event'] == 'start'), {})
    summary = {k: outcome[k] for k in ('model', 'name', 'kind', 'crashes', 'errors',
                                       'attempts', 'seconds')}
    summary['machine'] = start.get('machine', '')
    summary['environment'] = {k: v for k, v in env.items() if k not in ('event', 't')}
    summary['comparisons'] = host_comparisons(outcome, ref)
    if outcome['kind'] == 'variants':
        summary['variants'] = [{k: e[k] for k in ('candidate', 'file', 'seconds')}
                               for e in events if e['event'] == 'variant']
    elif outcome['model'] == 'probe':
        summary['probes'] = [{k: e[k] for k in ('candidate', 'library', 'device', 'precision',
                                                'ok', 'reason')}
                             for e in events if e['event'] == 'probe']
    else:
        result = next((e for e in events if e['event'] == 'result'), None)
        left: dict = next((e for e in events if e['event'] == 'left_out'), {})
        summary['file'] = registry[outcome['model']].file
        summary['left_out'] = left.get('candidates', [])
        if result is None:
            summary.update(results=[], chosen=None, why='', frames='', floor=math.nan,
                           error='no result (the worker did not finish)')
        else:
            summary.update({k: result[k] for k in ('results', 'chosen', 'why', 'frames',
                                                   'floor', 'error', 'notes')})
    return summary


def failures(report: dict, tolerance: float) -> List[str]:
    """Return every reason for a non-zero exit."""
    out = []
    for m in report['jobs']:
        name = m.get('name', m['model'])
        out += m['errors']
        out += [f'{name}: {c["candidate"]} crashed the aarch64 process ({c["how"]} during '
                f'{c["during"]})' for c in m['crashes']]
        if m['machine'] != 'aarch64':
            out.append(f'{name}: the worker ran on {m["machine"] or "?"}, not aarch64')
        for c in m['comparisons']:
            if c['precision'] == 'fp32' and \
                    not c['max_abs_diff'] <= tolerance * max(1.0, c['ref_max']):
                out.append(f'{name}: {c["candidate"]} fp32 output on {c["model_file"]} differs '
                           f'from x86 ONNX Runtime by {c["max_abs_diff"]:.2e} (> {tolerance:g}'
                           f'{" x " + format(c["ref_max"], ".3g") if c["ref_max"] > 1 else ""})'
                           + (f': {c["detail"]}' if c['detail'] else ''))
        if name == 'probe' or m.get('kind') == 'variants':
            continue
        out += [f'{name}: {r["backend"]} failed on aarch64: {r["reason"]}'
                for r in m['results'] if r['status'] == 'failed']
        if m.get('error'):
            out.append(f'{name}: {m["error"]}')
        if m['results'] and 'real frames' not in (m.get('frames') or ''):
            out.append(f'{name}: the accuracy check could not run on real frames '
                       f'({m.get("frames") or "no frames"})')
        elif m['results'] and not any(math.isfinite(r['accuracy']) for r in m['results']):
            out.append(f'{name}: no candidate got an accuracy figure (the check did not run)')
    return out


def openvino_line(report: dict) -> str:
    """Return what OpenVINO loaded on aarch64 and the precision it reported."""
    facts: Optional[dict] = next(
        (m['environment'].get('openvino') for m in report['jobs']
         if m['environment'].get('openvino', {}).get('plugins_mapped_during_run')),
        None) or next((m['environment'].get('openvino') for m in report['jobs']
                       if m['environment'].get('openvino')), {})
    if not facts or facts.get('error'):
        return f'OpenVINO on aarch64: not loaded ({(facts or {}).get("error", "not run")})'
    natives = sorted({r['precision'] for m in report['jobs'] for r in m.get('results', [])
                      if r['library'] == 'openvino' and r['precision'] != 'fp32'})
    return (f'OpenVINO on aarch64: CPU plugin {", ".join(facts["plugins_mapped_during_run"])} '
            f'({facts.get("cpu_plugin", "?")}, device {facts.get("device", "?")!r}); '
            f'default inference precision reported: {facts.get("default_precision", "?")}'
            + (f'; native-precision candidate ran as {", ".join(natives)}' if natives else ''))


def libraries_line(report: dict) -> str:
    """Return which libraries were mapped into the aarch64 processes, with their ELF machine."""
    libs: Dict[str, set] = {}
    for m in report['jobs']:
        for top, entry in m['environment'].get('libraries', {}).items():
            libs.setdefault(top, set()).update(entry['machines'])
    keep = ('numpy', 'cv2', 'onnxruntime', 'openvino', 'ncnn')
    return 'libraries mapped (ELF machine): ' + ', '.join(
        f'{k} {"/".join(sorted(libs[k])) or "?"}' if k in libs else f'{k} NOT LOADED'
        for k in keep)
