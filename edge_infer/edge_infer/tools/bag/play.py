# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Play a rosbag2 folder with rclpy, publishing the stored CDR bytes as they are.

Messages are read with ``rosbags`` and handed to ``Publisher.publish(bytes)``,
which rclpy (Jazzy and later) publishes as already-serialized data: nothing
is deserialized, so replay is lossless and cheap. Publishing is paced by the
bag's log times (scaled by ``rate``). Message classes for the publishers come
from the installed ROS interface packages (``sensor_msgs.msg.Image`` for
``sensor_msgs/msg/Image``).

As every process edge_infer starts, the command exports the Fast DDS profile
for camera-sized samples (config/fastdds_large_frames.xml) unless
FASTRTPS_DEFAULT_PROFILES_FILE is set, and keeps discovery on this machine
unless ROS_AUTOMATIC_DISCOVERY_RANGE is set (:func:`edge_infer.procs.use_ros_env_here`).

Example::

    python -m edge_infer.tools.bag.play out/vtest_bag --rate 1 --qos reliable
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import pathlib
import sys
import time
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

from edge_infer import procs
from edge_infer.core.bag_read import bag_info, iter_bag_frames
import rclpy
from rclpy.duration import Duration
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, qos_profile_sensor_data, QoSProfile,
                       ReliabilityPolicy)

try:  # RCLError is what a failed rcl_publish raises.
    from rclpy._rclpy_pybind11 import RCLError
except ImportError:  # pragma: no cover - layout of other rclpy releases
    RCLError = RuntimeError

Log = Callable[[str], object]

QOS_CHOICES = ('sensor_data', 'reliable')


class PlayError(RuntimeError):
    """Raised for a bag that cannot be played (missing, unknown type or topic)."""


def qos_profile(name: str) -> QoSProfile:
    """Return the publisher QoS for ``'sensor_data'`` or ``'reliable'``."""
    if name == 'sensor_data':
        return qos_profile_sensor_data  # best effort, keep last 5, volatile
    if name == 'reliable':
        return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                          reliability=ReliabilityPolicy.RELIABLE,
                          durability=DurabilityPolicy.VOLATILE)
    raise PlayError(f'unknown qos {name!r}; choose one of {QOS_CHOICES}')


def message_class(msgtype: str) -> type:
    """Import the message class for a type name such as ``sensor_msgs/msg/Image``."""
    parts = msgtype.split('/')
    if len(parts) != 3:
        raise PlayError(f'malformed message type name {msgtype!r}')
    package, kind, name = parts
    try:
        module = importlib.import_module(f'{package}.{kind}')
        return getattr(module, name)
    except (ImportError, AttributeError) as exc:
        raise PlayError(f'message type {msgtype} is not installed (install the ROS package '
                        f'{package}, or leave its topics out with --topics)') from exc


def parse_remaps(items: Sequence[str]) -> dict[str, str]:
    """Parse ``from:=to`` strings into a mapping."""
    remap = {}
    for item in items:
        source, sep, target = item.partition(':=')
        if not sep or not source or not target:
            raise PlayError(f'bad remap {item!r}; expected FROM:=TO')
        remap[source] = target
    return remap


