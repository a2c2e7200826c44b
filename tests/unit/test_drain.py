"""wait_for_drain asks again while a service restarts, and fails on real errors."""

from __future__ import annotations

import botocore.exceptions as bx
import pytest

from cdclab import drain
from pipeline_contract import settings
from pipeline_contract.settings import load_pipeline


def test_a_restarting_service_is_asked_again_until_it_answers(monkeypatch) -> None:
    answers = iter([bx.ConnectionClosedError(endpoint_url="http://127.0.0.1:1/"), []])

    def job_runs(_env, _name):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(drain, "slot_confirmed_lsn", lambda _dsn, _slot: 10)
    monkeypatch.setattr(drain, "newest_bronze_object", lambda _env, _p: None)
    monkeypatch.setattr(drain, "job_runs", job_runs)
    monkeypatch.setattr(drain.time, "sleep", lambda _s: None)
    env = {settings.ENV_PG_DSN: "postgresql://x"}
    assert drain.wait_for_drain(env, load_pipeline(), 10, timeout=60) >= 0
    assert next(answers, "drained") == "drained"  # asked exactly twice


def test_other_errors_are_not_hidden(monkeypatch) -> None:
    monkeypatch.setattr(drain, "slot_confirmed_lsn", lambda _dsn, _slot: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        drain.wait_for_drain({settings.ENV_PG_DSN: "postgresql://x"}, load_pipeline(), 10,
                             timeout=60)
