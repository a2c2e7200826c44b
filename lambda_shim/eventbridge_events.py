"""EventBridge events as EventBridge delivers them to a Lambda target (pure, no I/O).

Two reach the bronze trigger: Glue's "Glue Job State Change" (sent for SUCCEEDED,
FAILED, TIMEOUT and STOPPED runs, best effort: "you cannot write a program that depends
on the order or existence of notification events", Automating AWS Glue with
EventBridge) and the sweep rule's "Scheduled Event" (source aws.events). The shapes
follow the EventBridge envelope (version, id, detail-type, source, account, time,
region, resources, detail) and Glue's detail (jobName, severity, state, jobRunId,
message).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

GLUE_SOURCE, SCHEDULE_SOURCE = "aws.glue", "aws.events"
GLUE_JOB_STATE_CHANGE, SCHEDULED_EVENT = "Glue Job State Change", "Scheduled Event"
SUCCEEDED = "SUCCEEDED"
_SEVERITY = {"SUCCEEDED": "INFO", "STOPPED": "INFO"}  # FAILED and TIMEOUT: ERROR
_MESSAGE = {"SUCCEEDED": "Job run succeeded", "FAILED": "Job run failed",
            "TIMEOUT": "Job run timed out", "STOPPED": "Job run stopped"}


def _envelope(detail_type: str, source: str, region: str, account: str,
              resources: list[str], detail: dict, at: datetime | None) -> dict:
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": detail_type,
        "source": source,
        "account": account,
        "time": (at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": resources,
        "detail": detail,
    }


def job_state_change(job_name: str, run_id: str, state: str, *, region: str,
                     account: str, at: datetime | None = None) -> dict:
    return _envelope(GLUE_JOB_STATE_CHANGE, GLUE_SOURCE, region, account, [], {
        "jobName": job_name, "severity": _SEVERITY.get(state, "ERROR"), "state": state,
        "jobRunId": run_id, "message": _MESSAGE.get(state, f"Job run {state.lower()}"),
    }, at)


def scheduled(rule_name: str, *, region: str, account: str,
              at: datetime | None = None) -> dict:
    rule = f"arn:aws:events:{region}:{account}:rule/{rule_name}"
    return _envelope(SCHEDULED_EVENT, SCHEDULE_SOURCE, region, account, [rule], {}, at)


def is_eventbridge(event: dict) -> bool:
    return event.get("source") in (GLUE_SOURCE, SCHEDULE_SOURCE) and "detail-type" in event
