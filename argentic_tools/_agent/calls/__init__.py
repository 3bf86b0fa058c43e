"""One call from its check to its one result.

Its rooms import one way, from the top down: ``batches/`` (many calls at once) and
``running/`` (the runner, the pending table, delivery, cancellations, fleet changes),
``restart/`` (calls waited for again after a restart), ``results/`` (the results built on
the caller's side, streams) and ``settings/`` (call options, checks, arguments),
``pending/`` (one call's spec and state, flow control, progress) and
``participation/`` (the caller's handlers, a call's handlers at work).
"""
