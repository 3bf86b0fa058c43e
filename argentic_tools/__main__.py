"""``python -m argentic_tools``: the ``argentic-tools`` command line."""

from .cli import main

raise SystemExit(main())
