# Copyright 2026 edge_infer contributors. Apache-2.0.
"""DDS discovery: how soon a process that starts gets a message from one already running.

    ./run.sh exec python bench/probes/dds_discovery.py [--starts 10]

A publisher (std_msgs/String every 10 ms) runs in its own process; then,
``--starts`` times, a fresh subscriber process starts, and the time from its
node's creation to its first message is recorded. Per Fast DDS profile,
interleaved: ``ros default`` (no profile, ROS's discovery range), and
edge_infer's two profiles with ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``
as the edge_infer commands set it. This is what a launch waits for before
its first frame arrives (the camera runs already), and what a tool started
later waits for before it sees the container's results (docs/transport.md).
Writes dds_discovery.md under bench/results/<machine>/.
"""

import argparse
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import benchlib
from edge_infer import paths, procs

PUBLISH = r"""
import time, rclpy
from std_msgs.msg import String
rclpy.init(); n = rclpy.create_node('pub'); p = n.create_publisher(String, '/x', 10)
m = String(); m.data = 'a'
while True:
    p.publish(m); time.sleep(0.01)
"""
SUBSCRIBE = r"""
import time, rclpy
from std_msgs.msg import String
rclpy.init(); node = rclpy.create_node('probe'); t1 = time.monotonic(); got = []
node.create_subscription(String, '/x', lambda m: got.append(time.monotonic()), 10)
ex = rclpy.executors.SingleThreadedExecutor(); ex.add_node(node)
while not got and time.monotonic() - t1 < 10:
    ex.spin_once(timeout_sec=0.005)
print(f'{got[0] - t1:.3f}' if got else 'nan')
"""
PROFILES = {
    'ros default': None,
    'fastdds_large_frames.xml': 'fastdds_large_frames.xml',
    'fastdds_container.xml': 'fastdds_container.xml',
    # the large-frame profile as it was before it set leaseAnnouncement (Fast DDS's 3 s)
    'fastdds_large_frames.xml, 3 s announcements': 'WITHOUT_ANNOUNCEMENT',
}


def without_announcement(folder: pathlib.Path) -> pathlib.Path:
    """Write the large-frame profile less its <builtin> block (the period) into ``folder``."""
    text = (paths.config_dir() / 'fastdds_large_frames.xml').read_text()
    text = re.sub(r'\s*<builtin>.*?</builtin>', '', text, flags=re.S)
    out = folder / 'fastdds_large_frames_3s.xml'
    out.write_text(text)
    return out


def env_for(profile, domain: int) -> dict:
    """Return the environment of both processes under ``profile`` (None: ROS's defaults)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('FASTRTPS', 'FASTDDS', 'ROS_AUTOMATIC', 'ROS_LOCALHOST'))}
    env['ROS_DOMAIN_ID'] = str(domain)
    if profile is not None:
        env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
        env['FASTRTPS_DEFAULT_PROFILES_FILE'] = str(profile if isinstance(profile, pathlib.Path)
                                                    else paths.config_dir() / profile)
    return env


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--starts', type=int, default=10)
    ap.add_argument('--machine', default=None)
    args = ap.parse_args()
    res = benchlib.Results('dds_discovery', 'DDS discovery: a new subscriber, a running '
                           'publisher: start -> first message', 'product (start-up time)',
                           machine=args.machine)
    load0 = os.getloadavg()[0]
    pubs = {}
    folder = pathlib.Path(tempfile.mkdtemp(prefix='dds_discovery_'))
    try:
        for k, (name, profile) in enumerate(PROFILES.items()):
            if profile == 'WITHOUT_ANNOUNCEMENT':
                profile = without_announcement(folder)
            env = env_for(profile, procs.free_domain_id(os.getpid() + k))
            pubs[name] = (subprocess.Popen([sys.executable, '-c', PUBLISH], env=env), env)
        time.sleep(2.0)     # every publisher up and announced at least once
        for i in range(args.starts):        # interleaved: one start per profile per round
            for name, (_, env) in pubs.items():
                out = subprocess.run([sys.executable, '-c', SUBSCRIBE], env=env,
                                     capture_output=True, text=True, timeout=60)
                lines = out.stdout.strip().splitlines()
                res.add(profile=name, start=i, first_s=float(lines[-1]) if lines else
                        float('nan'))
    finally:
        for proc, _ in pubs.values():
            proc.kill()
        shutil.rmtree(folder, ignore_errors=True)
    summary = []
    for name in PROFILES:
        vals = sorted(r['first_s'] for r in res.rows if r['profile'] == name)
        p90 = vals[min(len(vals) - 1, int(round(0.9 * (len(vals) - 1))))]
        summary.append({'profile': name, 'starts': len(vals), 'median_s': statistics.median(vals),
                        'p90_s': p90, 'min_s': vals[0], 'max_s': vals[-1]})
        print(f'{name:44s} median {summary[-1]["median_s"]:.2f} s, p90 {p90:.2f}, '
              f'max {vals[-1]:.2f} ({len(vals)} starts)')
    res.note(f'{args.starts} subscriber starts per profile, interleaved; publisher at 100 Hz '
             f'started 2 s before; load average at start {load0:.2f}. The edge_infer profiles '
             f'announce every 0.25 s (leaseAnnouncement); ROS default: Fast DDS 3 s.')
    res.write(['profile', 'starts', 'median_s', 'p90_s', 'min_s', 'max_s'],
              ['profile', 'starts', 'median (s)', 'p90 (s)', 'min (s)', 'max (s)'],
              md_rows=summary)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
