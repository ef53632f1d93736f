"""Settings are checked when loaded: metric, params, preprocess, selection and the kind-specific fields,
with errors naming the file, the setting and the closest valid value; the --limit minimum comes from the
metric's own `validate(n, params)`; built-in settings dump exactly as the committed records store them."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

from platobench.bench.setting_rules import PAIRED_ONLY, check_limit
from platobench.bench.settings import Catalog, Setting
from platobench.cli import main
from platobench.errors import UserError
from platobench.metrics.selection import parse_selection, select

OFFLINE = Path(__file__).resolve().parents[2] / "results" / "offline"


def load(tmp_path: Path, body: str) -> Catalog:
    path = tmp_path / "mine.yaml"
    path.write_text(body)
    return Catalog([path])


def refused(tmp_path: Path, body: str, *expected: str) -> str:
    """The one-line UserError of loading `body`, checked to name the file and each of `expected`."""
    with pytest.raises(UserError) as err:
        load(tmp_path, body)
    msg = str(err.value)
    assert "\n" not in msg and str(tmp_path / "mine.yaml") in msg, msg
    for part in expected:
        assert part in msg, msg
    return msg


def test_every_builtin_setting_revalidates_from_its_dump():
    for setting in Catalog().settings.values():  # check.py re-validates the stored dump (defaults included)
        assert Setting.model_validate(setting.model_dump(mode="json")) == setting


def test_unknown_metric_is_refused_with_the_closest_id(tmp_path):
    refused(tmp_path, "settings:\n  mine: {dataset: wit-1024, metric: mutul_knn, selection: best}\n",
            "setting 'mine'", "'mutul_knn'", "did you mean 'mutual_knn'")


def test_unknown_selection_is_refused_with_the_closest_rule(tmp_path):
    refused(tmp_path, "settings:\n  mine: {dataset: wit-1024, metric: mutual_knn, selection: bset}\n",
            "setting 'mine'", "selection", "did you mean 'best'")


def test_unknown_preprocess_is_refused_with_the_closest_mode(tmp_path):
    refused(tmp_path, "settings:\n  mine: {dataset: wit-1024, metric: cka, preprocess: prh_exat}\n",
            "setting 'mine'", "preprocess", "did you mean 'prh_exact'")


def test_unknown_metric_param_is_refused_with_the_closest_name(tmp_path):
    refused(tmp_path, "settings:\n  mine: {dataset: wit-1024, metric: mutual_knn, params: {kk: 3}}\n",
            "setting 'mine'", "params", "['kk']", "did you mean 'k'")


def test_invalid_metric_param_values_are_refused_by_the_metric(tmp_path):
    refused(tmp_path, "settings:\n  mine: {dataset: wit-1024, metric: mutual_knn, params: {k: 0}}\n",
            "setting 'mine'", "k must be an integer >= 1")
    refused(tmp_path, "settings:\n  mine: {dataset: wit-1024, metric: cka, params: {kernel: lineer}}\n",
            "setting 'mine'", "kernel")


def test_a_paired_setting_refuses_zeroshot_options(tmp_path):
    refused(tmp_path, "settings:\n  mine: {dataset: wit-1024, metric: cka, options: {solver: faq}}\n",
            "setting 'mine'", "options", "zero-shot")


ZS = "settings:\n  zs: {kind: zeroshot, dataset: cifar-10, metric: zeroshot_matching, selection: last"


def test_a_zeroshot_setting_refuses_another_metric(tmp_path):
    refused(tmp_path, ZS.replace("zeroshot_matching", "cka") + ", preprocess: prh_exact}\n",
            "setting 'zs'", "'zeroshot_matching'", "'cka'")


@pytest.mark.parametrize("field, value", [("preprocess", "prh_exact"), ("preprocess", "l2"), ("caption_index", "1"),
                                          ("params", "{k: 3}"), ("n_perm", "5"), ("n_ci", "0"),
                                          ("ci_fraction", "0.3"), ("ci_level", "0.9")])
def test_a_zeroshot_setting_refuses_the_paired_only_fields_it_would_ignore(tmp_path, field, value):
    assert field in PAIRED_ONLY
    refused(tmp_path, ZS + f", {field}: {value}}}\n", "setting 'zs'", f"{field} is used by paired settings only")


def test_a_zeroshot_setting_checks_its_options_on_load(tmp_path):
    msg = refused(tmp_path, ZS + ", options: {solvr: faq}}\n", "setting 'zs'", "options.solvr")
    assert msg.count("setting 'zs'") == 1
    refused(tmp_path, ZS + ", options: {solver: nope}}\n", "options.solver must be one of")
    assert load(tmp_path, ZS + ", options: {solver: gw, seeds: [1]}}\n").settings["zs"].options["solver"] == "gw"


def test_fixed_selection_is_accepted_in_both_spellings_and_kept_as_written(tmp_path):
    body = ("settings:\n  a: {dataset: wit-1024, metric: cka, selection: 'fixed:1,-1'}\n"
            "  b: {dataset: wit-1024, metric: cka, selection: '1,-1'}\n")
    settings = load(tmp_path, body).settings
    assert settings["a"].model_dump(mode="json")["selection"] == "fixed:1,-1"
    assert settings["b"].selection == "1,-1"
    assert parse_selection("fixed:1,-1") == parse_selection("1,-1") == (1, -1)
    grid = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    assert select(grid, "fixed:1,-1", True).score == select(grid, "1,-1", True).score == 5.0
    for bad in ("fixed:", "fixed:1", "fixed:best", "fixed:1,2,3"):
        with pytest.raises(UserError, match="layer selection must be"):
            parse_selection(bad)


def test_a_directly_built_setting_is_checked_too():
    with pytest.raises(ValidationError, match="did you mean 'mutual_knn'"):
        Setting(id="x", dataset="wit-1024", metric="mutualknn")


def paired(k: int, **kw) -> Setting:
    return Setting(id="mk", dataset="wit-1024", metric="mutual_knn", params={"k": k}, **kw)


def test_the_limit_minimum_follows_the_settings_metric_params():
    check_limit([paired(3, n_ci=0)], 4)
    with pytest.raises(UserError, match=r"--limit 3 is too small for setting 'mk' \(mutual_knn\): k must be smaller"):
        check_limit([paired(3, n_ci=0)], 3)
    check_limit([paired(20, n_ci=0)], 21)
    with pytest.raises(UserError, match="--limit 20 is too small"):
        check_limit([paired(20, n_ci=0)], 20)


def test_the_limit_minimum_covers_the_interval_subsets():
    check_limit([paired(3, n_ci=5)], 8)  # subsets of 4 > k
    with pytest.raises(UserError, match="interval subsets of 3 samples are too small"):
        check_limit([paired(3, n_ci=5)], 6)


def test_zeroshot_limits_count_images_per_class():
    zs = Catalog().settings["zs-fmnist"]
    check_limit([zs], 1)
    check_limit([zs], None)
    with pytest.raises(UserError, match="--limit must be a positive number"):
        check_limit([zs], 0)


def test_run_refuses_a_limit_below_the_settings_minimum(tmp_path, capsys):
    path = tmp_path / "mine.yaml"
    path.write_text("settings:\n  mk5: {dataset: tuxpaint, metric: mutual_knn, params: {k: 5}, n_ci: 0}\n")
    argv = ["run", "--pairs", "demo/minilm-l6:demo/dinov2-s-imgfocus", "--settings", "mk5", "--settings-file",
            str(path), "--out", str(tmp_path / "out"), "--dry-run", "--limit"]
    assert main([*argv, "5"]) == 2
    assert "--limit 5 is too small for setting 'mk5'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("field", "expected"), [
    ("seed: -5", "greater than or equal to 0"),
    ("seed: 100000000000000000000000", "less than 9223372036854775808"),
    ("seed: 1.0e+23", "seed"),
    ("caption_index: -1", "greater than or equal to 0"),
])
def test_seeds_and_caption_indices_out_of_range_are_refused_at_load(tmp_path, field, expected):
    refused(tmp_path, f"settings:\n  mine:\n    dataset: tuxpaint\n    metric: cka\n    {field}\n",
            "setting 'mine'", field.split(":")[0], expected)


def test_the_largest_seed_is_accepted_and_seeds_the_null():
    setting = Setting(id="mine", dataset="tuxpaint", metric="cka", seed=2**63 - 1)
    torch.Generator().manual_seed(setting.seed)


def test_a_fixed_selection_outside_the_models_layers_is_refused_before_any_model_runs(tmp_path, capsys, monkeypatch):
    from platobench.bench import runner
    from platobench.bench.runner import Job, RunOptions, execute
    from platobench.features.store import FeatureStore
    from platobench.zoo import load_zoo

    def forbidden(*a, **k):
        raise AssertionError("no model may be loaded")

    monkeypatch.setattr(runner, "extract", forbidden)
    path = tmp_path / "mine.yaml"
    path.write_text("settings:\n  far: {dataset: tuxpaint, metric: cka, selection: 'fixed:99,99'}\n"
                    "  near: {dataset: tuxpaint, metric: cka, selection: 'fixed:-7,12'}\n")
    argv = ["run", "--pairs", "demo/minilm-l6:demo/dinov2-s-imgfocus", "--settings-file", str(path),
            "--out", str(tmp_path / "out"), "--dry-run", "--json", "--settings"]
    assert main([*argv, "far"]) == 2
    err = capsys.readouterr().err
    assert "setting 'far': selection 'fixed:99,99' does not fit demo/minilm-l6 (7 layers) x " \
           "demo/dinov2-s-imgfocus (13 layers)" in err
    assert main([*argv, "near"]) == 0  # -7 is layer 0 of 7, 12 the last of 13
    zoo = load_zoo()
    job = Job(Catalog([path]).settings["far"], zoo.get("demo/minilm-l6"), zoo.get("demo/dinov2-s-imgfocus"))
    summary = execute([job], RunOptions(out=tmp_path / "out", progress=False), FeatureStore(tmp_path / "features"))
    assert "does not fit" in next(iter(summary.failed.values()))


def test_a_settings_file_takes_version_1_as_zoo_files_do(tmp_path):
    catalog = load(tmp_path, "version: 1\nsettings:\n  mine: {dataset: wit-1024, metric: cka, selection: best}\n")
    assert "mine" in catalog.settings
    refused(tmp_path, "version: 2\nsettings: {}\n", "unsupported 'version' 2", "supported: (1,)")
