"""Test resource: an embedded stack on a pipeline.toml of the test's own (some keys
changed), set through CDCLAB_PIPELINE_FILE so every service of the stack reads it."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from cdclab.setup import setup_lake
from cdclab.supervisor import INFRA, PIPELINE, Stack
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.resources.stack_dirs import temp_state_dir


def pipeline_file(work: Path, changes: Mapping[str, str]) -> Path:
    """pipeline.toml with each `key = ...` line of `changes` set to its TOML value."""
    text = settings.PIPELINE_FILE.read_text()
    for key, value in changes.items():
        text, n = re.subn(rf"(?m)^#? ?{re.escape(key)} = .*$", f"{key} = {value}", text)
        assert n == 1, f"pipeline.toml has no single {key!r} line"
    path = work / "pipeline.toml"
    path.write_text(text)
    return path


@contextmanager
def pipeline_stack(work: Path, changes: Mapping[str, str],
                   prepare: Callable[[dict[str, str]], None] = lambda _env: None,
                   ) -> Iterator[dict[str, str]]:
    """Infrastructure up, `prepare(env)` (source tables, rows), the job's tables synced,
    then the emitter and the watcher; yields the stack's environment."""
    before = os.environ.get(settings.ENV_PIPELINE_FILE)
    os.environ[settings.ENV_PIPELINE_FILE] = str(pipeline_file(work, changes))
    try:
        with temp_state_dir("pipeline") as state:
            stack = Stack(state, pipeline=load_pipeline())
            try:
                stack.up(INFRA)
                prepare(stack.env())
                setup_lake(stack.env(), load_pipeline())
                stack.up(PIPELINE)
                yield stack.env()
            finally:
                stack.down()
    finally:
        if before is None:
            os.environ.pop(settings.ENV_PIPELINE_FILE, None)
        else:
            os.environ[settings.ENV_PIPELINE_FILE] = before
