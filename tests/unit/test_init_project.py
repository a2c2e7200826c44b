"""`cdclab init`: writes what is missing, keeps what is there, never leaves the folder;
and the rule by which pipeline.toml's relative paths find the user's or the lab's file."""

from __future__ import annotations

import json
import os
import tempfile
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclab.cli import main
from cdclab.init_project import FILES, InitError, init_project, inside, plan_init
from pipeline_contract import resources
from pipeline_contract.dms_format.table_mappings import read_document
from pipeline_contract.settings import PIPELINE_FILE, load_pipeline, parse_pipeline

subsets = st.sets(st.sampled_from(FILES))


@given(subsets)
def test_plan_keeps_exactly_what_is_there_and_writes_the_rest(there: set[str]) -> None:
    plan = plan_init(there)
    assert set(plan.keep) == there
    assert set(plan.write) == set(FILES) - there
    assert plan.write + plan.keep and not set(plan.write) & set(plan.keep)


@given(subsets)
@settings(max_examples=25, deadline=None)
def test_init_never_overwrites_and_says_which_it_kept(there: set[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "repo"
        for name in there:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text("mine\n")
        said: list[str] = []
        result = init_project(folder, said.append, defaults=load_pipeline(PIPELINE_FILE))
        assert set(result.keep) == there and set(result.write) == set(FILES) - there
        for name in there:
            assert (folder / name).read_text() == "mine\n"
            assert any(line.startswith(f"  kept  {name}") for line in said)
        for name in result.write:
            assert (folder / name).read_text() != "mine\n"
            assert f"  wrote {name}" in said
        # nothing else, nowhere else
        written = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}
        assert written == set(FILES)
        assert {p.name for p in Path(tmp).iterdir()} == {"repo"}


def test_rerun_keeps_the_users_edits(tmp_path: Path) -> None:
    init_project(tmp_path, lambda _: None, defaults=load_pipeline(PIPELINE_FILE))
    (tmp_path / "pipeline.toml").write_text("# edited\n")
    again = init_project(tmp_path, lambda _: None, defaults=load_pipeline(PIPELINE_FILE))
    assert again.write == () and set(again.keep) == set(FILES)
    assert (tmp_path / "pipeline.toml").read_text() == "# edited\n"


def test_the_written_pipeline_is_valid_and_names_its_mappings(tmp_path: Path) -> None:
    init_project(tmp_path, lambda _: None, defaults=load_pipeline(PIPELINE_FILE))
    raw = tomllib.loads((tmp_path / "pipeline.toml").read_text())
    p = parse_pipeline(raw, "pipeline.toml")
    assert p.source.table_mappings == "table-mappings.json"
    read_document(tmp_path / "table-mappings.json")  # passes the lab's own checks
    rules = json.loads((tmp_path / "table-mappings.json").read_text())["rules"]
    assert {"schema-name": p.source.schema, "table-name": p.source.table} in [
        r["object-locator"] for r in rules]
    compile((tmp_path / "jobs" / "example_job.py").read_text(), "example_job.py", "exec")


def test_a_file_is_refused_by_name(tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("x")
    with pytest.raises(InitError, match=r"notes\.txt: is a file, not a folder"):
        init_project(target, lambda _: None, defaults=load_pipeline(PIPELINE_FILE))
    assert target.read_text() == "x"


def test_a_symlink_leading_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    outside, repo = tmp_path / "outside", tmp_path / "repo"
    outside.mkdir()
    repo.mkdir()
    os.symlink(outside, repo / "jobs")
    with pytest.raises(InitError, match="outside"):
        init_project(repo, lambda _: None, defaults=load_pipeline(PIPELINE_FILE))
    assert list(outside.iterdir()) == []


def test_cli_init_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path / "new")]) == 0
    assert "wrote pipeline.toml" in capsys.readouterr().out
    (tmp_path / "f").write_text("")
    assert main(["init", str(tmp_path / "f")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


names = st.lists(st.sampled_from(["a", "b", "..", "."]), min_size=1, max_size=5)


@given(names)
def test_inside_agrees_with_path_arithmetic(parts: list[str]) -> None:
    folder = Path("/r/repo")
    target = Path(os.path.normpath(folder.joinpath(*parts)))
    expected = target == folder or str(target).startswith("/r/repo/")
    assert inside(folder, target) is expected


@given(st.booleans(), st.booleans())
def test_relative_paths_prefer_the_users_file(mine: bool, shipped: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base, lab = Path(tmp, "user"), Path(tmp, "lab")
        for folder, present in ((base, mine), (lab, shipped)):
            (folder / "jobs").mkdir(parents=True)
            if present:
                (folder / "jobs" / "j.py").write_text("")
        got = resources.in_project("jobs/j.py", base, lab)
        assert got == (lab if shipped and not mine else base) / "jobs" / "j.py"
        assert resources.in_project("/abs/j.py", base, lab) == Path("/abs/j.py")


def test_the_lab_root_is_the_checkout_here() -> None:
    assert resources.from_checkout()
    assert resources.resource("versions.env").is_file()
    assert resources.resource("jobs", "bronze_to_silver.py").is_file()
