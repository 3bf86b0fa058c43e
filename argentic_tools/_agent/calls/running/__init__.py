"""Running calls: the runner, the pending table, delivery of tasks and cancellations.

The top room of the calls, beside :mod:`..batches`: a call checked, sent, awaited and
ended here, with a change in the fleet applied to the calls in flight. It builds on
every room below.
"""
