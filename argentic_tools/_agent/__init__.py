"""The caller side: the manager and its rooms.

``calls/`` runs one call from its check to its one result, ``fleet/`` knows who is on
the bus, ``records/`` keeps what happened; ``policy`` says which tools a thread may use
and ``publishing`` sends what nobody waits on. It never imports the tool side.
"""
