"""What the gateway's HTTP guards share: a request's body read whole, handed on, answered.

A guard that must see a request's JSON-RPC body before deciding (the team guard's rate
limits and views, the stop guard's refusals) reads it with :func:`read_body`, lets the
app read it again with :func:`replay`, or answers at once with :func:`send_response`.
"""

from starlette.types import Message, Receive, Send


async def send_response(
    send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes
) -> None:
    """Answer with ``status``, ``headers`` (plus the body's length) and ``body``."""
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def read_body(receive: Receive) -> bytes:
    """The request's whole body (what came, if the client left before the end)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once more, then whatever comes (a disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
