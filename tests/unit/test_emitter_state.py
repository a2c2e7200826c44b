"""The emitter's state file across versions and its table bookkeeping (no servers)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from dms_emitter.emitter import Emitter, EmitterConfig, read_state
from dms_emitter.sink import LocalDirSink
from pipeline_contract import settings


def emitter(tmp_path: Path, state: dict) -> Emitter:
    cfg = EmitterConfig.from_env(settings.load_pipeline(), {settings.ENV_PG_DSN: "postgresql://unused",
                                  settings.ENV_STATE_DIR: str(tmp_path)})
    cfg.state_path.parent.mkdir(parents=True)
    cfg.state_path.write_text(json.dumps(state))
    return Emitter(cfg, LocalDirSink(tmp_path / "files"), log=lambda _m: None)


def test_a_one_table_state_file_is_adopted_not_reloaded(tmp_path: Path) -> None:
    shape = [["id", "int4"], ["url", "text"]]
    e = emitter(tmp_path, {"phase": "streaming", "last_file": "20261122-101500123.csv",
                           "table": "public.hosts_demo", "shape": shape})
    e.adopt_old_state()
    state = read_state(e.cfg.state_path)
    assert state["phase"] == "streaming" and "shape" not in state and "table" not in state
    assert state["tables"] == {"public.hosts_demo": {"folder": "public/hosts_demo",
                                                     "shape": shape}}
    before = dict(state)
    e.adopt_old_state()  # idempotent
    assert read_state(e.cfg.state_path) == before


def test_a_state_without_a_finished_load_is_left_alone(tmp_path: Path) -> None:
    e = emitter(tmp_path, {"phase": "full_load"})
    e.adopt_old_state()
    assert "tables" not in read_state(e.cfg.state_path)


def test_the_quiet_cut_goes_with_the_labs_own_interval_only(tmp_path: Path) -> None:
    """Unset, the lab's 1 s interval comes with its quiet cut; an interval set in
    pipeline.toml or the env is DMS's rule alone; the quiet cut can be set or turned off."""
    import dataclasses

    p = settings.load_pipeline()
    base = {settings.ENV_PG_DSN: "postgresql://unused", settings.ENV_STATE_DIR: str(tmp_path)}

    def quiet(env: dict, pipeline=p) -> float:
        return EmitterConfig.from_env(pipeline, {**base, **env}).quiet_s

    assert quiet({}) == settings.LAB_BATCH_QUIET_S
    assert quiet({settings.ENV_BATCH_INTERVAL: "2"}) == 0
    dms = dataclasses.replace(p.dms, cdc_max_batch_interval_seconds=60)
    assert quiet({}, dataclasses.replace(p, dms=dms)) == 0
    assert quiet({settings.ENV_BATCH_QUIET: "0"}) == 0
    assert quiet({settings.ENV_BATCH_INTERVAL: "2", settings.ENV_BATCH_QUIET: "0.3"}) == 0.3


def test_load_files_are_cut_at_the_labs_size_unless_max_file_size_is_set(
        tmp_path: Path) -> None:
    """Unset, MaxFileSize is the lab's 32 MB (DMS's 1 GB stays AWS's); set, the value."""
    import dataclasses

    p = settings.load_pipeline()
    env = {settings.ENV_PG_DSN: "postgresql://unused", settings.ENV_STATE_DIR: str(tmp_path)}
    unset = dataclasses.replace(p, dms=dataclasses.replace(p.dms, max_file_size_kb=None))
    assert EmitterConfig.from_env(unset, env).max_file_bytes == settings.LAB_LOAD_FILE_KB * 1024
    chosen = dataclasses.replace(p, dms=dataclasses.replace(p.dms, max_file_size_kb=1048576))
    assert EmitterConfig.from_env(chosen, env).max_file_bytes == 1024 ** 3


def test_the_full_load_saves_its_progress_after_each_file(tmp_path: Path) -> None:
    """What a start waiting for the load reads to know it moves (EmitterService
    start_progress): the table, files and rows so far, saved before each file is logged."""
    from dms_emitter.launcher import EmitterService
    from pipeline_contract.service_kit import StackContext

    e = emitter(tmp_path, {"phase": "full_load"})
    e.cfg = dataclasses.replace(e.cfg, max_file_bytes=64)
    seen: list = []
    e.log = lambda _m: seen.append(read_state(e.cfg.state_path).get("loading"))
    rows = ([str(n), f"host {n}"] for n in range(1, 8))
    total, files = e.load_csv("public.hosts_demo", e.sink, ("id", "name"), False, rows)
    assert total == 7 and files == len(seen) > 1
    assert seen[-1] == {"table": "public.hosts_demo", "files": files, "rows": 7}
    assert [s["rows"] for s in seen] == sorted({s["rows"] for s in seen})
    ctx = StackContext(state_dir=tmp_path, pipeline=settings.load_pipeline())
    assert EmitterService().start_progress(ctx) == (
        f"full load of public.hosts_demo: {files} file(s), 7 rows")
