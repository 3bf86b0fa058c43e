"""Batches: many calls started and cancelled a slice at a time, kept out of full collections.

The top room of the calls, beside :mod:`..running`: it builds each call's settings
(:mod:`..settings`) and leaves running them to the manager's runner.
"""
