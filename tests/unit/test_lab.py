"""Pure logic of the notebook helper (cdclab.lab) and of `cdclab notebook`."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

from cdclab.cli import build_parser
from cdclab.lab import (
    CDC_KIND,
    LOAD_KIND,
    LabError,
    bronze_kind,
    change_rows,
    metrics_rows,
    op_counts,
    stack_env,
)
from cdclab.notebook import browse_url, endpoints, jupyter_command
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline

FULL = {
    settings.ENV_PG_DSN: "postgresql://u:p@127.0.0.1:5433/airbnb_db",
    settings.ENV_S3_ENDPOINT: "http://127.0.0.1:9100",
    settings.ENV_CATALOG_URI: "http://127.0.0.1:8181",
    settings.ENV_ACCESS_KEY: "ak",
    settings.ENV_SECRET_KEY: "sk",
}
STATE = Path("/tmp/some-state")


def test_the_env_file_wins_over_the_process_environment() -> None:
    process = {**FULL, settings.ENV_S3_ENDPOINT: "http://elsewhere:1"}
    env = stack_env(STATE, FULL, process)
    assert env[settings.ENV_S3_ENDPOINT] == "http://127.0.0.1:9100"
    assert env[settings.ENV_STATE_DIR] == str(STATE)


def test_without_an_env_file_the_stack_keys_come_from_the_environment() -> None:
    env = stack_env(STATE, {}, {**FULL, "HOME": "/root", settings.ENV_REGION: "eu-west-1",
                                settings.ENV_CATALOG_TOKEN: "t"})
    assert env[settings.ENV_PG_DSN] == FULL[settings.ENV_PG_DSN]
    assert env[settings.ENV_REGION] == "eu-west-1"
    assert env[settings.ENV_CATALOG_TOKEN] == "t"  # the jupyter container's catalog calls
    assert "HOME" not in env


def test_no_stack_is_a_clear_error_naming_where_and_what() -> None:
    partial = {k: v for k, v in FULL.items() if k != settings.ENV_CATALOG_URI}
    with pytest.raises(LabError, match=r"/tmp/some-state/cdclab.env.*CDCLAB_CATALOG_URI"):
        stack_env(STATE, {}, partial)


def test_bronze_files_are_full_load_or_cdc_by_name() -> None:
    assert bronze_kind("dms/db/public/t/LOAD00000001.csv") == LOAD_KIND
    assert bronze_kind("dms/db/public/t/20261122-101500123.csv") == CDC_KIND


def test_change_rows_keep_op_commit_time_and_key() -> None:
    rows = [{"Op": "U", "last_updated_ts": "2026-11-22 10:15:00.123456", "id": "7",
             "name": "x", "change_seq": "0001"}]
    [row] = change_rows("a/b/20261122-101500123.csv", rows, "last_updated_ts", "change_seq",
                        "id")
    assert row == {"file": "20261122-101500123.csv", "kind": CDC_KIND, "op": "U",
                   "ts": datetime(2026, 11, 22, 10, 15, 0, 123456, tzinfo=UTC), "id": 7,
                   "change_seq": "0001"}


def test_op_counts_bucket_changes_per_op() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    changes = pd.DataFrame({
        "ts": pd.to_datetime([t0, t0, t0.replace(second=1)]),
        "op": ["I", "D", "I"],
    })
    counts = op_counts(changes, "1s")
    assert list(counts.columns) == ["I", "U", "D"]
    assert counts.to_dict("list") == {"I": [1, 1], "U": [0, 0], "D": [1, 0]}
    assert op_counts(changes.iloc[0:0]).empty


def test_metrics_rows_join_start_times_and_order_by_them() -> None:
    late, early = datetime(2026, 1, 1, 0, 1), datetime(2026, 1, 1, 0, 0)
    metrics = [
        {"run_id": "b", "files": 1, "rows_read": 3, "updated": 3,
         "latency_seconds": {"p50": 1.2, "max": 2.0, "samples": [1.0, 1.2, 2.0]}},
        {"run_id": "a", "files": 0, "rows_read": 0},
        {"run_id": "unknown"},
    ]
    rows = metrics_rows(metrics, {"a": early, "b": late})
    assert [r["run_id"] for r in rows] == ["a", "b", "unknown"]
    assert rows[1]["updated"] == 3 and rows[1]["latency_samples"] == [1.0, 1.2, 2.0]
    assert rows[0]["latency_p50"] is None and rows[0]["latency_samples"] == []


def test_jupyter_runs_from_this_python_on_loopback_without_port_hopping() -> None:
    cmd = jupyter_command("/venv/bin/python", Path("/repo/notebooks"), "127.0.0.1", 8899,
                          open_browser=False, as_root=True)
    assert cmd[:3] == ["/venv/bin/python", "-m", "jupyterlab"]
    for arg in ("--ServerApp.root_dir=/repo/notebooks", "--ip=127.0.0.1", "--port=8899",
                "--ServerApp.port_retries=0", "--no-browser", "--allow-root"):
        assert arg in cmd
    assert "--allow-root" not in jupyter_command("p", Path("/n"), "127.0.0.1", 1, True, False)
    assert not any("token" in a for a in cmd)  # the token travels in the environment


def test_browse_url_points_a_wildcard_bind_at_loopback() -> None:
    assert browse_url("0.0.0.0", 8888, "t") == "http://127.0.0.1:8888/lab?token=t"
    assert browse_url("127.0.0.1", 9000, "t") == "http://127.0.0.1:9000/lab?token=t"


def test_endpoints_name_each_server_with_host_and_port() -> None:
    compose = {**FULL, settings.ENV_PG_DSN: "postgresql://u:p@postgres:5432/airbnb_db",
               settings.ENV_CATALOG_URI: "http://iceberg-rest:8181"}
    assert endpoints(compose) == [
        ("postgres", "postgres", 5432), ("S3 (MinIO)", "127.0.0.1", 9100),
        ("Iceberg REST catalog", "iceberg-rest", 8181),
    ]


def test_the_cli_has_the_notebook_command() -> None:
    args = build_parser().parse_args(["notebook", "--no-browser", "--port", "9999"])
    assert (args.ip, args.port, args.no_browser) == ("127.0.0.1", 9999, True)


def test_notebook_refuses_a_stopped_embedded_stack(tmp_path) -> None:
    from cdclab.notebook import running_stack_env
    from cdclab.services.base import ServiceError

    (tmp_path / "stack.json").write_text('{"ports": {}, "pids": {}}')
    with pytest.raises(ServiceError, match=r"not running \(postgres, minio, iceberg-rest"):
        running_stack_env(tmp_path, load_pipeline())


def test_notebook_refuses_when_there_is_no_stack_at_all(tmp_path, monkeypatch) -> None:
    from cdclab.notebook import running_stack_env
    from cdclab.services.base import ServiceError

    for key in FULL:
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(ServiceError, match="no running cdclab stack found.*cdclab up"):
        running_stack_env(tmp_path, load_pipeline())
