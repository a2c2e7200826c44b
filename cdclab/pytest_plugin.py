"""cdclab's pytest plugin: the lab as fixtures for the tests of your own repository.

`pip install 'cdclab[pytest]'` registers it (entry point `pytest11`: `cdclab`); nothing
starts until a test asks for a fixture. Run from the folder holding your pipeline.toml
(`cdclab init` writes one), or name it with CDCLAB_PIPELINE_FILE.

Fixtures
  cdclab_lab        (session) the running lab, started at the first test that needs it and
                    removed after the last: `.run_job`, `.write_dms_file`, `.silver`,
                    `.bronze_files`, `.source`, `.reconcile`, `.wait_for_silver`,
                    `.start_pipeline`, `.env`, `.pipeline`
  cdclab_source     a psycopg connection to the source database (autocommit), closed after
  cdclab_run_job    `cdclab_lab.run_job`: your Glue script, by path and unchanged, as a Glue
                    job run; returns the finished JobRun, raises JobRunFailed otherwise
  cdclab_dms_files  `cdclab_lab.write_dms_file`: hand-made DMS CSV files into bronze

Options
  --cdclab-backend embedded|containers   (or CDCLAB_BACKEND; default embedded) where the lab
      runs: local processes, or docker-compose.yml's services from the cdclab image
  --cdclab-reuse    embedded: use the stack at CDCLAB_STATE_DIR when it is up (else start it
      there) and leave it running, so the next session starts warm
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from cdclab.lab_session import DmsFileError, JobRunFailed, LabSession
from cdclab.private_stack import (
    CONTAINERS,
    PrivateStackError,
    chosen_backend,
    compose_stack,
    docker_problem,
    embedded_stack,
    temp_state_dir,
)

__all__ = ["DmsFileError", "JobRunFailed", "LabSession"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cdclab", "cdclab: the lab as fixtures")
    group.addoption("--cdclab-backend", default=None, choices=("embedded", "containers"),
                    help="where the lab runs (default: $CDCLAB_BACKEND, else embedded)")
    group.addoption("--cdclab-reuse", action="store_true", default=False,
                    help="embedded: reuse the stack at $CDCLAB_STATE_DIR and leave it up")


def pytest_configure(config: pytest.Config) -> None:
    """Your repository's pipeline.toml (beside pytest's rootdir) is the lab's settings, for
    this process and every service it starts, unless CDCLAB_PIPELINE_FILE names another."""
    from pipeline_contract.resources import CHECKOUT
    from pipeline_contract.settings import ENV_PIPELINE_FILE

    mine = Path(config.rootpath) / "pipeline.toml"
    if mine.is_file() and Path(config.rootpath).resolve() != CHECKOUT:
        os.environ.setdefault(ENV_PIPELINE_FILE, str(mine.resolve()))


def _lab(config: pytest.Config, say: Callable[[str], None]) -> Iterator[LabSession]:
    from cdclab.supervisor import INFRA
    from pipeline_contract import settings
    from pipeline_contract.settings import load_pipeline

    try:
        backend = chosen_backend(config.getoption("cdclab_backend"), os.environ)
    except PrivateStackError as error:
        raise pytest.UsageError(f"cdclab: {error}") from None
    pipeline = load_pipeline()  # the settings, read once for the session
    with ExitStack() as stack:
        if backend == CONTAINERS:
            problem = docker_problem()
            if problem:
                pytest.fail(f"cdclab: containers backend: {problem}", pytrace=False)
            say("cdclab: starting a private compose project (containers backend)")
            project = stack.enter_context(compose_stack(pipeline))
            lab = LabSession(backend, project.env, pipeline, compose=project)
        elif config.getoption("cdclab_reuse"):
            state = settings.state_dir()
            say(f"cdclab: embedded stack in {state} (reused; left running)")
            env = stack.enter_context(embedded_stack(state, pipeline, INFRA, stop=False))
            lab = LabSession(backend, env, pipeline)
        else:
            state = stack.enter_context(temp_state_dir("pytest"))
            say(f"cdclab: starting an embedded stack in {state}")
            env = stack.enter_context(embedded_stack(state, pipeline, INFRA))
            lab = LabSession(backend, env, pipeline)
        stack.callback(lab.close)
        yield lab


@pytest.fixture(scope="session")
def cdclab_lab(request: pytest.FixtureRequest) -> Iterator[LabSession]:
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")

    def say(message: str) -> None:
        if reporter is not None:
            reporter.write_line(message)

    yield from _lab(request.config, say)


@pytest.fixture
def cdclab_source(cdclab_lab: LabSession) -> Iterator[object]:
    with cdclab_lab.source() as connection:
        yield connection


@pytest.fixture
def cdclab_run_job(cdclab_lab: LabSession) -> Callable[..., dict]:
    return cdclab_lab.run_job


@pytest.fixture
def cdclab_dms_files(cdclab_lab: LabSession) -> Callable[..., str]:
    return cdclab_lab.write_dms_file
