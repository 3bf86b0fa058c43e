"""``python -m argentic_tools``: the ``argentic-tools`` command line."""

from ._cli import main

raise SystemExit(main())
