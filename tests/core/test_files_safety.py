"""The shared safe-file helpers: atomic writes, the id naming rule, path containment, capped YAML."""

from __future__ import annotations

import errno
import os
import time

import pytest

from platobench.errors import UserError
from platobench.files.atomic import WriteError, atomic_dir, atomic_write_bytes, atomic_write_json
from platobench.files.ids import InvalidIdError, check_id, check_model_name, contained, shown
from platobench.files.yaml_safe import MAX_EXPANDED_NODES, YamlError, load_yaml_text, read_yaml

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi")
)


def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_atomic_write_replaces_whole_file(tmp_path):
    path = atomic_write_json(tmp_path / "sub" / "a.json", {"a": 1})
    assert path.read_text() == '{\n "a": 1\n}\n'
    atomic_write_bytes(path, b"new")
    assert path.read_bytes() == b"new"
    assert sorted(p.name for p in path.parent.iterdir()) == ["a.json"]


def test_full_disk_names_the_path_keeps_old_file_and_leaves_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "a.txt"
    path.write_text("old")
    monkeypatch.setattr(os, "fsync", _no_space)
    with pytest.raises(WriteError, match=r"a\.txt.*No space left"):
        atomic_write_bytes(path, b"new" * 1000)
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_atomic_dir_swaps_whole_or_not_at_all(tmp_path):
    target = tmp_path / "board"
    with atomic_dir(target) as staging:
        (staging / "README.md").write_text("one")
    with pytest.raises(RuntimeError):
        with atomic_dir(target) as staging:
            (staging / "README.md").write_text("half")
            raise RuntimeError("build failed")
    assert (target / "README.md").read_text() == "one"
    with atomic_dir(target) as staging:
        (staging / "index.html").write_text("two")
    assert sorted(p.name for p in target.iterdir()) == ["index.html"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["board"]  # no staging or old folder left


@pytest.mark.parametrize(
    "bad", ["../../escaped", "/abs/path", "<script>alert(1)</script>", "Upper", "a\nb", "", ".hidden", "a/b", "x" * 101, 3]
)
def test_ids_refuse_paths_markup_and_non_strings(bad):
    with pytest.raises(InvalidIdError, match="setting id"):
        check_id(bad, "setting id")


def test_ids_accept_the_project_names():
    for good in ["demo-mknn", "zs-in100-gloss", "openclipart-1024", "prh-val", "a.b_c+d"]:
        assert check_id(good, "id") == good
    assert check_model_name("qwen2.5/qwen2.5-72b") == "qwen2.5/qwen2.5-72b"
    for bad in ["demo", "a/b/c", "../x/y", "a/<b>", "a/b__c", "a--b/c"]:  # '__' and '--' would collide in file names
        with pytest.raises(InvalidIdError):
            check_model_name(bad)


def test_contained_refuses_escapes(tmp_path):
    assert contained(tmp_path, "a", "b.json") == (tmp_path / "a" / "b.json").resolve()
    for parts in (("..", "x"), ("/etc/passwd",), ("a", "../../x")):
        with pytest.raises(InvalidIdError, match="leaves its folder"):
            contained(tmp_path, *parts)


def test_shown_caps_echoed_input():
    assert len(shown("x" * 10_000)) == 80
    assert shown("ok") == "'ok'"


def test_alias_bomb_refused_quickly_and_briefly():
    assert len(BOMB) < 700
    start = time.perf_counter()
    with pytest.raises(YamlError, match=f"{MAX_EXPANDED_NODES:,} nodes") as info:
        load_yaml_text(BOMB, "bomb.yaml")
    assert time.perf_counter() - start < 1.0
    assert len(str(info.value)) < 200


def test_small_aliases_still_load():
    data = load_yaml_text("a: &a [1, 2]\nb: [*a, *a]\n", "x")
    assert data == {"a": [1, 2], "b": [[1, 2], [1, 2]]}


def test_read_yaml_names_binary_and_missing_files(tmp_path):
    binary = tmp_path / "zoo.yaml"
    binary.write_bytes(bytes(range(256)))
    with pytest.raises(YamlError, match="not UTF-8"):
        read_yaml(binary)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(YamlError, match="latin.yaml"):
        read_yaml(latin)
    with pytest.raises(YamlError, match="cannot read"):
        read_yaml(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [1, 2\n")
    with pytest.raises(YamlError, match=r"broken.yaml:\d+: malformed YAML"):
        read_yaml(broken)
    assert issubclass(YamlError, UserError)


def test_cli_caps_long_error_messages(monkeypatch, capsys):
    from platobench import cli

    def fail(args):
        raise UserError("bad input " + "x" * 1_000_000)

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    parser.set_defaults(func=fail, command="zoo")
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("platobench zoo: error: bad input")
    assert len(err) < cli.MAX_ERROR_CHARS + 100 and "more characters" in err


@pytest.mark.parametrize(
    "text", ["a: " + "[" * 5000 + "]" * 5000, "a: 2024-13-45", "a: !!int " + "9" * 5000, "- " * 3000 + "x"]
)
def test_deep_nesting_and_bad_scalars_are_yaml_errors(text):
    with pytest.raises(YamlError):
        load_yaml_text(text, "odd.yaml")


def test_self_containing_alias_is_refused():
    with pytest.raises(YamlError):
        load_yaml_text("&a [*a]", "loop.yaml")


def test_atomic_dir_result_is_not_private(tmp_path):
    import stat

    target = tmp_path / "board"
    with atomic_dir(target) as staging:
        (staging / "f").write_text("1")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o777 & ~umask
    target.chmod(0o750)
    with atomic_dir(target) as staging:
        pass
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
