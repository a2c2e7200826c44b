"""Real-world Glue scripts (tests/corpus/), unmodified, run as jobs through the local Glue
API on a real Spark driver, with their outputs asserted. S3 stands in as file:// paths
(the same Hadoop FileSystem path S3A takes); the shipped job and the seed blog's shape
run on the full stack in test_job.py.
"""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import boto3
import pytest

from glue_local import jobs_api
from glue_local.server import running_server
from tests.resources.spark import glue_session

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


@pytest.fixture()
def glue(tmp_path):
    glue_session()
    with running_server(tmp_path / "state", env={}, quiet=True,
                        session_factory=glue_session) as server:
        yield boto3.client("glue", endpoint_url=server.endpoint, region_name="us-east-1",
                           aws_access_key_id="x", aws_secret_access_key="y")


def run(client, name: str, timeout: float = 180) -> dict:
    run_id = client.start_job_run(JobName=name)["JobRunId"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = client.get_job_run(JobName=name, RunId=run_id)["JobRun"]
        if got["JobRunState"] in jobs_api.FINAL_STATES:
            log = Path(got["LogGroupName"], f"{run_id}.log")
            assert got["JobRunState"] == "SUCCEEDED", (got.get("ErrorMessage"), log.read_text())
            return got
        time.sleep(0.2)
    raise AssertionError(f"{name} {run_id} did not finish")


def create(client, name: str, script: str, **args: str) -> None:
    client.create_job(Name=name, Role="r", GlueVersion="5.1",
                      Command={"Name": "glueetl", "ScriptLocation": str(CORPUS / script)},
                      DefaultArguments={f"--{k}": v for k, v in args.items()})


def orders_csv(path: Path, rows: list[tuple]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["order_id", "customer", "amount", "country"])
        w.writerows(rows)


def test_glue_studio_job_with_bookmarks_writes_each_order_once(glue, tmp_path, spark):
    src, out = tmp_path / "orders", tmp_path / "out"
    orders_csv(src / "2024/01/a.csv", [(1, "Ann", "5.0", "DE"), (2, 'Bob "B"', "25.5", "FR")])
    orders_csv(src / "2024/01/b.csv", [(3, "Cy, Jr.", "99", "DE")])
    create(glue, "studio", "glue_studio_csv_to_parquet.py", source=f"file://{src}",
           target=f"file://{out}", **{"job-bookmark-option": "job-bookmark-enable"})

    def written():
        return sorted(tuple(r) for r in spark.read.parquet(str(out))
                      .select("order_id", "customer", "amount", "country").collect())

    run(glue, "studio")
    assert written() == [(2, 'Bob "B"', 25.5, "FR"), (3, "Cy, Jr.", 99.0, "DE")]
    assert {p.name for p in out.iterdir() if p.is_dir()} == {"country=DE", "country=FR"}
    run(glue, "studio")  # nothing new: the bookmark skips both files
    assert len(written()) == 2
    orders_csv(src / "2024/02/c.csv", [(4, "Di", "11", "FR"), (5, "Ed", "1", "FR")])
    run(glue, "studio")
    assert written() == [(2, 'Bob "B"', 25.5, "FR"), (3, "Cy, Jr.", 99.0, "DE"),
                         (4, "Di", 11.0, "FR")]


def test_map_drop_null_fields_and_dataframe_mix(glue, tmp_path):
    src, out = tmp_path / "events", tmp_path / "out"
    src.mkdir()
    events = [{"sku": " ab-1 ", "qty": 2, "price": 1.5, "coupon": None},
              {"sku": "cd-2", "qty": 3, "price": 2.0, "coupon": None}]
    (src / "e.json").write_text("\n".join(json.dumps(e) for e in events))
    create(glue, "tidy", "map_and_resolve_choice.py", source=f"file://{src}",
           target=f"file://{out}")
    got = run(glue, "tidy")
    rows = []
    for part in sorted(out.glob("run-*-part-r-*")):  # Glue's names: no .csv extension
        rows += list(csv.DictReader(part.open()))
    assert sorted(rows, key=lambda r: r["sku"]) == [
        {"sku": "AB-1", "quantity": "2", "total": "3.0", "run": got["Id"]},
        {"sku": "CD-2", "quantity": "3", "total": "6.0", "run": got["Id"]}]
    log = Path(got["LogGroupName"], f"{got['Id']}.log").read_text()
    assert "null_fields ['coupon']" in log  # AWS's DropNullFields found the all-null field


def test_relationalize_writes_one_table_per_array(glue, tmp_path, spark):
    src, out = tmp_path / "persons", tmp_path / "out"
    src.mkdir()
    persons = [
        {"name": {"first": "Ann", "last": "Lee"}, "gender": "f",
         "images": [{"url": "a1"}, {"url": "a2"}], "tags": ["x", "y"]},
        {"name": {"first": "Bob", "last": "Ray"}, "gender": "m", "images": [], "tags": None},
    ]
    (src / "p.json").write_text("\n".join(json.dumps(p) for p in persons))
    create(glue, "flatten", "relationalize_json.py", source=f"file://{src}",
           target=f"file://{out}", TempDir=f"file://{tmp_path / 'temp'}")
    run(glue, "flatten")
    assert sorted(p.name for p in out.iterdir()) == ["root", "root_images", "root_tags"]

    def table(name):
        df = spark.read.parquet(str(out / name))
        return df.columns, sorted(tuple(r) for r in df.collect())

    cols, rows = table("root")
    assert sorted(cols) == ["gender", "images", "name.first", "name.last", "tags"]
    by_name = {r[cols.index("name.first")]: r for r in rows}
    ann, bob = by_name["Ann"], by_name["Bob"]
    assert bob[cols.index("tags")] is None  # no array: no key
    images_cols, images = table("root_images")
    assert images_cols == ["id", "index", "images.val.url"]
    assert images == [(ann[cols.index("images")], 0, "a1"), (ann[cols.index("images")], 1, "a2")]
    tags_cols, tags = table("root_tags")
    assert tags_cols == ["id", "index", "tags.val"]
    assert tags == [(ann[cols.index("tags")], 0, "x"), (ann[cols.index("tags")], 1, "y")]
