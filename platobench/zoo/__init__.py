"""The model zoo: validated `ModelSpec` entries from model_zoo.yaml (plus user files), lookup and sets.

The canonical built-in file is platobench/zoo/model_zoo.yaml (shipped in the package); the repository root's
model_zoo.yaml is a symlink to it. `load_zoo(extra_files)` merges user files over it.
"""

from platobench.zoo.loading import BUILTIN_ZOO, ZooError, read_zoo_file
from platobench.zoo.options import add_zoo_option, zoo_from_args
from platobench.zoo.registry import Zoo, load_zoo
from platobench.zoo.spec import ModelSpec

__all__ = [
    "BUILTIN_ZOO",
    "ModelSpec",
    "Zoo",
    "ZooError",
    "add_zoo_option",
    "load_zoo",
    "read_zoo_file",
    "zoo_from_args",
]
