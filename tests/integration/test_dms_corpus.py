"""The DMS case corpus (tests/corpus/dms/*.toml): for each case, the exact bytes of every
file the emitter writes, against a real PostgreSQL slot. Each case names the AWS passage
it follows. In the expected bodies `{ts}` stands for a DMS timestamp (load or commit
time) and `{seq}` for a change sequence, the only values that differ between runs;
`{name}` for a value the case computes in SQL (`[values]`). A case runs with the table
selected and the change_seq column added; `before_image = true` adds the default
mappings' before image of the key, and `mappings` (JSON, `{name}` the table) replaces
them; a `key` list (a composite primary key) keeps the table out of [source]."""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from pathlib import Path

import psycopg
import pytest

from dms_emitter.dms_csv import CsvFormat
from pipeline_contract.dms_format.values import RenderOptions
from tests.resources.emitter import fresh_table

pytestmark = pytest.mark.integration

CASES = sorted((Path(__file__).parents[1] / "corpus" / "dms").glob("*.toml"))
LABELS = ("documented", "not seen: cdclab's choice")
PLACEHOLDERS = {"ts": r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6}", "seq": r"\d{35}"}


def label_ok(label: str) -> bool:
    """How the case's rule is known (docs/dms-fidelity.md "Rules from real output")."""
    return label in LABELS or bool(re.fullmatch(r"seen in real output \(.+\)", label))


def pattern(body: str, values: dict[str, str]) -> re.Pattern[str]:
    parts = re.split(r"\{(\w+)\}", body)
    out = []
    for i, part in enumerate(parts):
        if i % 2 == 0:
            out.append(re.escape(part))
        elif part == "seq":
            out.append(r"(\d{35})")  # captured: sequences must increase
        elif part in PLACEHOLDERS:
            out.append(PLACEHOLDERS[part])
        elif part in values:
            out.append(re.escape(values[part]))
        else:  # not a placeholder: data such as an array literal {1}
            out.append(re.escape("{" + part + "}"))
    return re.compile("".join(out), re.DOTALL)


def settings_of(case: dict) -> dict:
    """EmitterConfig changes: `fmt.*` and `render.*` keys change those parts."""
    raw = case.get("settings", {})
    fmt = {k[4:]: v for k, v in raw.items() if k.startswith("fmt.")}
    render = {k[7:]: v for k, v in raw.items() if k.startswith("render.")}
    rest = {k: v for k, v in raw.items() if "." not in k}
    if "cdc_ops" in fmt:
        fmt["cdc_ops"] = tuple(fmt["cdc_ops"])
    return {**rest, **({"fmt": dataclasses.replace(CsvFormat(), **fmt)} if fmt else {}),
            **({"render": RenderOptions(**render)} if render else {})}


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path: Path, postgres, emit) -> None:
    case = tomllib.loads(path.read_text())
    assert case.get("source"), f"{path.name}: name the AWS passage the case follows"
    assert label_ok(case.get("label", "")), f"{path.name}: label {case.get('label')!r}"
    table = fresh_table(postgres.dsn, ";\n".join(case["setup"]))
    with psycopg.connect(postgres.dsn) as conn:
        values = {k: conn.execute(q.replace("{name}", table)).fetchone()[0]
                  for k, q in case.get("values", {}).items()}
    changes = settings_of(case)
    key = case.get("key", "id")
    mappings = (json.loads(case["mappings"].replace("{name}", table))
                if "mappings" in case else None)
    run = emit(table, key=key if isinstance(key, str) else "id", mappings=mappings,
               before_image=case.get("before_image", False),
               configured=isinstance(key, str), interval_s=1.0, **changes)
    # one burst of a few ms on one connection: every transaction within the 1 s interval
    with psycopg.connect(postgres.dsn) as conn:
        for transaction in case.get("changes", []):
            for statement in transaction:
                conn.execute(statement.replace("{name}", table))
            conn.commit()
    expected = case["files"]
    run.wait(lambda: len(run.names()) >= len(expected), f"{len(expected)} files")
    run.emitter.stop()  # flushes whatever else would come: there must be nothing
    run.thread.join(timeout=30)
    names = run.names()
    assert len(names) == len(expected), (names, run.log[-5:])
    suffix = changes.get("fmt", CsvFormat()).suffix
    sequences: list[str] = []
    for name, want in zip(names, expected, strict=True):
        if want["name"] == "cdc":
            assert re.fullmatch(r"\d{8}-\d{9}" + re.escape(suffix), name), name
        else:
            assert name == want["name"]
        got = run.text(name)
        match = pattern(want["body"], values).fullmatch(got)
        assert match, f"{path.name}: {name} differs\n--- expected\n{want['body']}--- got\n{got}"
        if not name.startswith("LOAD"):
            sequences += match.groups()
    # CDC rows in file order: every sequence new and greater than the one before
    assert sequences == sorted(set(sequences)), sequences
