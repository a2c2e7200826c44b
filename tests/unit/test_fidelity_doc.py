"""docs/dms-fidelity.md lists every case of the DMS corpus with the label the case carries
(documented / seen in real output (source) / not seen: cdclab's choice)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted((ROOT / "tests" / "corpus" / "dms").glob("*.toml"))
DOC = (ROOT / "docs" / "dms-fidelity.md").read_text()
LABELS = ("documented", "not seen: cdclab's choice")


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_every_corpus_case_is_labelled_and_listed_with_its_label(path: Path) -> None:
    label = tomllib.loads(path.read_text()).get("label", "")
    assert label in LABELS or re.fullmatch(r"seen in real output \(.+ @ \w{7,}, .+:\d+.*\)",
                                           label), f"{path.name}: label {label!r}"
    rows = [line for line in DOC.splitlines() if line.startswith(f"| `{path.name}` |")]
    assert len(rows) == 1, f"docs/dms-fidelity.md lists {path.name} {len(rows)} times"
    assert rows[0].rstrip().endswith(f"| {label} |"), (path.name, rows[0])
