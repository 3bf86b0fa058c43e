"""A pending call: what was asked, what waits, and what paces it.

:class:`~.pending.CallSpec` and :class:`~.pending.Pending`, a tool instance's
:class:`~.flow.Window`, and a long call's :class:`~.progress.CallWatch` (progress,
idle timeouts, chunks in order, stream credit). It imports no room but
:mod:`..participation`.
"""
