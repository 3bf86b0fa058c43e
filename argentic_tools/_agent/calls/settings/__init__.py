"""The settings a call is made with, read and checked before anything is sent.

:class:`~.options.CallOptions`, the one place a call's keywords are read, and the
checks on a call's policy, arguments, context and deadline.
"""