class BagPlayer:
    """Publishes the messages of one rosbag2 folder on a node; see :func:`play_bag`."""

    def __init__(self, bag_dir: str | os.PathLike, node: Node, rate: float = 1.0,
                 loop: bool = False, topics: Sequence[str] | None = None,
                 remap: Mapping[str, str] | None = None, qos: str = 'sensor_data',
                 log: Log = print) -> None:
        """Check the bag and create one publisher per (remapped) topic."""
        self.bag_dir = pathlib.Path(bag_dir)
        if not (self.bag_dir / 'metadata.yaml').is_file():
            raise PlayError(f'{self.bag_dir} is not a rosbag2 folder (no metadata.yaml)')
        if rate < 0:
            raise PlayError(f'rate must be >= 0 (0: as fast as possible), got {rate}')
        self.node = node
        self.rate = rate
        self.loop = loop
        self.log = log
        info = bag_info(self.bag_dir)
        available = info['topics']
        if topics:
            unknown = sorted(set(topics) - set(available))
            if unknown:
                raise PlayError(f'topics not in the bag: {", ".join(unknown)}; '
                                f'the bag has {", ".join(sorted(available))}')
            self.topics = list(dict.fromkeys(topics))
        else:
            self.topics = sorted(available)
        remap = dict(remap or {})
        self.out_topic = {t: remap.get(t, t) for t in self.topics}
        profile = qos_profile(qos)
        self._pace_by_acks = rate == 0 and profile.reliability == ReliabilityPolicy.RELIABLE
        self._ack_every = max(1, profile.depth // 2)
        self._ack_timeout = Duration(seconds=1)
        self._unacked = dict.fromkeys(self.topics, 0)
        self.publishers = {}
        for topic in self.topics:
            msgtype = available[topic]['type']
            if msgtype is None:
                raise PlayError(f'topic {topic} carries several message types')
            self.publishers[topic] = node.create_publisher(
                message_class(msgtype), self.out_topic[topic], profile)
        self.stats: Dict[str, Any] = {
            'published': {self.out_topic[t]: 0 for t in self.topics},
            'messages': 0, 'publish_errors': 0, 'dropped': 0, 'loops': 0,
            'max_late_s': 0.0, 'elapsed_s': 0.0, 'interrupted': False}

    def wait_for_subscribers(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for a subscriber on every topic; True if all have one."""
        deadline = time.monotonic() + timeout
        while True:
            lonely = [self.out_topic[t] for t, pub in self.publishers.items()
                      if pub.get_subscription_count() < 1]
            if not lonely:
                return True
            if time.monotonic() >= deadline or not rclpy.ok(context=self.node.context):
                self.log(f'play: no subscriber after {timeout:g} s on {", ".join(lonely)}')
                return False
            time.sleep(0.02)

    def _publish(self, topic: str, data: bytes) -> bool:
        publisher = self.publishers[topic]
        for _ in range(2):  # Fast DDS sometimes refuses a reliable write: retry once.
            try:
                publisher.publish(data)
            except RCLError:
                if not rclpy.ok(context=self.node.context):
                    return False  # shutting down (Ctrl-C): not a publish failure
                self.stats['publish_errors'] += 1
                continue
            if self._pace_by_acks:
                # As fast as possible, yet lossless for reliable subscribers: before
                # the keep-last history could overwrite unacknowledged messages, wait
                # until the subscribers hold them.
                self._unacked[topic] += 1
                if self._unacked[topic] >= self._ack_every:
                    publisher.wait_for_all_acked(self._ack_timeout)
                    self._unacked[topic] = 0
            return True
        self.stats['dropped'] += 1
        return False

    def play(self, start_delay: float = 0.0, linger: float = 0.0) -> dict:
        """Publish the bag (repeatedly if looping) and return the stats.

        The stats are also kept in ``self.stats`` while playing, so they stay
        available when a ``KeyboardInterrupt`` ends the call. ``linger``: see
        :meth:`linger`.
        """
        context = self.node.context
        if start_delay > 0:
            time.sleep(start_delay)
        started = time.monotonic()
        stats = self.stats
        published = stats['published']
        base_wall = started
        gap_ns = 0
        try:
            while rclpy.ok(context=context):
                first_ns: Optional[int] = None
                prev_ns: Optional[int] = None
                for topic, _, stamp, data in iter_bag_frames(self.bag_dir, self.topics):
                    if first_ns is None:
                        first_ns = stamp
                    if prev_ns is not None and stamp > prev_ns and not gap_ns:
                        gap_ns = stamp - prev_ns  # spacing used between loops
                    prev_ns = stamp
                    if self.rate > 0:
                        target = base_wall + (stamp - first_ns) / 1e9 / self.rate
                        delay = target - time.monotonic()
                        if delay > 0:
                            time.sleep(delay)
                        else:
                            stats['max_late_s'] = max(stats['max_late_s'], -delay)
                    if not rclpy.ok(context=context):
                        stats['interrupted'] = True
                        break
                    if self._publish(topic, data):
                        published[self.out_topic[topic]] += 1
                        stats['messages'] += 1
                stats['loops'] += 1
                if not self.loop or first_ns is None or prev_ns is None or stats['interrupted']:
                    break
                if self.rate > 0:  # next pass starts one frame period after this one
                    span = (prev_ns - first_ns + gap_ns) / 1e9 / self.rate
                    base_wall = max(time.monotonic(), base_wall + span)
                else:
                    base_wall = time.monotonic()
            else:
                stats['interrupted'] = True
        finally:
            stats['elapsed_s'] = time.monotonic() - started
        self.flush()
        if not stats['interrupted']:
            self.linger(linger)
        return stats

    def linger(self, seconds: float) -> None:
        """Keep the publishers up ``seconds`` more, for best-effort subscribers.

        A best-effort subscriber acknowledges nothing, so :meth:`flush` cannot
        wait for it. Fast DDS hands a large sample over as fragments in the
        writer's shared-memory segment; a subscriber whose process is busy reads
        them later, and once the writer is gone they may be gone too (rosbag2
        issue #571 is the same loss). Measured here: three 512x512 frames 0.1 s
        apart to a subscriber held up (SIGSTOP) ~0.5 s from the first one on
        lost frames in 4 of 6 plays without lingering and in 0 of 6 with it
        (test_bag_tools); held up ~1.5 s, it lost frames in 2 of 6 plays even
        with lingering. Interrupted by Ctrl-C.
        """
        if seconds <= 0:
            return
        self.log(f'play: done; publishers kept up {seconds:g} s for busy best-effort '
                 'subscribers (--linger)')
        deadline = time.monotonic() + seconds
        while rclpy.ok(context=self.node.context) and time.monotonic() < deadline:
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    def flush(self, timeout: float = 2.0) -> bool:
        """Wait up to ``timeout`` s until reliable subscribers acknowledged everything."""
        deadline = time.monotonic() + timeout
        acked = True
        for publisher in self.publishers.values():
            left = max(0.0, deadline - time.monotonic())
            if not rclpy.ok(context=self.node.context):
                return False
            acked = publisher.wait_for_all_acked(Duration(nanoseconds=int(left * 1e9))) and acked
        return acked


def play_bag(bag_dir: str | os.PathLike, node: Node | None = None, rate: float = 1.0,
             loop: bool = False, topics: Sequence[str] | None = None,
             remap: Mapping[str, str] | None = None, qos: str = 'sensor_data',
             start_delay: float = 0.5, wait_for_subscribers: float = 0.0,
             linger: float = 1.0, log: Log = print) -> dict:
    """Publish a rosbag2 folder's messages as stored, paced by their log times.

    :param bag_dir: rosbag2 folder (mcap or sqlite3).
    :param node: node to publish from; default: a temporary ``bag_player`` node
        (rclpy is initialized and shut down here if it was not initialized).
    :param rate: playback speed factor; 0 publishes as fast as possible (with
        ``'reliable'``: as fast as the subscribers acknowledge, up to 1 s each).
    :param loop: start over at the end (until interrupted).
    :param topics: bag topics to play (default: all).
    :param remap: bag topic -> published topic.
    :param qos: ``'sensor_data'`` (best effort, keep last 5) or ``'reliable'``.
    :param start_delay: seconds to wait after creating the publishers.
    :param wait_for_subscribers: wait up to this many seconds for at least one
        subscriber on every topic before starting.
    :param linger: seconds to keep the publishers up after the last message,
        so that busy best-effort subscribers still read it (:meth:`BagPlayer.linger`).
    :param log: callable receiving progress lines.
    :returns: stats: ``published`` (topic -> count), ``messages``,
        ``publish_errors``, ``dropped``, ``loops``, ``max_late_s``,
        ``elapsed_s``, ``interrupted``.
    :raises PlayError: not a bag, unknown topic, or message type not installed.
    """
    own_init = own_node = False
    if node is None:
        if not rclpy.ok():
            procs.use_ros_env_here()
            rclpy.init()
            own_init = True
        node = rclpy.create_node('bag_player')
        own_node = True
    try:
        player = BagPlayer(bag_dir, node, rate=rate, loop=loop, topics=topics, remap=remap,
                           qos=qos, log=log)
        if wait_for_subscribers > 0:
            player.wait_for_subscribers(wait_for_subscribers)
        return player.play(start_delay=start_delay, linger=linger)
    finally:
        if own_node:
            node.destroy_node()
        if own_init:
            rclpy.try_shutdown()


def split_ros_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split ``argv`` into this tool's arguments and a ``--ros-args ... [--]`` section.

    Only an explicit ``--ros-args`` section goes to rclpy: the legacy bare
    ``from:=to`` form would otherwise take this tool's ``--remap`` values.
    """
    ours: list[str] = []
    ros: list[str] = []
    inside = False
    for arg in argv:
        if arg == '--ros-args':
            inside = True
            ros.append(arg)
        elif inside and arg == '--':
            inside = False
        else:
            (ros if inside else ours).append(arg)
    return ours, ros


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='python -m edge_infer.tools.bag.play',
        description='Publish the messages of a rosbag2 folder (mcap or sqlite3) with rclpy, '
                    'as stored (raw CDR), paced by their log times.',
        epilog='Large images between processes: FASTDDS_BUILTIN_TRANSPORTS=LARGE_DATA lowers '
               'latency. ROS arguments may follow --ros-args.')
    parser.add_argument('bag', type=pathlib.Path, help='rosbag2 folder')
    parser.add_argument('--rate', type=float, default=1.0,
                        help='speed factor, 0 = as fast as possible (%(default)s)')
    parser.add_argument('--loop', action='store_true', help='start over at the end')
    parser.add_argument('--topics', nargs='+', metavar='TOPIC', help='bag topics to play')
    parser.add_argument('--remap', nargs='+', default=[], metavar='FROM:=TO',
                        help='publish bag topic FROM on TO')
    parser.add_argument('--qos', choices=QOS_CHOICES, default='sensor_data',
                        help='publisher QoS (%(default)s: best effort, keep last 5)')
    parser.add_argument('--wait-for-subscribers', type=float, default=0.0, metavar='SEC',
                        help='wait up to SEC for a subscriber on every topic')
    parser.add_argument('--start-delay', type=float, default=0.5, metavar='SEC',
                        help='pause after creating the publishers (%(default)s)')
    parser.add_argument('--linger', type=float, default=1.0, metavar='SEC',
                        help='keep publishing up SEC after the last message, so busy '
                             'best-effort subscribers still read it (%(default)s)')
    parser.add_argument('-q', '--quiet', action='store_true', help='print only the summary')
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the process exit code."""
    ours, ros_args = split_ros_args(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    args = parser.parse_args(ours)
    log = (lambda _: None) if args.quiet else functools.partial(print, flush=True)
    try:
        remap = parse_remaps(args.remap)
    except PlayError as exc:
        parser.error(str(exc))
    if args.linger < 0:
        parser.error(f'--linger must be >= 0 seconds, got {args.linger:g}')
    # Before the first participant: Fast DDS reads its profile once per process,
    # and without the large-frame one most camera frames never arrive.
    procs.use_ros_env_here()
    rclpy.init(args=['play'] + ros_args)
    node = None
    player = None
    try:
        node = rclpy.create_node('bag_player')
        player = BagPlayer(args.bag, node, rate=args.rate, loop=args.loop, topics=args.topics,
                           remap=remap, qos=args.qos, log=log)
        log(f'play: {args.bag} -> {", ".join(player.out_topic.values())} '
            f'at rate {args.rate:g} ({args.qos})')
        if args.wait_for_subscribers > 0:
            player.wait_for_subscribers(args.wait_for_subscribers)
        player.play(start_delay=args.start_delay, linger=args.linger)
    except PlayError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    except (KeyboardInterrupt, ExternalShutdownException):
        if player is not None:
            player.stats['interrupted'] = True
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    if player is None:
        return 0
    stats = player.stats
    extra = f', {stats["publish_errors"]} publish errors, {stats["dropped"]} dropped' \
        if stats['publish_errors'] else ''
    note = ', interrupted' if stats['interrupted'] else ''
    rate = stats['messages'] / stats['elapsed_s'] if stats['elapsed_s'] > 0 else 0.0
    print(f'published {stats["messages"]} messages on {len(stats["published"])} topics in '
          f'{stats["elapsed_s"]:.2f} s ({rate:.1f} msg/s{extra}{note})', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
