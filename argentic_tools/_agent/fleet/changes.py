"""What a change in the fleet is, for the calls in flight: :data:`Change`.

:class:`~.membership.Membership` decides; these say what its decision changed for the
calls in flight, and :func:`~..calls.running.fleet_changes.apply_change` does it.
"""

from dataclasses import dataclass
from typing import Literal

from .info import Entry


@dataclass(frozen=True, slots=True)
class Admitted:
    """A tool instance was admitted, new or again: its advertised limit applies from now.

    ``resend`` says which of its calls' tasks to send again: ``"lost"``, those that
    went out on a connection of ours older than the registration (a broker restart
    lost them); ``"all"``, every task it has not answered (its own process
    reconnected, and its broker node may have died with the tasks queued for it);
    ``"none"`` for a new instance. A tool runs a task id once: for a task it already
    ran it sends the recorded result again, and it ignores one still running.
    """

    entry: Entry
    resend: Literal["none", "lost", "all"]


@dataclass(frozen=True, slots=True)
class Removed:
    """A tool instance left the registry; ``offline``: its process died, so its calls end."""

    entry: Entry
    offline: bool


@dataclass(frozen=True, slots=True)
class ProcessGone:
    """A process's Last Will counted: calls to its tools (``source`` under ``owner``) end."""

    source: str | None
    owner: str | None


Change = Admitted | Removed | ProcessGone
"""What a register-topic message changed for the calls in flight."""
