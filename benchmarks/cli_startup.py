"""Start-up time of the `platobench` command: `--help` and the listing commands, against bare Python.

Baselines (measured in the same run): `python -c pass` (the interpreter alone) and `python -c "import torch"`
(what every command paid before parser construction stopped importing torch). Each command runs in a fresh
interpreter; runs are interleaved (one of each per round) so that load on the machine hits all alike.
`--src DIR` also times the package of another checkout (e.g. `git archive HEAD platobench | tar -x -C
/tmp/old`), run from DIR so that `-m platobench` finds it first: a before/after figure.

Usage: .venv/bin/python benchmarks/cli_startup.py [--repeats 7] [--src DIR] [--tiny]
(`--tiny`: one repeat of the two baselines and `platobench --help` only.)
Prints a markdown table: median wall seconds; "x pass" = median / `python -c pass`; "x torch" = median /
`import torch` (< 1 is faster than importing torch alone); "heavy" = which of torch, scipy, transformers,
matplotlib, pydantic, numpy the command imported.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tiny import parse_tiny

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "scipy", "transformers", "matplotlib", "pydantic", "numpy")
PLATOBENCH = ["-m", "platobench"]
COMMANDS: dict[str, list[str]] = {
    "python -c pass": ["-c", "pass"],
    'python -c "import torch"': ["-c", "import torch"],
    "platobench --help": [*PLATOBENCH, "--help"],
    "platobench run --help": [*PLATOBENCH, "run", "--help"],
    "platobench zoo list": [*PLATOBENCH, "zoo", "list"],
    "platobench data list": [*PLATOBENCH, "data", "list"],
    "platobench metrics": [*PLATOBENCH, "metrics"],
}
TINY_COMMANDS = ("python -c pass", 'python -c "import torch"', "platobench --help")


def run_once(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Wall seconds of one `python ARGV` run in `cwd` in a fresh interpreter (fails on a non-zero exit)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *argv], env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    return time.perf_counter() - t0


def heavy_imports(argv: list[str], env: dict[str, str], cwd: Path) -> list[str]:
    """Which HEAVY packages `python -X importtime ARGV`, run in `cwd`, imported."""
    err = subprocess.run([sys.executable, "-X", "importtime", *argv], env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, check=True).stderr
    names = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in err.splitlines() if line.startswith("import time:")}
    return [m for m in HEAVY if m in names]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--src", type=Path, help="also time the platobench package of this checkout")
    args = parse_tiny(parser, repeats=1)
    commands = {name: COMMANDS[name] for name in TINY_COMMANDS} if args.tiny else COMMANDS
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "PLATOBENCH_HOME": home, "OMP_NUM_THREADS": "1"}
        variants = {"": ROOT} if args.src is None else {"": ROOT, f" ({args.src.name})": args.src.resolve()}
        jobs = {f"{name}{tag}": (argv, cwd) for tag, cwd in variants.items() for name, argv in commands.items()
                if tag == "" or argv[:2] == PLATOBENCH}
        for argv, cwd in jobs.values():  # warm the file cache and .pyc files
            run_once(argv, env, cwd)
        times: dict[str, list[float]] = {name: [] for name in jobs}
        for _ in range(args.repeats):
            for name, (argv, cwd) in jobs.items():
                times[name].append(run_once(argv, env, cwd))
        medians = {name: statistics.median(ts) for name, ts in times.items()}
        base, torch_s = medians["python -c pass"], medians['python -c "import torch"']
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; median of {args.repeats}\n")
        print("| command | median s | x pass | x torch | heavy imports |")
        print("|---|---:|---:|---:|---|")
        for name, (argv, cwd) in jobs.items():
            heavy = ", ".join(heavy_imports(argv, env, cwd)) or "-"
            print(f"| `{name}` | {medians[name]:.3f} | {medians[name] / base:.1f} | {medians[name] / torch_s:.2f} "
                  f"| {heavy} |")


if __name__ == "__main__":
    main()
