# Copyright 2026 edge_infer contributors. Apache-2.0.
"""bench/: the shared output writer, the runner's index and the GPU check's probes."""

import csv
import pathlib
import sys

import pytest

BENCH = pathlib.Path(__file__).resolve().parents[3] / 'bench'
# A mark, not a module-level skip (that ends a whole folder's collection under
# launch_testing's pytest plugin).
pytestmark = pytest.mark.skipif(not BENCH.is_dir(),
                                reason='bench/ is not next to the package (an installed copy)')
if BENCH.is_dir():
    sys.path[:0] = [str(BENCH), str(BENCH / 'product')]     # benchlib, run; gpu_check
    import benchlib  # noqa: I100


def test_summary_is_median_min_max():
    s = benchlib.summary([5.0, 1.0, 3.0, 100.0])
    assert (s['median'], s['min'], s['max'], s['n']) == (4.0, 1.0, 100.0, 4)
    assert benchlib.summary([])['n'] == 0


def test_results_write_csv_markdown_png_with_machine_and_command(tmp_path):
    res = benchlib.Results('t', 'A title', 'Author 2000 Fig. 9', machine='m1', out_dir=tmp_path)
    res.power = 'estimated at 100 Hz (ESTIMATED)'
    res.add(lib='a', ms=1.5, extra='only in csv')
    res.add(lib='b', ms=float('nan'))
    res.note('b did not run: reason here')

    def plot(plt, rows):
        plt.figure()
        plt.bar([r['lib'] for r in rows], [1, 2])
    paths = res.write(['lib', 'ms'], ['library', 'ms p50'], plot=plot)
    rows = list(csv.DictReader(open(paths['csv'])))
    assert [r['lib'] for r in rows] == ['a', 'b'] and rows[0]['extra'] == 'only in csv'
    md = paths['md'].read_text()
    assert '# A title' in md and 'Reproduces: Author 2000 Fig. 9' in md
    assert '| library | ms p50 |' in md and '| a | 1.5 |' in md and '| b | — |' in md
    assert 'Power source: estimated at 100 Hz (ESTIMATED)' in md
    assert 'numpy' in md and 'machine' in md and './run.sh exec python' in md
    assert '- b did not run: reason here' in md
    assert paths['png'].read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_the_recorded_command_names_checkout_paths_from_its_root(monkeypatch):
    root = BENCH.parent
    monkeypatch.setattr(sys, 'argv', [str(BENCH / 'papers' / 'exp1_sgemm.py'), '--out',
                                      str(root / 'bench' / 'results' / 'm1'), '--n', '64'])
    cmd = benchlib.Results.command()
    assert cmd == './run.sh exec python bench/papers/exp1_sgemm.py --out bench/results/m1 --n 64'
    assert str(root) not in cmd


def test_runner_reports_a_failed_experiment_in_the_index(tmp_path, monkeypatch):
    import run
    monkeypatch.setitem(run.EXPERIMENTS, '9', ('exp9_missing', 'not written', 'none'))
    assert run.main(['9', '--out', str(tmp_path), '--machine', 'm1']) == 1
    index = (tmp_path / 'index.md').read_text()
    assert '| 9 | [not written](exp9_missing.md) | none | FAILED (exit 127)' in index
    with pytest.raises(SystemExit):
        run.main(['42', '--out', str(tmp_path)])


def test_every_script_sits_in_a_room_is_listed_and_imports_no_test(capsys):
    import run
    found = run.scripts()
    loose = sorted(p.name for p in BENCH.glob('*.py'))
    assert loose == ['benchlib.py', 'run.py'], loose     # the rest in papers/ product/ probes/
    on_disk = {p.stem for room in run.ROOMS for p in (BENCH / room).glob('*.py')}
    assert set(found) == on_disk and len(found) >= 40
    assert all(line for _, _, line in found.values()), 'a script without a docstring'
    for name, (_, path, _) in found.items():
        text = path.read_text()
        assert "'test'" not in text and 'edge_infer/test/' not in text, name
    assert run.main(['list']) == 0
    listed = capsys.readouterr().out
    assert all(f'  {name} ' in listed for name in found)
    assert [line for line in listed.splitlines() if line.endswith('/')] == \
        ['papers/', 'product/', 'probes/']


