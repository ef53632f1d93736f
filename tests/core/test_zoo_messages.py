"""The zoo's refusals never suggest the very name or key they refuse (issue 55, item 12): a set's name given
where one model is expected says it is a set, and an unknown key that only looks like an allowed one (a
Cyrillic letter, a no-break space, spaces around it) says what differs."""

from __future__ import annotations

from pathlib import Path

import pytest

from platobench.errors import UserError
from platobench.zoo import load_zoo
from platobench.zoo.loading import read_zoo_file

ENTRY = """models:
  - name: a/b
    modality: text
    kind: text_encoder
    loader: hf
    source: x/y
    revision: abc
    pooling: avg
    {key}: 1
"""


def test_a_set_name_where_a_model_is_expected_is_named_a_set() -> None:
    zoo = load_zoo()
    with pytest.raises(UserError) as got:
        zoo.get("demo-text")
    message = str(got.value)
    assert "did you mean" not in message and "'demo-text' is a set of" in message
    assert all(spec.name in message for spec in zoo.resolve("demo-text")[:2])


@pytest.mark.parametrize(("key", "note"), [
    ("\u0455ource", "U+0455 CYRILLIC SMALL LETTER DZE"),
    ("name\u00a0", "U+00A0 NO-BREAK SPACE"),
    ("'source '", "spaces around it"),
])
def test_an_unknown_key_that_looks_like_an_allowed_one_says_what_differs(tmp_path: Path, key: str,
                                                                         note: str) -> None:
    path = tmp_path / "zoo.yaml"
    path.write_text(ENTRY.format(key=key), encoding="utf-8")
    with pytest.raises(UserError) as got:
        read_zoo_file(path)
    assert "unknown key" in str(got.value) and note in str(got.value)


def test_a_plain_unknown_key_keeps_its_message(tmp_path: Path) -> None:
    path = tmp_path / "zoo.yaml"
    path.write_text(ENTRY.format(key="sources"), encoding="utf-8")
    with pytest.raises(UserError, match=r"unknown key 'sources' \(did you mean 'source'\?\)$"):
        read_zoo_file(path)
