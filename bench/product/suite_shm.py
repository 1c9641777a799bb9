# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The README's test command, run N times: what each run leaves in /dev/shm (issue 56).

    ./run.sh exec python bench/product/suite_shm.py [--runs 3] [-- pytest args]

Runs ``./run.sh test`` (the README's test command; extra arguments after
``--`` go to pytest) ``--runs`` times in a row and, before and after each,
lists /dev/shm: the files each run added and whether a live process still
owns them (another program's Fast DDS files come and go beside a run; what
no live process owns is what a run left: Fast DDS file sets and orphans,
Triton Python-backend regions). Writes ``suite_shm.csv`` / ``.md``
(benchlib). About 10 minutes per run on a 2-core machine.
"""

import argparse
import pathlib
import shlex
import subprocess
import sys
import time

from edge_infer import shm

try:
    import benchlib
except ImportError:     # run as a file: bench/ is not on the path
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    import benchlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
README_COMMAND = './run.sh test -q'     # the README's test command


def listing() -> dict:
    """Return /dev/shm's files: path -> size."""
    out = {}
    for p in shm.SHM_DIR.iterdir():
        try:
            if p.is_file():
                out[str(p)] = p.stat().st_size
        except OSError:
            pass
    return out


def unowned() -> set:
    """Return the /dev/shm files no live process owns (what killed processes left)."""
    sets = shm.stale(min_age_s=0.0, orphans=True)
    return {str(f) for files in sets for f in files} | \
        {str(p) for p in shm.stale_triton(min_age_s=0.0)}


def main() -> None:
    """Run the suite ``--runs`` times; print and write what each left in /dev/shm."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('pytest_args', nargs='*')
    benchlib.common_args(ap)
    args = ap.parse_args()
    res = benchlib.Results('suite_shm', "The README's test command: what it leaves in /dev/shm",
                           '(product) issue 56', args.machine, args.out)
    first = listing()
    res.note(f'/dev/shm before the first run: {len(first)} files, '
             f'{sum(first.values()) / 2**20:.1f} MB, {len(unowned())} no live process owns')
    for k in range(1, args.runs + 1):
        before = listing()
        t0 = time.monotonic()
        proc = subprocess.Popen([*shlex.split(README_COMMAND), *args.pytest_args],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        cleaned = []        # what the suite's own end removed (test/conftest.py)
        for line in proc.stdout:
            sys.stdout.write(line)
            if line.startswith('[suite] '):
                cleaned.append(line[8:].strip())
        rc = proc.wait()
        wall = time.monotonic() - t0
        after = listing()
        new = {p: s for p, s in after.items() if p not in before}
        stale = unowned()
        left = {p: s for p, s in new.items() if p in stale}
        row = res.add(run=k, rc=rc, wall_s=round(wall), new_files=len(new),
                      new_mb=round(sum(new.values()) / 2**20, 1), left_files=len(left),
                      left_mb=round(sum(left.values()) / 2**20, 1),
                      gone_files=len([p for p in before if p not in after]),
                      suite_end_cleaned='; '.join(cleaned) or 'nothing',
                      left_names=' '.join(sorted(pathlib.Path(p).name for p in left))[:400])
        print(f"[suite {k}/{args.runs}] rc {rc} in {wall:.0f} s: {row['new_files']} new "
              f"file(s) ({row['new_mb']} MB), {row['left_files']} of them no live process "
              f"owns ({row['left_mb']} MB)", flush=True)
    res.note('new: files in /dev/shm after the run that were not there before it; left: '
             'those no live process owns (edge_infer.shm: Fast DDS sets and orphans, Triton '
             "regions); a live program beside the run may own new ones. suite's end: what "
             "the suite's last step (test/conftest.py) removed, i.e. what its tests left")
    res.write(['run', 'rc', 'wall_s', 'new_files', 'new_mb', 'left_files', 'left_mb',
               'gone_files', 'suite_end_cleaned'])


if __name__ == '__main__':
    main()
