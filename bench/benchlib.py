# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What every bench/ experiment shares: the machine record, statistics, outputs.

Each experiment writes three files under ``bench/results/<machine>/``:
``<name>.csv`` (one row per measurement, machine-readable), ``<name>.md`` (the
table, headed by the machine, library versions, power source, date and the
exact command that made it) and ``<name>.png`` (the plot). ``<machine>`` is
``--machine`` or ``$BENCH_MACHINE`` or a slug of the CPU/board name and core
count, so results from a Jetson or an Odroid land beside these, not over them.

Rules the experiments follow: medians of repeated runs with min and max
stated; ratios computed from figures measured side by side in one run; no
figure is typed in by hand.
"""

import csv
import datetime
import os
import pathlib
import platform
import re
import shlex
import statistics
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence

BENCH_DIR = pathlib.Path(__file__).resolve().parent


def board_name() -> str:
    """Return the board (device tree) or CPU model name."""
    from edge_infer.backends.measure.cache import board_fingerprint
    fp = board_fingerprint()
    return fp.get('board') or fp.get('cpu') or platform.machine()


def isa_tag(cpuinfo: str = '/proc/cpuinfo') -> str:
    """Return the x86 vector level that sets int8 / bf16 speed ('amx', 'avx512bf16', ...).

    Two VMs both named "AMD EPYC" ran int8 and bf16 at very different speeds
    (one with AVX512-BF16 and VNNI, one with AVX2 only): the tag keeps their
    results apart. '' where the flags are not x86 or cannot be read.
    """
    try:
        with open(cpuinfo) as f:
            flags = next((ln.split(':', 1)[1].split() for ln in f
                          if ln.startswith('flags')), [])
    except OSError:
        return ''
    for flag, tag in (('amx_bf16', 'amx'), ('avx512_bf16', 'avx512bf16'),
                      ('avx512_vnni', 'avx512vnni'), ('avx512f', 'avx512'),
                      ('avx_vnni', 'avxvnni'), ('avx2', 'avx2')):
        if flag in flags:
            return tag
    return ''


def machine_slug() -> str:
    """Return the default results folder name for this machine.

    ``<arch>-<board or CPU>[-<x86 vector level>]-<N>cpu``. Folders made before
    the vector level was added have none (x86_64-amd-epyc-2cpu is the EPYC with
    AVX512-BF16 and VNNI).
    """
    env = os.environ.get('BENCH_MACHINE')
    if env:
        return env
    slug = re.sub(r'[^a-z0-9]+', '-', board_name().lower()).strip('-')[:40] or 'unknown'
    isa = isa_tag()
    return f"{platform.machine()}-{slug}{'-' + isa if isa else ''}-{os.cpu_count()}cpu"


def library_versions() -> Dict[str, str]:
    """Return the versions of the libraries an experiment may use (absent ones skipped)."""
    import importlib
    out = {'python': platform.python_version()}
    for mod in ('numpy', 'onnxruntime', 'cv2', 'onnx', 'pyopencl', 'pycuda', 'tensorrt'):
        try:
            importlib.import_module(mod)
        except Exception:  # absent (or broken): not listed
            pass
    for mod, attr in (('numpy', '__version__'), ('onnxruntime', '__version__'),
                      ('cv2', '__version__'), ('onnx', '__version__'),
                      ('pyopencl', 'VERSION_TEXT'), ('pycuda', 'VERSION_TEXT'),
                      ('tensorrt', '__version__'), ('rclpy', '__version__')):
        if mod not in sys.modules:
            continue
        v = getattr(sys.modules[mod], attr, None)
        if v is not None:
            out['opencv' if mod == 'cv2' else mod] = str(v)
    if 'numpy' in sys.modules:
        try:
            cfg = sys.modules['numpy'].show_config(mode='dicts')
            blas = cfg['Build Dependencies']['blas']
            out['blas'] = f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
        except Exception:  # numpy < 1.26 has no mode='dicts'
            pass
    if 'onnxruntime' in sys.modules:
        out['ort_providers'] = ','.join(sys.modules['onnxruntime'].get_available_providers())
    return out


def machine_record() -> Dict[str, str]:
    """Return the machine description written at the head of every result."""
    from edge_infer.backends.measure.cache import board_fingerprint
    fp = board_fingerprint()
    rec = {'machine': machine_slug(), 'cpu': fp.get('cpu', ''), 'board': fp.get('board', ''),
           'cpus': fp.get('cpus', ''), 'gpu': fp.get('gpu', '') or 'none found',
           'governor': fp.get('governor', ''), 'power_mode': fp.get('power_mode', ''),
           'os': f'{platform.system()} {platform.release()}'}
    return {k: v for k, v in rec.items() if v}


class Power:
    """The process's power meter for an experiment (best source found; estimator otherwise)."""

    def __init__(self, enabled: bool = True, rate_hz: float = 100.0):
        self.meter = None
        self.lines: List[str] = []
        if enabled:
            from edge_infer.telemetry.process_meter import ProcessMeter, settings
            self._meters = ProcessMeter()
            self.meter = self._meters.acquire(settings(rate_hz=rate_hz), log=self.lines.append)
            time.sleep(0.3)   # a few samples before the first window

    @property
    def source(self) -> str:
        """Return e.g. 'rapl (measured)' or 'estimated (NOT a measurement)'."""
        if self.meter is None:
            return 'off'
        kind = 'measured' if self.meter.measured else 'ESTIMATED from CPU load, not a measurement'
        return f'{self.meter.source_name} at {self.meter.rate_hz:.0f} Hz ({kind})'

    def joules(self, t0: float, t1: float) -> float:
        """Return the energy over [t0, t1] (time.monotonic), or NaN without a meter."""
        if self.meter is None or t1 <= t0:
            return float('nan')
        deadline = time.monotonic() + 0.5     # let the sample covering t1 arrive
        while time.monotonic() < deadline:
            latest = self.meter.latest()
            if latest is not None and latest.t >= t1:
                break
            time.sleep(0.005)
        return self.meter.average_w(t0, t1) * (t1 - t0)

    def close(self) -> None:
        """Release the meter."""
        if self.meter is not None:
            self._meters.release()
            self.meter = None


