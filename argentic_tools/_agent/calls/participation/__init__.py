"""The caller taking part in its calls: its handlers, and a call's handlers at work.

:class:`~.handlers.CallerHandlers` holds the handlers as one value;
:class:`~.participation.Participation` answers one call's questions and log records.
The bottom room of the calls: it imports no other.
"""
