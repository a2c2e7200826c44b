"""Glue Data Quality (awsgluedq's EvaluateDataQuality, spark/glue_local/stand_ins): a
Glue Studio-style job with data quality on (tests/corpus/glue_studio_data_quality.py) runs
through the local Glue API; its rule outcomes and row-level outcomes are checked against
values worked out here in plain Python from the same input, without Glue."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from glue_local import jobs_api
from tests.integration.test_glue_corpus import create, glue, orders_csv, run  # noqa: F401

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ORDERS = [(1, "Ann", "5.0", "DE"), (2, "Bob", "25.5", "FR"), (2, "Cyrus Longname", "0", "ES"),
          (4, "Di", "120", "DE")]
NOT_MET = "Value: {} does not meet the constraint requirement!"


def expected() -> tuple[list[dict], list[dict]]:
    """(rule outcomes, row-level lists) for ORDERS, by hand. Rules as in the script."""
    rows = [{"order_id": o, "customer": c, "amount": float(a), "country": k}
            for o, c, a, k in ORDERS]
    ids = [r["order_id"] for r in rows]
    amounts = [r["amount"] for r in rows]
    unique = sum(ids.count(i) == 1 for i in ids) / len(ids)  # 1 and 4 of 1, 2, 2, 4
    in_set = sum(r["country"] in ("DE", "FR") for r in rows) / len(rows)
    lengths = [len(r["customer"]) for r in rows]
    mean = sum(amounts) / len(amounts)
    outcomes = [
        ("RowCount between 0 and 1000", "Passed", None, {"Dataset.*.RowCount": 4.0}),
        ('IsComplete "order_id"', "Passed", None, {"Column.order_id.Completeness": 1.0}),
        ('IsUnique "order_id"', "Failed", NOT_MET.format(unique),
         {"Column.order_id.Uniqueness": unique}),
        ('ColumnValues "amount" > 0', "Failed", NOT_MET.format(min(amounts)),
         {"Column.amount.Minimum": min(amounts)}),
        ('ColumnValues "country" in ["DE","FR"]', "Failed", NOT_MET.format(in_set),
         {"Column.country.ColumnValues.Compliance": in_set}),
        ('ColumnLength "customer" <= 10', "Failed", NOT_MET.format(float(max(lengths))),
         {"Column.customer.MaximumLength": float(max(lengths))}),
        ("ColumnValues \"amount\" < 100 where \"country = 'FR'\"", "Passed", None,
         {"Column.amount.Maximum": 25.5}),
        ('Mean "amount" < 100', "Passed", None, {"Column.amount.Mean": mean}),
        ('CustomSql "select count(*) from primary where amount > 100" = 1', "Passed", None,
         {"Dataset.*.CustomSQL": 1.0}),
        ('RowCount > 0 where "no_such_column > 1"', "Failed",
         "The provided where clause is invalid", {}),
    ]
    rules = [{"Rule": r, "Outcome": o, "FailureReason": f, "EvaluatedMetrics": m}
             for r, o, f, m in outcomes]
    names = [o[0] for o in outcomes]
    skip = [names[0], names[7], names[8], names[9]]  # no row-level results
    per_row = []
    for r in rows:
        checks = {names[1]: r["order_id"] is not None, names[2]: ids.count(r["order_id"]) == 1,
                  names[3]: r["amount"] > 0, names[4]: r["country"] in ("DE", "FR"),
                  names[5]: len(r["customer"]) <= 10,
                  names[6]: r["country"] != "FR" or r["amount"] < 100}
        passed = [n for n in names if checks.get(n) is True]
        failed = [n for n in names if checks.get(n) is False]
        per_row.append({**r, "DataQualityRulesPass": passed, "DataQualityRulesFail": failed,
                        "DataQualityRulesSkip": skip,
                        "DataQualityEvaluationResult": "Failed" if failed else "Passed"})
    return rules, per_row


def test_glue_studio_data_quality_job_gives_glues_outcomes(glue, tmp_path, spark):  # noqa: F811
    src, out = tmp_path / "orders", tmp_path / "out"
    orders_csv(src / "orders.csv", ORDERS)
    create(glue, "dq", "glue_studio_data_quality.py", source=f"file://{src}",
           target=f"file://{out}")
    got = run(glue, "dq")
    log = Path(got["LogGroupName"], f"{got['Id']}.log").read_text()
    assert ("cdclab: data quality EvaluateDataQuality_node1732000000003: 10 rule(s), 5 passed, "
            "5 failed; not published locally") in log

    want_rules, want_rows = expected()
    rules = [json.loads(line) for f in sorted((out / "rule_outcomes").iterdir())
             if not f.name.startswith(".") for line in f.open()]
    for r in rules:  # JSON leaves out a null FailureReason
        r.setdefault("FailureReason", None)
    assert sorted(rules, key=lambda r: r["Rule"]) == sorted(
        [{**r, "EvaluatedMetrics": pytest.approx(r["EvaluatedMetrics"])} for r in want_rules],
        key=lambda r: r["Rule"])

    frame = spark.read.parquet(str(out / "row_level"))
    assert frame.columns == ["order_id", "customer", "amount", "country",
                             "DataQualityRulesPass", "DataQualityRulesFail",
                             "DataQualityRulesSkip", "DataQualityEvaluationResult"]
    rows = sorted((r.asDict() for r in frame.collect()),
                  key=lambda r: (r["order_id"], r["customer"]))
    assert rows == sorted(want_rows, key=lambda r: (r["order_id"], r["customer"]))


def test_apply_and_studios_fail_on_failed_rules(glue, tmp_path):  # noqa: F811
    """tests/corpus/glue_dq_apply_and_fail.py: apply's outcomes; the run fails on
    Studio's assert, as a failed rule fails it in Glue."""
    src = tmp_path / "orders"
    orders_csv(src / "orders.csv", ORDERS)
    create(glue, "dq-fail", "glue_dq_apply_and_fail.py", source=f"file://{src}")
    run_id = glue.start_job_run(JobName="dq-fail")["JobRunId"]
    deadline = time.monotonic() + 180
    while (got := glue.get_job_run(JobName="dq-fail", RunId=run_id)["JobRun"])[
            "JobRunState"] not in jobs_api.FINAL_STATES:
        assert time.monotonic() < deadline, "dq-fail did not finish"
        time.sleep(0.2)
    log = Path(got["LogGroupName"], f"{run_id}.log").read_text()
    assert got["JobRunState"] == "FAILED", log
    assert "The job failed due to failing DQ rules for node: AmazonS3_node1" in \
        got["ErrorMessage"]
    assert ("SCHEMA struct<Rule:string,Outcome:string,FailureReason:string,"
            "EvaluatedMetrics:map<string,double>>") in log
    outcomes = [json.loads(line.split("OUTCOME ", 1)[1]) for line in log.splitlines()
                if line.startswith("OUTCOME ")]
    assert outcomes == [  # the CSV has four columns, all strings, order_id complete
        {"Rule": 'ColumnExists "order_id"', "Outcome": "Passed", "FailureReason": None,
         "EvaluatedMetrics": {}},
        {"Rule": 'IsComplete "order_id"', "Outcome": "Passed", "FailureReason": None,
         "EvaluatedMetrics": {"Column.order_id.Completeness": 1.0}},
        {"Rule": "ColumnCount = 3", "Outcome": "Failed", "FailureReason": NOT_MET.format(
            "4.0"), "EvaluatedMetrics": {"Dataset.*.ColumnCount": 4.0}}]
