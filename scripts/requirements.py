"""Print the project's dependencies and the given extras' (``python scripts/requirements.py
broker cli``) from ``pyproject.toml``, one per line: the requirements ``make demo`` installs."""

import sys
import tomllib
from pathlib import Path

project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
project = project["project"]
requirements = list(project["dependencies"])
for extra in sys.argv[1:]:
    requirements += project["optional-dependencies"][extra]
print("\n".join(requirements))
