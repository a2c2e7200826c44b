"""`cdclab replay` on files AWS DMS really wrote (../shared/dms_real_samples, public
repositories: see its README) and on the emitter's own output, merged by the unchanged
job on the real stack; `cdclab reconcile --against` checks silver against an expected
result computed here from the raw files, independently of the lab's reader and job.

The samples are not part of this repository: without them those tests are skipped,
saying so. The DDL and task settings below are this test's own, written from the sample
repositories' descriptions (their `cloudformation/` and `model.py`)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline
from tests.resources.stack import CONTAINERS, backend

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "dms_real_samples"
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(backend() == CONTAINERS,
                       reason="replay reads the user's files on the host (embedded CLI)"),
]
needs_samples = pytest.mark.skipif(
    not SAMPLES.is_dir(),
    reason=f"the real DMS output samples are not at {SAMPLES} (public files, not in this "
           "repository: see the issue 'DMS as AWS really writes it')")

NORTHWIND_DDL = """
CREATE TABLE orders (order_id smallint PRIMARY KEY, customer_id varchar(5),
  employee_id smallint, order_date date, required_date date, shipped_date date,
  ship_via smallint, freight real, ship_name varchar(40), ship_address varchar(60),
  ship_city varchar(15), ship_region varchar(15), ship_postal_code varchar(10),
  ship_country varchar(15));
CREATE TABLE order_details (order_id smallint NOT NULL, product_id smallint NOT NULL,
  unit_price real NOT NULL, quantity smallint NOT NULL, discount real NOT NULL,
  PRIMARY KEY (order_id, product_id));
