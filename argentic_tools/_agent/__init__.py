"""The caller side: the manager, pending calls, registry, exports, policy and observations.

It never imports the tool side.
"""