def summary(values: Sequence[float]) -> Dict[str, float]:
    """Return median, min, max and n of ``values``."""
    v = [float(x) for x in values]
    if not v:
        return {'median': float('nan'), 'min': float('nan'), 'max': float('nan'), 'n': 0}
    return {'median': statistics.median(v), 'min': min(v), 'max': max(v), 'n': len(v)}


def video_frames(count: int, start: int = 0) -> list:
    """Return ``count`` BGR frames of the demo video (vtest.avi) from frame ``start``, looping."""
    import cv2
    from edge_infer import paths
    video = cv2.VideoCapture(str(paths.cache_dir() / 'vtest.avi'))
    video.set(cv2.CAP_PROP_POS_FRAMES, start)
    out: list = []
    while len(out) < count:
        ok, img = video.read()
        if not ok:
            video.set(cv2.CAP_PROP_POS_FRAMES, 0)
            continue
        out.append(img)
    return out


def time_calls(fn: Callable[[], object], repeats: int, warmup: int = 2,
               min_seconds: float = 0.0) -> List[float]:
    """Return ``repeats`` wall times of ``fn()`` in ms (more while under ``min_seconds``)."""
    for _ in range(warmup):
        fn()
    out: List[float] = []
    start = time.perf_counter()
    while len(out) < repeats or time.perf_counter() - start < min_seconds:
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e3)
    return out


def fmt(x, digits: int = 3) -> str:
    """Format a number for a Markdown table (NaN and None as an em dash)."""
    if x is None:
        return '—'
    if isinstance(x, float):
        if x != x:
            return '—'
        if abs(x) >= 100:
            return f'{x:.0f}' if abs(x) >= 1000 else f'{x:.1f}'
        return f'{x:.{digits}g}'
    return str(x)


