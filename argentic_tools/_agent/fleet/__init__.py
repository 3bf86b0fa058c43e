"""Who is on the bus: membership, the registry, liveness, settling and the fleet's stats.

It never imports :mod:`..calls`: a call's arguments and deadline never pass through here.
"""
