"""Hosting tools in a process: the service, its command line, and the loop's watchdog.

The top room of the tool side: it builds on :mod:`..definition` and :mod:`..serving`.
"""
