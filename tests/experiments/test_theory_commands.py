"""`platobench theory ...` on the command line."""

import json

import pytest

from platobench.cli import main


def test_worlds_json_and_plot(tmp_path, capsys):
    plot = tmp_path / "worlds.png"
    assert main(["theory", "worlds", "--n", "12", "--seed", "2", "--json", "--plot", str(plot)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["worlds"] == 12 and out["violations"] == 0
    assert {"max_ratio", "median_ratio", "rows"} <= set(out)
    assert plot.stat().st_size > 1000


def test_worlds_markdown_table(capsys):
    assert main(["theory", "worlds", "--n", "6"]) == 0
    out = capsys.readouterr().out
    assert "| **all** | 6 | 0 |" in out


def test_scaling_json_and_plot(tmp_path, capsys):
    plot = tmp_path / "scaling.png"
    assert main(["theory", "scaling", "--heldout-runs", "8", "--fit-seeds", "1", "--states", "30", "--dim", "3",
                 "--json", "--plot", str(plot)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["heldout_runs"] == 8 and out["states"] == 30
    assert {"a", "alpha", "b", "beta"} <= set(out["law"])
    assert plot.stat().st_size > 1000


@pytest.mark.parametrize("argv,message", [
    (["theory", "worlds", "--n", "0"], "--n must be a positive integer"),
    (["theory", "scaling", "--dim", "0"], "--dim must be a positive integer"),
    (["theory", "scaling", "--states", "10", "--dim", "9"], "--dim must be in"),
    (["theory", "train", "--positive-pairs", "0"], "--positive-pairs must be a positive integer"),
    (["theory", "train", "--pairs", "0"], "--pairs is renamed --positive-pairs"),
])
def test_bad_arguments_exit_2_with_a_message(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_theory_without_command_prints_help(capsys):
    assert main(["theory"]) == 2
    assert "worlds" in capsys.readouterr().out


@pytest.mark.parametrize("sub", ["worlds", "scaling", "train"])
def test_help(sub, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["theory", sub, "--help"])
    assert exc.value.code == 0
    assert "--json" in capsys.readouterr().out
