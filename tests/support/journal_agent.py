"""An agent process with a call journal: ``python -m tests.support.journal_agent MODE ...``.

``start``: make ``--calls`` calls of ``counted`` (each ``--seconds`` long) under labels
``job-0`` ... and print ``sent`` once every task is out, then wait (a test kills it).
``resume``: start a manager on the same journal and client id, and print each reattached
call's result as a JSON line, then ``done``.
"""

import argparse
import asyncio
import json
import sys

from argentic_tools import InMemoryRecorder, Messager, ToolManager, Topics


async def main(argv: list[str]) -> None:
    """Run the agent in the given mode."""
    parser = argparse.ArgumentParser(prog="tests.support.journal_agent")
    parser.add_argument("mode", choices=["start", "resume"])
    parser.add_argument("--broker", required=True)
    parser.add_argument("--topic-prefix", required=True)
    parser.add_argument("--journal", required=True)
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--directory", default="")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args(argv)
    topics = Topics.with_prefix(args.topic_prefix)
    recorder = InMemoryRecorder()
    async with (
        Messager(args.broker, client_id=args.client_id) as messager,
        ToolManager(messager, topics=topics, journal=args.journal, recorder=recorder) as manager,
    ):
        if args.mode == "start":
            await manager.wait_for_tool("counted", timeout=20)
            calls = [
                asyncio.create_task(
                    manager.execute_tool(
                        "counted",
                        {"label": f"job-{i}", "seconds": args.seconds, "directory": args.directory},
                        f"job-{i}",
                        timeout=120,
                    )
                )
                for i in range(args.calls)
            ]
            while sum(1 for p in manager._calls.pending.values() if p.published) < args.calls:
                await asyncio.sleep(0.01)
            print("sent", flush=True)
            await asyncio.gather(*calls)
            print("finished before being killed", flush=True)
            return
        async for result in manager.reattached():
            print(json.dumps(result.model_dump(mode="json", exclude_none=True)), flush=True)
        await manager.flush_observations()
        marked = sum(1 for o in recorder.observations if o.reattached)
        print(f"{marked} observed as reattached", flush=True)
        print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
