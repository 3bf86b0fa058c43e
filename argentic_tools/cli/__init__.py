"""The ``argentic-tools`` command line and the demo (the ``[cli]`` extra brings ``rich``)."""

from .main import build_parser, main

__all__ = ["build_parser", "main"]