"""
NORTHWIND_COLUMNS = {
    "orders": ["order_id", "customer_id", "employee_id", "order_date", "required_date",
               "shipped_date", "ship_via", "freight", "ship_name", "ship_address",
               "ship_city", "ship_region", "ship_postal_code", "ship_country"],
    "order_details": ["order_id", "product_id", "unit_price", "quantity", "discount"],
}
NORTHWIND_KEYS = {"orders": ["order_id"], "order_details": ["order_id", "product_id"]}
NORTHWIND_MAPPINGS = {"rules": [
    {"rule-type": "selection", "rule-id": "1", "rule-name": "all", "rule-action": "include",
     "object-locator": {"schema-name": "public", "table-name": "%"}},
    {"rule-type": "transformation", "rule-id": "2", "rule-name": "seq",
     "rule-target": "column", "rule-action": "add-column",
     "object-locator": {"schema-name": "public", "table-name": "%"},
     "value": "transaction_sequence_number", "expression": "$AR_H_CHANGE_SEQ",
     "data-type": {"type": "string", "length": 50}}]}


def cdclab(stack, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cdclab.cli", *args], env=stack.cli_env,
                          capture_output=True, text=True, timeout=900)


def replay(stack, tmp_path: Path, source: Path | str, *args: str) -> dict:
    done = cdclab(stack, "replay", str(source), "--json", *args)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return json.loads(done.stdout)


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def final_state(folder: Path, columns: list[str], keys: list[str],
                before_image: bool = False) -> dict[tuple, list[str]]:
    """The table's rows after its DMS files, by hand: full load first, then every change
    by its $AR_H_CHANGE_SEQ (the field after the columns); I/U upsert, D delete; with
    `before_image`, a U whose before-image key (the fields after the sequence, when the
    file has them) differs from its key deletes the old key."""
    changes = []
    for path in sorted(folder.glob("*.csv")):
        for n, row in enumerate(csv.reader(path.open(newline=""))):
            op, values, seq = row[0], row[2:2 + len(columns)], row[2 + len(columns)]
            old = tuple(row[3 + len(columns):3 + len(columns) + len(keys)])
            load = path.name.startswith("LOAD")
            changes.append(((0, path.name, n) if load else (1, seq, n), op, values, old))
    state: dict[tuple, list[str]] = {}
    for _order, op, values, old in sorted(changes):
        key = tuple(values[columns.index(k)] for k in keys)
        if before_image and op == "U" and len(old) == len(keys) and all(old) and old != key:
            state.pop(old, None)
        if op == "D":
            state.pop(key, None)
        else:
            state[key] = values
    return state


def expected_file(path: Path, columns: list[str], rows: dict[tuple, list[str]]) -> str:
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(columns)
        out.writerows(rows.values())
    return str(path)


BEFORE_IMAGE_RULE = {  # the task gained it before its July files (their last fields)
    "rule-type": "transformation", "rule-id": "3", "rule-name": "bi", "rule-target": "column",
    "rule-action": "add-before-image-columns",
    "object-locator": {"schema-name": "public", "table-name": "%"},
    "before-image-def": {"column-prefix": "before_", "column-suffix": "",
                         "column-filter": "pk-only"}}


@needs_samples
@pytest.mark.parametrize("before_image", [False, True], ids=["dms-flaw", "before-image"])
def test_northwind_cdc_as_dms_wrote_it_merges_to_the_state_its_files_describe(
        stack, tmp_path: Path, before_image: bool) -> None:
    cdc = SAMPLES / "northwind_dms_cdc" / "cdc"
    mappings = {"rules": NORTHWIND_MAPPINGS["rules"] + ([BEFORE_IMAGE_RULE] if before_image
                                                        else [])}
    report = replay(
        stack, tmp_path, cdc, "--name", f"northwind_{before_image}".lower(),
        "--ddl", write(tmp_path / "northwind.sql", NORTHWIND_DDL),
        "--endpoint-settings", write(tmp_path / "endpoint.json", json.dumps(
            {"IncludeOpForFullLoad": True, "TimestampColumnName": "transaction_commit_timestamp"})),
        "--table-mappings", write(tmp_path / "mappings.json", json.dumps(mappings)),
        "--tables", "public.orders,public.order_details")
    assert report["ok"] and len(report["skipped_objects"]) == 10  # the other tables' loads
    for table, columns in NORTHWIND_COLUMNS.items():
        one = report["tables"][f"public.{table}"]
        assert one["quarantined"] == 0, one["reasons"]
        want = final_state(cdc / "public" / table, columns, NORTHWIND_KEYS[table],
                           before_image)
        done = cdclab(stack, "reconcile", "--against",
                      expected_file(tmp_path / f"{table}.csv", columns, want),
                      "--silver-table", one["silver_table"],
                      "--key", ",".join(NORTHWIND_KEYS[table]), "--json")
        assert done.stdout, done.stderr[-3000:]
        result = json.loads(done.stdout)
        assert result["equal"], result
        assert result["silver_rows"] == {  # the sample's own counts (docs/dms-fidelity.md)
            ("orders", False): 847, ("orders", True): 843,
            ("order_details", False): 2176, ("order_details", True): 2173}[(table, before_image)]


@needs_samples
def test_a_full_load_with_a_header_and_no_op_column(stack, tmp_path: Path) -> None:
    coins = SAMPLES / "coins_eng_dados"
    report = replay(stack, tmp_path, coins, "--name", "coins_test", "--as-table",
                    "public.tb_coins", "--key", "public.tb_coins=id",
                    "--endpoint-settings", write(tmp_path / "e.json", '{"AddColumnName": true}'))
    one = report["tables"]["public.tb_coins"]
    assert report["ok"] and (one["rows_read"], one["quarantined"]) == (5000, 0)
    done = cdclab(stack, "reconcile", "--against", str(coins / "LOAD00000001.csv"),
                  "--silver-table", one["silver_table"], "--key", "id")
    assert done.returncode == 0 and "EQUAL" in done.stdout, done.stdout + done.stderr


@needs_samples
def test_a_parquet_full_load_reads_typed_values(stack, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from cdclab.reconcile import silver_catalog

    source = tmp_path / "pq"
    source.mkdir()
    sample = SAMPLES / "parquet_go_testdata" / "dms_test_table_LOAD00000001.parquet"
    (source / "LOAD00000001.parquet").write_bytes(sample.read_bytes())
    ddl = ("CREATE TABLE t (id bigint PRIMARY KEY, my_int integer, my_smallint smallint, "
           "my_numeric numeric(15,2), my_real real, my_double double precision, my_money "
           "money, my_varchar varchar(50), my_text text, my_bytea bytea, my_timestamp "
           "timestamp, my_uuid uuid, my_json json, my_jsonb jsonb, my_bool boolean);")
    report = replay(stack, tmp_path, source, "--name", "parquet_test", "--as-table", "public.t",
                    "--ddl", write(tmp_path / "t.sql", ddl), "--endpoint-settings",
                    write(tmp_path / "e.json", json.dumps(
                        {"TimestampColumnName": "DMS_TIMESTAMP", "MapBooleanAsBoolean": True,
                         "ParquetTimestampInMillisecond": True})))
    assert report["ok"] and report["tables"]["public.t"]["quarantined"] == 0
    silver = silver_catalog(stack.env).load_table("replay_parquet_test.t_silver").scan() \
        .to_arrow().to_pylist()
    want = pq.read_table(sample).to_pylist()
    columns = [c for c in want[0] if c != "DMS_TIMESTAMP"]
    assert sorted(([r[c] for c in columns] for r in silver), key=lambda r: r[0]) == \
        sorted(([r[c] for c in columns] for r in want), key=lambda r: r[0])


def test_the_emitter_s_own_bucket_read_as_a_user_s_bucket(stack, tmp_path: Path) -> None:
    """s3:// with the user's own profile, the tables from a live source: the pipeline's
    bronze replayed into its own silver tables equals the pipeline's silver."""
    import psycopg

    from cdclab.drain import current_wal_lsn, wait_for_drain
    from cdclab.reconcile import silver_catalog
    from cdclab.sample_data import seed
    from cdclab.workload import run_workload

    stack.start_pipeline()
    env = stack.env
    with psycopg.connect(env[settings.ENV_PG_DSN]) as conn:
        src = settings.load_pipeline().source
        if not conn.execute(f"SELECT count(*) FROM {src.schema}.{src.table}").fetchone()[0]:
            seed(conn, load_pipeline(), 300, seed=7)
    run_workload(env[settings.ENV_PG_DSN], load_pipeline(), transactions=60, rate=40, seed=7)
    wait_for_drain(env, load_pipeline(), current_wal_lsn(env[settings.ENV_PG_DSN]), timeout=420)
    p = settings.load_pipeline()
    profile = tmp_path / "credentials"
    profile.write_text(f"[lab]\naws_access_key_id = {env[settings.ENV_ACCESS_KEY]}\n"
                       f"aws_secret_access_key = {env[settings.ENV_SECRET_KEY]}\n")
    os.chmod(profile, 0o600)
    variables = {"AWS_SHARED_CREDENTIALS_FILE": str(profile),
                 "AWS_CONFIG_FILE": str(tmp_path / "none"),
                 "CDCLAB_TEST_SOURCE_DSN": env[settings.ENV_PG_DSN]}
    endpoint = {"AddColumnName": p.dms.add_column_name,
                "IncludeOpForFullLoad": p.dms.include_op_for_full_load,
                "TimestampColumnName": p.dms.timestamp_column_name}
    done = subprocess.run(
        [sys.executable, "-m", "cdclab.cli", "replay",
         f"s3://{p.lake.bronze_bucket}/{p.dms.bucket_folder}", "--name", "own_test",
         "--profile", "lab", "--endpoint-url", env[settings.ENV_S3_ENDPOINT],
         "--source-dsn-env", "CDCLAB_TEST_SOURCE_DSN",
         "--change-seq-column", p.dms.change_seq_column,
         # test_hostile_world's objects may nest a DMS-named file in a folder below the
         # table's, which reads as a table of its own that the source lacks
         "--tables", f"{p.source.schema}.{p.source.table}",
         "--endpoint-settings", write(tmp_path / "e.json", json.dumps(endpoint)), "--json"],
        env={**stack.cli_env, **variables}, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    report = json.loads(done.stdout)
    qualified = f"{p.source.schema}.{p.source.table}"
    assert report["ok"], report["runs"]
    catalog = silver_catalog(env)
    # Records another test wrote to this folder on purpose (test_hostile_world's broken
    # DMS-looking files) are quarantined by the replay as the pipeline quarantined them;
    # nothing the emitter wrote is.
    folder = f"/{p.dms.bucket_folder}/{p.source.schema}/{p.source.table}/"
    live = [r for r in catalog.load_table(f"{p.lake.glue_database}.{p.lake.quarantine_table}")
            .scan(selected_fields=("source_file", "record_number")).to_arrow().to_pylist()
            if r["record_number"] is not None and folder in r["source_file"]]
    replayed_bad = report["tables"][qualified]
    assert replayed_bad["quarantined"] <= len(live), replayed_bad["reasons"]
    assert {r["file"].rsplit("/", 1)[1] for r in replayed_bad["reasons"]} <= \
        {r["source_file"].rsplit("/", 1)[1] for r in live}, replayed_bad["reasons"]
    columns = ["id", "url", "name", "since", "response_rate"]

    def rows(name: str) -> list:
        return sorted(tuple(r[c] for c in columns) for r in catalog.load_table(name).scan(
            selected_fields=tuple(columns)).to_arrow().to_pylist())

    replayed = report["tables"][qualified]["silver_table"].split(".", 1)[1]
    assert replayed == f"replay_own_test.{p.lake.silver_table}"  # [lake] names kept
    assert rows(replayed) == rows(f"{p.lake.glue_database}.{p.lake.silver_table}")
