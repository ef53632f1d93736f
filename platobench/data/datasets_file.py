"""Datasets as data: a YAML file of dataset entries that every command taking datasets or settings reads
with `--datasets-file FILE` (repeatable), and `platobench.evaluate(datasets_files=...)` too.

    version: 1
    datasets:
      my-photos:                     # the name settings and --dataset use
        type: folder                 # image files + a manifest (platobench/data/folder.py)
        root: ./photos               # relative to this file
        manifest: ./photos/manifest.jsonl   # .jsonl, .csv or .parquet: id, file, caption(s)[, label]
        captions: [caption]          # caption columns, in order (default [caption])
        licence: CC-BY-4.0           # required: what the images and captions may be used for
      my-coco-copy:
        type: hub                    # through `datasets.load_dataset`: a hub id or a local parquet folder
        repo: ./coco-parquet         # local ("./", "../", "/", "~") or a hub id, then `revision` is required
        split: test
        image: image
        captions: caption            # one column, a string or a list of strings per row
        id_column: cocoid
        licence: CC-BY-4.0
      my-classes:
        type: folder
        kind: class                  # a label column, class prompts for zero-shot settings
        root: ./shapes
        manifest: ./shapes/labels.csv
        label: label                 # class names, or integer indices into class_names
        templates: [a drawing of a {}.]   # or a template set name (`platobench data show` lists them)
        licence: MIT
      my-shards:
        type: webdataset             # tar shards: <key>.jpg|png|... + <key>.txt (or .json, caption: json:<field>)
        shards: [./shards/*.tar]     # globs relative to this file, each sorted
        licence: CC-BY-4.0
      my-galaxies:
        type: ids                    # sample ids only: for `loader: features` entries (embeddings made elsewhere)
        ids: ./galaxies.txt          # one id per line, or a .jsonl/.csv/.parquet manifest with `id_column`
        licence: CC-BY-4.0

Unknown keys are refused (with the closest key), every problem names file:line, a name may not shadow a
built-in dataset or repeat. Revisions (`entry_revision`) hash the content — a folder's manifest and files
(`folder:sha256:<16 hex>`), a local parquet folder's files (`parquet:sha256:`), the shards' bytes
(`webdataset:sha256:`), an ids file's bytes (`ids:sha256:`), or a hub entry's pinned `revision`
(`hub@<revision>:sha256:`) — together with every field of the entry that decides what a sample is (caption,
label, image and id columns, split, templates, ...; all but REVISION_NEUTRAL and the file fields of
CONTENT_FIELDS, whose bytes are hashed instead): a manifest edit, or reading another caption column of the
same manifest, changes the fingerprint and every cache key and record built on it; moving the folder does not.
Captions longer than `max_caption_chars` (default DEFAULT_MAX_CAPTION_CHARS) are cut to that many
characters. A dataset that is missing or unreadable is one error naming it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from platobench.data import catalog
from platobench.data.base import ClassDataset, DatasetInfo, IdsDataset, PairedDataset
from platobench.errors import UserError
from platobench.files.ids import ID_PATTERN, ID_RULE, shown
from platobench.files.yaml_lines import LineLoader, field_problem
from platobench.files.yaml_safe import YamlError, read_yaml

TOP_LEVEL_KEYS = ("version", "datasets")
DEFAULT_TEMPLATES = ["a photo of a {}."]
#: Fields that never change what a sample is: left out of the revision.
REVISION_NEUTRAL = frozenset({"licence", "description"})
#: Fields naming files: their bytes enter the revision, not their spelling (so moving a folder keeps it). A
#: hub entry's `repo` counts as one when it is a local folder; a hub id is hashed as spelled.
CONTENT_FIELDS = frozenset({"root", "manifest", "shards", "ids"})
#: Captions are cut to this many characters unless an entry sets `max_caption_chars`: above every caption of
#: the built-in sets (475 characters at most) and what the sentence-transformers entries read (384 tokens),
#: and a bound on what one caption costs: at most 4 UTF-8 bytes a character, so at most 8,000 tokens of a
#: byte-level tokenizer and 8 MB of the bag-of-words baseline's token embeddings (256 float32 each).
DEFAULT_MAX_CAPTION_CHARS = 2000


def _local(value: str) -> bool:
    return value.startswith(("./", "../", "/", "~"))


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["paired", "class"] = "paired"
    licence: str = Field(min_length=1, description="the licence of the images and captions")
    description: str = ""
    templates: list[str] | str = Field(default_factory=lambda: list(DEFAULT_TEMPLATES),
                                       description="class sets: prompt templates with one {} or a template set name")
    class_names: list[str] | None = None

    def template_list(self) -> list[str]:
        from platobench.data.templates import get_templates

        if isinstance(self.templates, str):
            return get_templates(self.templates)
        bad = [t for t in self.templates if t.count("{}") != 1]
        if bad or not self.templates:
            raise UserError(f"templates: every template needs exactly one '{{}}' (got {shown(bad[:1] or self.templates)})")
        return list(self.templates)


class _Captioned(_Entry):
    """An entry whose samples may have captions, each cut to `max_caption_chars` characters."""

    max_caption_chars: int = Field(default=DEFAULT_MAX_CAPTION_CHARS, ge=1,
                                   description="captions are cut to this many characters")


class FolderEntry(_Captioned):
    """Image files under `root` listed by `manifest` (platobench/data/folder.py)."""

    type: Literal["folder"]
    root: str
    manifest: str
    id_column: str = "id"
    file_column: str = "file"
    captions: list[str] = Field(default_factory=lambda: ["caption"])
    label: str | None = None


class HubEntry(_Captioned):
    """A split loaded with `datasets.load_dataset(repo, config, revision=..., split=...)`."""

    type: Literal["hub"]
    repo: str
    revision: str | None = None
    split: str = "train"
    config: str | None = None
    image: str = "image"
    captions: str | None = None
    label: str | None = None
    id_column: str | None = None


class WebDatasetEntry(_Captioned):
    """WebDataset tar shards (platobench/data/webdataset.py): samples grouped by key in each shard."""

    type: Literal["webdataset"]
    shards: list[str] = Field(min_length=1, description="tar files, or globs of them, relative to this file")
    caption: str = Field(default="txt", pattern=r"^(txt|json:[A-Za-z0-9_.-]+)$",
                         description="txt (the .txt member) or json:<field> of the .json member")
    label: str | None = Field(default=None, pattern=r"^(cls|json:[A-Za-z0-9_.-]+)$",
                              description="class sets: cls (the .cls member) or json:<field>")


class IdsEntry(_Entry):
    """Sample ids only (`base.IdsDataset`), for precomputed embeddings: a text file of one id per line, or a
    manifest (.jsonl, .csv, .parquet) whose `id_column` holds them, in order."""

    type: Literal["ids"]
    ids: str
    id_column: str = "id"


Spec = Annotated[FolderEntry | HubEntry | WebDatasetEntry | IdsEntry, Field(discriminator="type")]
_ADAPTER: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(Spec)
ALLOWED_KEYS = tuple(dict.fromkeys([*FolderEntry.model_fields, *HubEntry.model_fields,
                                     *WebDatasetEntry.model_fields, *IdsEntry.model_fields]))
TYPES = ("folder", "hub", "webdataset", "ids")


def read_ids(name: str, path: Path, id_column: str) -> list[str]:
    """The ids of an ids entry's file, in order: one per non-blank line of a text file (UTF-8, a byte-order
    mark dropped), else the manifest's `id_column` (strings or integers: `folder.sample_id`); UserError naming
    the dataset for a missing file, an id of another type, an empty id list or repeated ids."""
    from platobench.data.folder import MANIFEST_SUFFIXES, read_manifest, refuse_duplicates, sample_id

    if not path.is_file():
        raise UserError(f"dataset {name!r}: ids file {path} not found")
    if path.suffix.lower() in MANIFEST_SUFFIXES:
        rows = read_manifest(path)
        missing = [i + 1 for i, r in enumerate(rows) if id_column not in r]
        if missing:
            raise UserError(f"dataset {name!r}: {path} has no {id_column!r} column in {len(missing)} row(s) "
                            f"(first: row {missing[0]})")
        ids = [sample_id(r[id_column], f"dataset {name!r}: row {i + 1} of {path}: {id_column!r}")
               for i, r in enumerate(rows)]
    else:
        try:
            ids = [line.strip() for line in path.read_text(encoding="utf-8-sig").splitlines() if line.strip()]
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"dataset {name!r}: ids file {path} cannot be read: {exc}") from exc
    if not ids or not all(ids):
        raise UserError(f"dataset {name!r}: {path} holds {'no ids' if not ids else 'an empty id'}")
    refuse_duplicates(name, ids, ids, "an id")
    return ids


def sample_fields(spec: Spec) -> dict[str, Any]:
    """The fields of `spec` that decide what its samples are, as the revision hashes them: every field but
    REVISION_NEUTRAL and CONTENT_FIELDS; a local hub `repo` is hashed by its files, so it enters as "local"."""
    fields = {f: getattr(spec, f) for f in type(spec).model_fields if f not in REVISION_NEUTRAL | CONTENT_FIELDS}
    if isinstance(spec, HubEntry) and _local(spec.repo):
        fields["repo"] = "local"
    return fields


def entry_revision(content: str, spec: Spec) -> str:
    """The revision of `spec`'s samples: `content` (the hash of its files, "<kind>:sha256:<16 hex>", or a hub
    entry's pinned revision) hashed with `sample_fields(spec)`, as "<kind>:sha256:<16 hex>" (kind
    "hub@<revision>" for a hub id), so that another caption column, label column, split ... is another
    revision, hence another fingerprint, cache key and record."""
    kind, found, _ = content.partition(":sha256:")
    payload = json.dumps([content, sample_fields(spec)], sort_keys=True, ensure_ascii=False)
    return f"{kind if found else f'hub@{content}'}:sha256:{hashlib.sha256(payload.encode()).hexdigest()[:16]}"


def _resolved(value: str, base: Path) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else (base / path).resolve()


def _folder_digest(folder: Path) -> str:
    """sha256 (16 hex) of every file under `folder`: relative path and bytes, in sorted order."""
    from platobench.files.digest import file_sha256

    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(folder).as_posix()}\0{file_sha256(path)}\0".encode())
    return digest.hexdigest()[:16]


def _shards(patterns: list[str], base: Path, name: str) -> list[Path]:
    """The shard files the patterns name, each pattern's matches sorted, in pattern order; UserError for a
    pattern that matches nothing."""
    out: list[Path] = []
    for pattern in patterns:
        path = _resolved(pattern, base)
        found = sorted(path.parent.glob(path.name)) if any(c in path.name for c in "*?[") else [path]
        if not found or not all(p.is_file() for p in found):
            raise UserError(f"dataset {name!r}: shards {shown(pattern)} match no tar file under {path.parent}")
        out += [p for p in found if p not in out]
    return out


def _builder(name: str, spec: FolderEntry | HubEntry | WebDatasetEntry | IdsEntry, base: Path) -> Any:
    """build(name, limit) of the catalogue entry for `spec` (relative paths against `base`)."""
    if isinstance(spec, IdsEntry):

        def build_ids(name: str, limit: int | None) -> IdsDataset:
            from platobench.files.digest import file_sha256

            path = _resolved(spec.ids, base)
            ids = read_ids(name, path, spec.id_column)
            revision = entry_revision(f"ids:sha256:{file_sha256(path)[:16]}", spec)
            return IdsDataset(name, revision, ids if limit is None else ids[:limit])

        return build_ids
    if isinstance(spec, WebDatasetEntry):

        def build_shards(name: str, limit: int | None) -> PairedDataset | ClassDataset:
            from platobench.data import folder, webdataset

            rows = webdataset.ShardRows(name, _shards(spec.shards, base, name),
                                        caption=spec.caption if spec.kind == "paired" else None, label=spec.label)
            rows.revision = entry_revision(rows.revision, spec)
            if spec.kind == "class":
                return folder.classes(name, rows, spec.template_list(), spec.class_names)
            return folder.paired(name, rows, limit=limit, max_caption_chars=spec.max_caption_chars)

        return build_shards
    if isinstance(spec, FolderEntry):
        root, manifest = _resolved(spec.root, base), _resolved(spec.manifest, base)

        def build_folder(name: str, limit: int | None) -> PairedDataset | ClassDataset:
            from platobench.data import folder

            rows = folder.FolderRows(name, root, manifest, id_column=spec.id_column, file_column=spec.file_column,
                                     caption_columns=spec.captions if spec.kind == "paired" else [],
                                     label_column=spec.label)
            rows.revision = entry_revision(rows.revision, spec)
            if spec.kind == "class":
                return folder.classes(name, rows, spec.template_list(), spec.class_names)
            return folder.paired(name, rows, limit=limit, max_caption_chars=spec.max_caption_chars)

        return build_folder

    repo = str(_resolved(spec.repo, base)) if _local(spec.repo) else spec.repo

    def build_hub(name: str, limit: int | None) -> PairedDataset | ClassDataset:
        from platobench.data import hub
        from platobench.data.captions import caption_key
        from platobench.data.folder import refuse_duplicates

        content = spec.revision or "main"
        if _local(spec.repo):
            if not Path(repo).is_dir():
                raise UserError(f"dataset {name!r}: local parquet folder {repo} not found")
            content = f"parquet:sha256:{_folder_digest(Path(repo))}"
        revision = entry_revision(content, spec)
        hub_spec = hub.HubSpec(repo, spec.revision or "main", spec.split, image=spec.image, captions=spec.captions,
                               label=spec.label, id_columns=(spec.id_column,) if spec.id_column else (),
                               config=spec.config)
        if spec.kind == "class":
            return hub.classes(name, hub_spec, spec.template_list(), class_names=spec.class_names, limit=limit,
                               revision=revision)
        bound = spec.max_caption_chars
        ds = hub.paired(name, hub_spec, limit=None, revision=revision, max_caption_chars=bound)
        for index in range(min(len(ds.caption_views(i)) for i in range(len(ds)))):
            refuse_duplicates(name, ds.ids, [caption_key(c) for c in ds.captions(index)], f"caption {index}")
        if limit is None or limit >= len(ds):
            return ds
        return hub.paired(name, hub_spec, limit=limit, revision=revision, max_caption_chars=bound)

    return build_hub


def _checked_entry(name: str, raw: Any, path: Path, line: int) -> tuple[Any, list[str]]:
    where = f"{path}:{line}" if line else str(path)
    if not isinstance(name, str) or not ID_PATTERN.match(name):
        return None, [f"{where}: datasets[{shown(name)}]: a dataset name is {ID_RULE}"]
    if name in catalog.DATASETS:
        return None, [f"{where}: datasets[{name!r}]: {name!r} is a built-in dataset; choose another name"]
    if not isinstance(raw, dict):
        return None, [f"{where}: datasets[{name!r}]: expected a mapping of fields, got {type(raw).__name__}"]
    if raw.get("type") not in TYPES:
        return None, [f"{where}: datasets[{name!r}]: field 'type': expected one of {', '.join(TYPES)} "
                      f"(got {shown(raw.get('type'))})"]
    try:
        spec = _ADAPTER.validate_python(dict(raw))
    except pydantic.ValidationError as exc:
        return None, [f"{where}: datasets[{name!r}]: {field_problem(_unprefixed(e), ALLOWED_KEYS)}" for e in exc.errors()]
    problems = []
    if isinstance(spec, HubEntry):
        if not _local(spec.repo) and not spec.revision:
            problems.append(f"{where}: datasets[{name!r}]: field 'revision': a hub dataset needs a pinned revision "
                            "(a commit sha or a tag)")
        if spec.kind == "paired" and spec.captions is None:
            problems.append(f"{where}: datasets[{name!r}]: field 'captions': a paired hub dataset needs its caption column")
    if isinstance(spec, IdsEntry) and spec.kind != "paired":
        problems.append(f"{where}: datasets[{name!r}]: field 'kind': an ids dataset has no labels; leave kind out")
    if spec.kind == "class" and not isinstance(spec, IdsEntry) and spec.label is None:
        problems.append(f"{where}: datasets[{name!r}]: field 'label': a class dataset needs its label column")
    return (None if problems else spec), problems


def _unprefixed(error: dict[str, Any]) -> dict[str, Any]:
    """A union member's error with the member's tag ('folder', 'hub') left out of its location."""
    loc = tuple(error["loc"])
    return {**error, "loc": loc[1:] if loc and loc[0] in TYPES else loc}


def read_datasets_file(path: str | Path) -> dict[str, catalog.Entry]:
    """name -> catalogue entry of every dataset in `path`; UserError listing every problem (file:line)."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: datasets file not found")
    try:
        data = read_yaml(path, what="datasets file", loader=LineLoader)
    except YamlError as exc:
        raise UserError(str(exc)) from exc
    if not isinstance(data, dict) or not isinstance(data.get("datasets"), dict) or not data["datasets"]:
        raise UserError(f"{path}: expected a mapping with a non-empty 'datasets' mapping of name -> entry")
    problems = [f"{path}: unknown top-level key {shown(k)} (allowed: {', '.join(TOP_LEVEL_KEYS)})"
                for k in data if k not in TOP_LEVEL_KEYS]
    if data.get("version", 1) != 1:
        problems.append(f"{path}: unsupported 'version' {shown(data['version'])} (supported: 1)")
    entries: dict[str, catalog.Entry] = {}
    for name, raw in data["datasets"].items():
        spec, found = _checked_entry(name, raw, path, getattr(raw, "line", 0))
        problems += found
        if spec is None:
            continue
        if isinstance(spec, FolderEntry):
            source = f"folder:{_resolved(spec.root, path.parent)}"
        elif isinstance(spec, WebDatasetEntry):
            source = f"webdataset:{', '.join(spec.shards)}"
        elif isinstance(spec, IdsEntry):
            source = f"ids:{_resolved(spec.ids, path.parent)}"
        else:
            source = f"parquet:{_resolved(spec.repo, path.parent)}" if _local(spec.repo) else f"hub:{spec.repo}"
        revision = (spec.revision or "content hash") if isinstance(spec, HubEntry) else "content hash"
        offline = not isinstance(spec, HubEntry) or _local(spec.repo)
        kind = "ids" if isinstance(spec, IdsEntry) else spec.kind
        info = DatasetInfo(name, kind, source, revision, offline, spec.description or f"from {path}")
        entries[name] = catalog.Entry(info, _builder(name, spec, path.parent), licence=spec.licence)
    if problems:
        head = problems[0] if len(problems) == 1 else f"{len(problems)} problems in datasets file {path}"
        raise UserError(head + ("" if len(problems) == 1 else "\n  " + "\n  ".join(problems)))
    return entries


@contextmanager
def using(files: Sequence[str | Path]) -> Iterator[list[str]]:
    """The datasets of `files` are known to `get_dataset` (and every command) inside the block, after those
    already in force; a name defined twice is refused. Yields the names added."""
    added: dict[str, catalog.Entry] = {}
    for f in files:
        for name, entry in read_datasets_file(f).items():
            if name in added or name in catalog.USER_ENTRIES:
                raise UserError(f"{f}: dataset {name!r} is defined in two datasets files")
            added[name] = entry
    previous = dict(catalog.USER_ENTRIES)
    catalog.USER_ENTRIES.update(added)
    try:
        yield list(added)
    finally:
        catalog.USER_ENTRIES.clear()
        catalog.USER_ENTRIES.update(previous)
