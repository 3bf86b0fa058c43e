"""Publishing what nobody waits on: status replies, cancellations, tasks sent again."""

import asyncio
import logging
from typing import Any

from .._errors import BrokerError
from .._logging import InstanceLogger
from .._transport import Messager


async def publish_quietly(
    messager: Messager,
    logger: "logging.Logger | InstanceLogger",
    topic: str,
    message: Any,
) -> None:
    """Publish within 10 s, or log why not: for messages nobody waits on."""
    try:
        async with asyncio.timeout(10):
            await messager.publish(topic, message)
    except (TimeoutError, BrokerError) as exc:
        logger.warning("could not publish %s: %s", getattr(message, "type", "a task"), exc)
