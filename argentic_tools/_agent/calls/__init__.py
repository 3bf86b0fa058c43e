"""One call from its check to its one result.

Call options, the runner, the pending table, delivery, flow control, progress, streams
and the results built on the caller's side.
"""
