"""What was set aside, and why: objects the Lambda moved to the quarantine prefix (each
with a `.reason.json`), objects the Lambda could not handle at all (parked by the
watcher, still in bronze, with their error), and records the job put in its quarantine
table (counted, with examples, in the runs' metrics). Nothing here deletes: the user
decides."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from lambda_shim.object_gate import REASON_SUFFIX
from pipeline_contract import settings

MAX_DETAILED = 50


def quarantined_objects(s3, bucket: str, prefix: str,
                        limit: int = MAX_DETAILED) -> tuple[int, list[dict[str, Any]]]:
    """(how many, the newest `limit` reasons, newest first)."""
    found = []
    for page in s3.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix.strip("/") + "/"):
        found += [o for o in page.get("Contents", []) if o["Key"].endswith(REASON_SUFFIX)]
    found.sort(key=lambda o: o["LastModified"], reverse=True)
    reasons = []
    for o in found[:limit]:
        try:
            reasons.append(json.loads(s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()))
        except ValueError:
            reasons.append({"quarantined_key": o["Key"].removesuffix(REASON_SUFFIX),
                            "reason": "(reason file unreadable)"})
    return len(found), reasons


def quarantined_records(runs: Sequence[Mapping[str, Any]] | None
                        ) -> tuple[int, list[dict[str, Any]]]:
    """(records the job quarantined over these runs, examples, newest first): the runs'
    metrics (the local GetJobRuns keeps them), so no Spark is needed to answer."""
    count, examples = 0, []
    for run in runs or []:  # newest first, as GetJobRuns answers
        m = run.get("Metrics") or {}
        count += int(m.get("quarantined", 0))
        examples += [{"run_id": run.get("Id"), **e} for e in m.get("quarantine_examples", [])]
    return count, examples


def parked_objects(watcher: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The objects the watcher parked (its state file), newest first."""
    parked = (watcher or {}).get("parked") or {}
    return sorted((dict(v, key=v.get("key", k)) for k, v in parked.items()),
                  key=lambda p: p.get("parked_at") or 0, reverse=True)


def _watcher_state(p: settings.PipelineSettings) -> Mapping[str, Any] | None:
    try:
        from cdclab import runtime

        return runtime.current(p).service_state("watcher")
    except Exception:  # no stack here: nothing parked to show
        return None


def summary(env: Mapping[str, str], p: settings.PipelineSettings, limit: int = MAX_DETAILED,
            runs: Sequence[Mapping[str, Any]] | None = None,
            watcher: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`runs`: the job's recent runs if the caller has them (else they are asked for);
    `watcher`: the watcher's state likewise."""
    from cdclab.pipeline_health import job_runs
    from cdclab.services.minio import s3_client

    out: dict[str, Any] = {"location": p.quarantine_location,
                           "table": p.qualified(p.lake.quarantine_table)}
    try:
        out["objects"], out["object_reasons"] = quarantined_objects(
            s3_client(dict(env), timeout=5), p.lake.bronze_bucket, p.lake.quarantine_prefix, limit)
    except Exception as e:  # S3 down: say so, the rest still shows
        out["objects"], out["object_reasons"], out["error"] = None, [], f"{e}"
    if runs is None:
        runs = job_runs(env, p.glue_job.name)
    out["records"], records = quarantined_records(runs)
    out["record_examples"] = records[:limit]
    out["parked"] = parked_objects(_watcher_state(p) if watcher is None else watcher)
    return out


def lines(s: Mapping[str, Any], detail: int) -> list[str]:
    """Human lines: counts, then up to `detail` reasons of each kind."""
    objects = "?" if s.get("objects") is None else s["objects"]
    out = [f"quarantine: {objects} object(s) in {s['location']}, {s['records']} record(s) "
           f"in {s['table']}"]
    if s.get("error"):
        out.append(f"  cannot list the quarantine prefix: {s['error']}")
    parked = s.get("parked") or []
    if parked:
        out.append(f"  {len(parked)} object(s) parked, not moved (the Lambda failed on each "
                   "alone; still in bronze: remove or overwrite it):")
    for p in parked[:max(detail, 1)]:
        out.append(f"  parked {p.get('key')}: {p.get('error')} ({p.get('failures')} tries)")
    for r in s.get("object_reasons", [])[:detail]:
        where = f" (record {r['record']}, line {r['line']})" if r.get("record") else ""
        out.append(f"  {r.get('quarantined_at', '')} {r.get('key', r.get('quarantined_key'))}"
                   f": {r.get('reason')}{where}")
    for r in s.get("record_examples", [])[:detail]:
        out.append(f"  run {r.get('run_id')}: {r.get('file')} record {r.get('record')}: "
                   f"{r.get('reason')}")
    return out
