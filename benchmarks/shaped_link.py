"""A shaped loopback link: a TCP proxy with a per-connection rate, an aggregate cap and a round-trip delay.

Why: on loopback every upload is instant, so parallelism cannot show. A long-haul
upload to PyPI is limited per TCP connection (about 1-1.5 MB/s) and by the uplink
as a whole, and each request pays a round trip. This proxy reproduces the three:
bytes of each connection pass through a token bucket of `rate` bytes/s, all
connections share a bucket of `aggregate` bytes/s, and every chunk is delivered
`rtt / 2` after it was read (a new connection also waits one `rtt` before it is
connected, as a TCP handshake would). Both directions are shaped.

    with ShapedLink(("127.0.0.1", 8080), rate=1.5e6, aggregate=12e6, rtt=0.04) as link:
        link.url  # http://127.0.0.1:<port>
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

CHUNK = 16 * 1024


class Bucket:
    """A token bucket that lets a taker run into debt and then waits it off: fair among takers."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst, self.tokens, self.stamp = rate, burst, burst, time.monotonic()

    async def take(self, n: int) -> None:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        self.tokens -= n
        if self.tokens < 0:
            await asyncio.sleep(-self.tokens / self.rate)


class ShapedLink:
    """Context manager: the proxy runs on its own event loop thread; `url` is its address."""

    def __init__(
        self, upstream: tuple[str, int], rate: float = 1.5e6, aggregate: float = 12e6, rtt: float = 0.04
    ) -> None:
        self.upstream, self.rate, self.aggregate, self.rtt = upstream, rate, aggregate, rtt
        self.port = 0
        self.connections = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="shaped-link")
        self._server: asyncio.AbstractServer | None = None
        self._shared: dict[str, Bucket] = {}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ShapedLink:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _start(self) -> None:
        burst = max(CHUNK, self.aggregate * 0.01)
        self._shared = {"up": Bucket(self.aggregate, burst), "down": Bucket(self.aggregate, burst)}
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
            task.cancel()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.CancelledError):  # the link closing under open connections
            await self._relay(reader, writer)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        await asyncio.sleep(self.rtt)  # the handshake's round trip
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        burst = max(CHUNK, self.rate * 0.01)
        await asyncio.gather(
            self._pump(reader, up_writer, Bucket(self.rate, burst), self._shared["up"]),
            self._pump(up_reader, writer, Bucket(self.rate, burst), self._shared["down"]),
            return_exceptions=True,
        )
        for w in (writer, up_writer):
            with contextlib.suppress(OSError, RuntimeError):
                w.close()

    async def _pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, own: Bucket, shared: Bucket) -> None:
        """Read, pay both buckets, deliver half a round trip later, in order."""
        queue: asyncio.Queue = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                if data is None:
                    with contextlib.suppress(OSError):
                        dst.write_eof()
                    return
                dst.write(data)
                await dst.drain()

        sender = asyncio.create_task(deliver())
        try:
            while True:
                data = await src.read(CHUNK)
                if not data:
                    break
                await own.take(len(data))
                await shared.take(len(data))
                await queue.put((time.monotonic() + self.rtt / 2, data))
            await queue.put((time.monotonic() + self.rtt / 2, None))
            await sender
        except (OSError, asyncio.CancelledError):
            sender.cancel()
            with contextlib.suppress(OSError, RuntimeError):
                dst.close()  # one side failed: the other must see the connection go
