# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A TCP proxy that delays what the server sends back: a slow network, without tc netem.

    with DelayProxy('127.0.0.1', server_port) as proxy:    # listens on a free port
        proxy.delay(40, jitter_ms=5)     # every answer 40-45 ms later
        ...
        proxy.delay(0)                          # the network is fast again

Each chunk the server sends is held until ``delay + uniform(0, jitter)`` after
it arrived, in order (a later chunk never overtakes an earlier one), so one
gRPC round trip takes ``delay`` to ``delay + jitter`` longer. The request
direction is passed on at once. The proxy runs an asyncio loop in a thread;
the settings may change at any time and apply to chunks arriving after.
"""

import asyncio
import random
import threading
import time
from typing import Optional


class DelayProxy:
    """Forward ``listen_host:port`` to ``host:port``, the answers delayed."""

    def __init__(self, host: str, port: int, listen_host: str = '127.0.0.1',
                 seed: int = 0):
        self.host, self.port, self.listen_host = host, int(port), listen_host
        self.listen_port = 0
        self.delay_s = 0.0
        self.jitter_s = 0.0
        self.chunks = 0         # chunks passed back (a test reads it: traffic went through)
        self._rng = random.Random(seed)
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._server: Optional[asyncio.base_events.Server] = None
        self._thread: Optional[threading.Thread] = None
        self._ready = threading.Event()

    def delay(self, delay_ms: float, jitter_ms: float = 0.0) -> None:
        """Delay answers by ``delay_ms`` plus up to ``jitter_ms`` from now on."""
        self.delay_s, self.jitter_s = delay_ms / 1e3, jitter_ms / 1e3

    def __enter__(self) -> 'DelayProxy':
        self._thread = threading.Thread(target=self._run, name='delay-proxy', daemon=True)
        self._thread.start()
        if not self._ready.wait(10.0):
            raise RuntimeError('delay proxy did not start')
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop listening, drop the connections, end the thread."""
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5.0)

    def _run(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        self._server = loop.run_until_complete(asyncio.start_server(
            self._client, self.listen_host, 0))
        self.listen_port = int(self._server.sockets[0].getsockname()[1])
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            self._server.close()
            for task in asyncio.all_tasks(loop):
                task.cancel()
            loop.run_until_complete(asyncio.sleep(0))
            loop.close()

    async def _client(self, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        except OSError:
            writer.close()
            return
        queue: asyncio.Queue = asyncio.Queue()
        tasks = [asyncio.ensure_future(self._pass(reader, up_writer)),
                 asyncio.ensure_future(self._hold(up_reader, queue)),
                 asyncio.ensure_future(self._release(queue, writer))]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the proxy closes
            pass
        for task in tasks:
            task.cancel()
        for w in (writer, up_writer):
            w.close()

    @staticmethod
    async def _pass(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                return
            writer.write(data)
            await writer.drain()

    async def _hold(self, reader: asyncio.StreamReader, queue: asyncio.Queue) -> None:
        last = 0.0
        while True:
            data = await reader.read(1 << 16)
            if not data:
                await queue.put(None)
                return
            due = time.monotonic() + self.delay_s + self._rng.uniform(0.0, self.jitter_s)
            last = max(last, due)       # in order: never before the chunk ahead of it
            await queue.put((last, data))

    async def _release(self, queue: asyncio.Queue, writer: asyncio.StreamWriter) -> None:
        while True:
            item = await queue.get()
            if item is None:
                return
            due, data = item
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            self.chunks += 1
            await writer.drain()
