"""Every notebook in notebooks/ runs headless against the real stack without a cell error.

The source is seeded (unless another module already did), the full load and a small CDC
workload are drained into silver first, so each notebook has a feed to show.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import psycopg
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from cdclab.drain import current_wal_lsn, wait_for_drain
from cdclab.sample_data import seed
from cdclab.workload import run_workload
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline

pytestmark = [
    pytest.mark.integration, pytest.mark.slow,
    # platformdirs, when CI has no XDG_RUNTIME_DIR: Jupyter falls back to /tmp, harmless
    pytest.mark.filterwarnings("ignore:XDG_RUNTIME_DIR is not set"),
]

NOTEBOOKS_DIR = settings.REPO_ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 420  # seconds; a cell may wait for the pipeline to drain


def _source_rows(dsn: str, src) -> int:
    with psycopg.connect(dsn) as conn:
        return conn.execute(f'SELECT count(*) FROM "{src.schema}"."{src.table}"').fetchone()[0]


@pytest.fixture(scope="module")
def drained_stack(stack):
    dsn = stack.env[settings.ENV_PG_DSN]
    # the end-to-end module may have seeded already
    if _source_rows(dsn, load_pipeline().source) == 0:
        with psycopg.connect(dsn) as conn:
            seed(conn, load_pipeline(), 300, seed=3)
    stack.start_pipeline()
    wait_for_drain(stack.env, load_pipeline(), current_wal_lsn(dsn), timeout=420)
    # a CDC feed for notebook 02
    run_workload(dsn, load_pipeline(), transactions=40, rate=40, seed=11)
    # notebook 03 renames the smallest id: from '', which CSV bronze carries as NULL
    src = load_pipeline().source
    with psycopg.connect(dsn) as conn:
        conn.execute(f'UPDATE "{src.schema}"."{src.table}" SET name = \'\' '
                     f'WHERE id = (SELECT min(id) FROM "{src.schema}"."{src.table}")')
    wait_for_drain(stack.env, load_pipeline(), current_wal_lsn(dsn), timeout=420)
    return stack


@pytest.fixture
def kernel_env(drained_stack, monkeypatch, tmp_path):
    """The kernel inherits our environment: point it at the test stack, nothing else."""
    if drained_stack.state_dir is not None:
        monkeypatch.setenv(settings.ENV_STATE_DIR, str(drained_stack.state_dir))
    else:  # containers: no env file, so lab.connect() reads the keys from the environment
        for key, value in drained_stack.env.items():
            monkeypatch.setenv(key, value)
        # last: the stack's env carries the caller's own CDCLAB_STATE_DIR, whose env file
        # (an embedded stack's, maybe stopped) lab.connect() would read before these keys
        monkeypatch.setenv(settings.ENV_STATE_DIR, str(tmp_path))


def test_the_three_notebooks_are_there() -> None:
    assert [p.name for p in NOTEBOOKS] == [
        "01_silver_vs_source.ipynb", "02_cdc_feed.ipynb", "03_time_travel.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_saved_clean_and_titled(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# "), "needs a title"
    assert sum(c.cell_type == "markdown" for c in nb.cells) >= 3, "needs prose"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), "saved with outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes_without_errors(path: Path, kernel_env) -> None:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=CELL_TIMEOUT, kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},
    )
    try:
        client.execute()
    except CellExecutionError as exc:
        pytest.fail(f"{path.name}: a cell failed:\n{exc}")
    executed = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in executed), f"{path.name}: not every cell ran"