class Results:
    """Collects an experiment's rows and writes its CSV, Markdown and PNG."""

    def __init__(self, name: str, title: str, seed: str, machine: Optional[str] = None,
                 out_dir: Optional[pathlib.Path] = None):
        self.name = name
        self.title = title
        self.seed = seed
        self.machine = machine or machine_slug()
        self.dir = pathlib.Path(out_dir) if out_dir else BENCH_DIR / 'results' / self.machine
        self.rows: List[dict] = []
        self.notes: List[str] = []
        self.power = 'off'
        self.started = time.monotonic()

    def add(self, **row) -> dict:
        """Append one measurement row (any columns) and return it."""
        self.rows.append(row)
        return row

    def note(self, line: str) -> None:
        """Add a line under the table (method, baseline, formula, caveat); printed too."""
        self.notes.append(line)
        print(line)

    def write(self, columns: Sequence[str], headers: Optional[Sequence[str]] = None,
              plot: Optional[Callable[[object, List[dict]], None]] = None,
              md_rows: Optional[List[dict]] = None) -> Dict[str, pathlib.Path]:
        """Write <name>.csv (all rows, all keys), <name>.md (``columns``) and <name>.png.

        ``plot(ax_or_fig_factory, rows)`` draws with matplotlib; it receives the
        pyplot module and the rows, and must create its own figure.
        ``md_rows`` replaces ``rows`` in the Markdown table (e.g. a summary).
        """
        self.dir.mkdir(parents=True, exist_ok=True)
        paths = {}
        keys: List[str] = []
        for r in self.rows:
            keys += [k for k in r if k not in keys]
        csv_path = self.dir / f'{self.name}.csv'
        with open(csv_path, 'w', newline='') as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            for r in self.rows:
                w.writerow({k: r.get(k, '') for k in keys})
        paths['csv'] = csv_path
        md = [f'# {self.title}', '',
              f'Reproduces: {self.seed}', '',
              '```', self.command(), '```', '']
        rec = machine_record()
        md.append('| machine | ' + ' | '.join(rec.values()) + ' |')
        md.append('|---' * (len(rec) + 1) + '|')
        md.append('')
        md.append('Libraries: ' + ', '.join(f'{k} {v}' for k, v in library_versions().items()))
        md.append('')
        md.append(f'Power source: {self.power}')
        md.append('')
        md.append(f'Date: {datetime.datetime.now().astimezone().isoformat(timespec="seconds")};'
                  f' took {time.monotonic() - self.started:.0f} s.')
        md.append('')
        headers = list(headers or columns)
        md.append('| ' + ' | '.join(headers) + ' |')
        md.append('|' + '---|' * len(headers))
        for r in (self.rows if md_rows is None else md_rows):
            md.append('| ' + ' | '.join(fmt(r.get(c)) for c in columns) + ' |')
        md.append('')
        md += [f'- {n}' for n in self.notes]
        md_path = self.dir / f'{self.name}.md'
        md_path.write_text('\n'.join(md) + '\n')
        paths['md'] = md_path
        if plot is not None:
            import matplotlib
            matplotlib.use('Agg')
            import matplotlib.pyplot as plt
            plot(plt, self.rows)
            png = self.dir / f'{self.name}.png'
            fig = plt.gcf()
            fig.suptitle(f'{self.title}\n{self.machine}', fontsize=9)
            fig.tight_layout()
            fig.savefig(png, dpi=110)
            plt.close('all')
            paths['png'] = png
        for p in paths.values():
            print(f'wrote {p}')
        return paths

    @staticmethod
    def command() -> str:
        """Return the command line that ran this experiment (as typed from the repo root)."""
        root = str(BENCH_DIR.parent) + '/'
        argv = [shown_path(a) if i == 0 or a.startswith(root) else a
                for i, a in enumerate(sys.argv)]
        return './run.sh exec python ' + ' '.join(shlex.quote(a) for a in argv)


def shown_path(path: str) -> str:
    """Return ``path`` relative to the checkout when it lies inside it (no /home/... shown)."""
    try:
        return str(pathlib.Path(path).resolve().relative_to(BENCH_DIR.parent))
    except ValueError:
        return path


def common_args(ap) -> None:
    """Add the arguments every experiment takes."""
    ap.add_argument('--machine', default=None,
                    help='results folder name under bench/results (default: this machine)')
    ap.add_argument('--out', default=None, help='write results here instead')
    ap.add_argument('--quick', action='store_true',
                    help='few repeats, for a smoke run (figures not for publishing)')
