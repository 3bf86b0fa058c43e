"""The floor's responder: ``python -m benchmarks.floor_responder --port N --prefix P``.

The smallest correct aiomqtt responder: subscribed to ``P/req/+`` (QoS 1), it answers
each request on ``P/resp/<topic id>`` (QoS 1) with the correlation id from the JSON
payload and the message echoed back. One task per reply, so replies are not serialised
behind each other's PUBACK.
"""

import argparse
import asyncio
import contextlib
import json
import signal

from benchmarks._floor_common import client


async def serve(port: int, prefix: str) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    replies: set[asyncio.Task[None]] = set()
    async with client(port, "responder") as mqtt:
        await mqtt.subscribe(f"{prefix}/req/+", qos=1)

        async def reply(topic: str, payload: bytes) -> None:
            await mqtt.publish(topic, payload, qos=1)

        async def read() -> None:
            async for message in mqtt.messages:
                request = json.loads(message.payload)
                topic_id = message.topic.value.rsplit("/", 1)[1]
                body = json.dumps({"id": request["id"], "result": request["message"]})
                task = asyncio.create_task(reply(f"{prefix}/resp/{topic_id}", body.encode()))
                replies.add(task)
                task.add_done_callback(replies.discard)

        reader = asyncio.create_task(read())
        await stop.wait()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader


def main() -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.floor_responder")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--prefix", required=True)
    args = parser.parse_args()
    asyncio.run(serve(args.port, args.prefix))


if __name__ == "__main__":
    main()
