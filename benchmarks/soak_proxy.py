"""A TCP relay whose connections can be cut: ``python -m benchmarks.soak_proxy LISTEN UPSTREAM``.

Clients that connect to 127.0.0.1:LISTEN are relayed to 127.0.0.1:UPSTREAM (the broker).
On SIGUSR1 every open connection is reset at once, as a network failure would do it:
neither side gets an MQTT DISCONNECT, so the broker publishes the client's Last Will and
the client has to notice and reconnect. The relay keeps listening; new connections work.
TCP_NODELAY is set on both sides so the relay adds no Nagle stall.
"""

import asyncio
import signal
import socket
import struct
import sys

_CHUNK = 65536


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


def _nodelay(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


async def serve(listen: int, upstream: int) -> None:
    open_writers: set[asyncio.StreamWriter] = set()

    async def relay(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            broker_r, broker_w = await asyncio.open_connection("127.0.0.1", upstream)
        except OSError:
            client_w.transport.abort()  # broker down: the client retries later
            return
        pair = {client_w, broker_w}
        for writer in pair:
            _nodelay(writer)
        open_writers.update(pair)
        try:
            await asyncio.gather(_pipe(client_r, broker_w), _pipe(broker_r, client_w))
        finally:
            open_writers.difference_update(pair)

    def cut() -> None:
        for writer in list(open_writers):
            sock = writer.get_extra_info("socket")
            if sock is not None:  # linger 0: close with a RST, as a dropped link ends
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        open_writers.clear()

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, cut)
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    server = await asyncio.start_server(relay, "127.0.0.1", listen)
    async with server:
        await stop.wait()
    cut()


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        sys.exit("usage: python -m benchmarks.soak_proxy LISTEN_PORT UPSTREAM_PORT")
    asyncio.run(serve(int(argv[0]), int(argv[1])))


if __name__ == "__main__":
    main(sys.argv[1:])
