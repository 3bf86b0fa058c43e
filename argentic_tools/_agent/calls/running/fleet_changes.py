"""What a change in the fleet means for the calls in flight: :func:`apply_change`.

:class:`~...fleet.membership.Membership` decides what a registration, a removal or a
process's Last Will changes (a :data:`~...fleet.changes.Change`); here that change
reaches the pending calls: a tool instance's window resized, tasks a reconnected tool
lost sent again, calls to a tool that went offline ended at once.
"""

import logging

from ...._logging import InstanceLogger
from ...fleet.changes import Admitted, Change, ProcessGone, Removed
from .book import CallBook
from .delivery import Delivery


def apply_change(
    change: Change,
    calls: CallBook,
    delivery: Delivery,
    logger: "logging.Logger | InstanceLogger",
) -> None:
    """Do what ``change`` means for the calls in ``calls`` (sending again through ``delivery``)."""
    if isinstance(change, Admitted):
        entry = change.entry
        calls.admitted(entry)
        if change.resend == "all":
            waiting = calls.sent_to(entry.info.id)
            if waiting:
                logger.info(
                    "tool %r (%s) reconnected; sending %d pending task(s) again",
                    entry.info.name,
                    entry.info.id,
                    len(waiting),
                )
        elif change.resend == "lost":
            waiting = calls.lost(entry)
        else:
            return
        for call in waiting:
            delivery.resend(call)
    elif isinstance(change, Removed):
        tool_id = change.entry.info.id
        calls.drop_lost(tool_id)
        if change.offline:
            calls.fail(lambda call: call.tool_id == tool_id)
    elif isinstance(change, ProcessGone):
        source, owner = change.source, change.owner
        calls.fail(lambda call: call.source == source and call.entry.info.owner == owner)
