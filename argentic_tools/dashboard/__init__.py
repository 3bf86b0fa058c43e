"""A live dashboard of the fleet in a browser: ``argentic-tools dashboard`` (``[dashboard]`` extra).

One page, no front-end build: counters (calls per second, outcomes, calls in
flight), the fleet (each tool, its replicas, their processes, latency, errors,
online or offline as processes come and go), the calls as they happen on the bus
(any manager's, with their arguments, results, errors and trace ids), a latency
chart per tool, and a form to call any tool with its schema's fields. The server
pushes every change to the page over server-sent events.

- :mod:`.server`: :class:`Dashboard`, the routes and the background work;
- :mod:`.calls`: calls seen on the bus, matched to their results, counted, timed;
- :mod:`.fleet`: the registry and the processes' stats joined into one view;
- :mod:`.events`: the event stream and its fan-out to pages;
- :mod:`.access`: loopback by default, a token when exposed, same-origin writes;
- ``static/``: the page, its script and its style sheet.
"""

from .access import bind_problem, is_loopback, new_token
from .server import Dashboard

__all__ = ["Dashboard", "bind_problem", "is_loopback", "new_token"]