def test_gpu_check_lists_every_accelerator_candidate_with_a_reason(tmp_path):
    import gpu_check
    assert gpu_check.main(['--quick', '--out', str(tmp_path), '--steps', '1', '2']) == 0
    md = (tmp_path / 'gpu_check.md').read_text()
    for name in ('onnxruntime/cuda', 'onnxruntime/tensorrt', 'torch/cuda:0',
                 'torch/cuda:0/fp16'):
        line = next(ln for ln in md.splitlines() if ln.startswith(name + ' '))
        assert ' unavailable ' in line or ' available ' in line, line
        assert len(line.split(None, 4)) == 5, line       # name, verdict, device, precision, why
    assert '- pinned host memory read in place by the GPU: ' in md and 'shared executor:' in md


def _day(loss_at=(), stop=None, drop_every=0):
    """Return a node's day as robot_day.py records it: 10 Hz for 20 s, diagnostics each 1 s."""
    c = dict.fromkeys(('received', 'processed', 'dropped', 'rejected', 'lost'), 0)
    sends, results, snaps = [], {}, [(99.95, dict(c))]
    for k in range(200):
        t = 100.0 + k / 10
        while snaps[-1][0] + 1.0 <= t:
            snaps.append((snaps[-1][0] + 1.0, dict(c)))
        stopped = stop is not None and stop[0] <= t <= stop[1]
        sends.append((t, k, not stopped, False))
        if stopped or k in loss_at:
            continue            # never received (a dead or inactive node; a silent loss)
        c['received'] += 1
        if drop_every and k % drop_every == 0:
            c['dropped'] += 1
        else:
            c['processed'] += 1
            results[k] = t + 0.03
    snaps.append((121.0, dict(c)))
    return sends, results, snaps


def test_the_robot_day_ledger_finds_a_silent_loss_and_not_a_counted_drop():
    import robot_day_ledger as ledger
    led = ledger.account(*_day(drop_every=4), [])
    assert led['unaccounted'] == 0 and led['dropped'] == 50 and led['results'] == 150
    assert led['in_windows'] == 200
    led = ledger.account(*_day(loss_at=(57, 58, 120)), [])
    assert led['unaccounted_transport'] == 3 and led['unaccounted'] == 3
    # a node stopped by a fault: its frames go with the fault, not unaccounted
    sends, results, snaps = _day(stop=(105.0, 108.0))
    led = ledger.account(sends, results, snaps, [(104.9, 109.0, 'deactivate_activate')])
    assert led['unaccounted'] == 0 and led['windows'] == 2
    assert led['not_delivered'] == 31 and led['outside_windows'] > 0
    led = ledger.account(sends, results, snaps, [])     # the same, with no fault noted
    assert led['unaccounted'] == 0 and led['not_delivered'] == 31   # sent with none matched


def test_the_robot_day_trend_sees_a_creep_through_swings_and_none_in_a_sawtooth():
    import robot_day_ledger as ledger
    swings = [0, 30, -10, 25, -20, 5, 35, -15]      # MB, as sessions come and go
    creep = [(t * 10.0, 480 + 20 * t * 10.0 / 3600 + swings[t % 8]) for t in range(720)]
    got = ledger.trend(creep)
    assert abs(got['theil_sen'] - 20) < 3 and abs(got['ols'] - 20) < 3 * got['ols_se'] + 1
    assert len(got['blocks']) == 11 and got['blocks'][-1] > got['blocks'][0]
    flat = [(t * 10.0, 480 + swings[t % 8]) for t in range(720)]
    assert abs(ledger.trend(flat)['theil_sen']) < 3
    assert ledger.trend(flat[:2])['blocks'] == []
