"""Print the requirements ``make demo`` installs, one per line, from ``pyproject.toml``.

``python scripts/requirements.py broker cli``: the project's dependencies and those of
the extras named.
"""

import sys
import tomllib
from pathlib import Path

project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
project = project["project"]
requirements = list(project["dependencies"])
for extra in sys.argv[1:]:
    requirements += project["optional-dependencies"][extra]
print("\n".join(requirements))
