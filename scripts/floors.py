"""Print the lowest allowed version of every requirement as a pip constraints file (`name==floor`).

Reads the `dependencies` and `dev` extra of pyproject.toml and requirements-demo.txt, the requirements that
`scripts/install_python.sh` installs; a requirement without a lower bound is an error, so every dependency
has a floor that `make test-floors` installs and tests. Usage: python scripts/floors.py > floors.txt
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: `name>=floor` or `name==pin`, optionally followed by more comma-separated clauses (`,<3`).
REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(>=|==)\s*([0-9][^,;\s]*)")


def requirements() -> list[str]:
    """The requirement strings of pyproject.toml (core and `dev`) and requirements-demo.txt, in order."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = (ROOT / "requirements-demo.txt").read_text().splitlines()
    demo = [line.split("#", 1)[0].strip() for line in lines]
    return [*project["dependencies"], *project["optional-dependencies"]["dev"], *filter(None, demo)]


def floors() -> list[str]:
    """`name==version` for each requirement, its lower bound (`>=`) or its pin (`==`)."""
    out = []
    for req in requirements():
        found = REQUIREMENT.match(req)
        if found is None:
            raise SystemExit(f"requirement {req!r} has no floor: give it `>=VERSION` (or pin it with `==`)")
        out.append(f"{found[1]}=={found[3]}")
    return out


if __name__ == "__main__":
    sys.stdout.write("".join(f"{line}\n" for line in floors()))
