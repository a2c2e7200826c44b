"""The keeper's loop outlives what fails in a pass (a full disk), and says so."""

from __future__ import annotations

import errno

from cdclab import keeper


def test_a_full_disk_does_not_end_the_keeper(monkeypatch, capsys, tmp_path):
    passes = iter([OSError(errno.ENOSPC, "No space left on device"),
                   OSError(errno.ENOSPC, "No space left on device"), True, False])

    def tend(self):
        outcome = next(passes)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    slept = []
    monkeypatch.setattr(keeper.Keeper, "tend", tend)
    monkeypatch.setattr(keeper.time, "sleep", slept.append)
    monkeypatch.setattr(keeper, "rotate_logs", lambda stack: None)
    monkeypatch.setattr(keeper, "Stack", lambda *a, **k: type(
        "S", (), {"wanted": lambda self: ["glue"], "state_dir": tmp_path})())
    assert keeper.main() == 0
    out = capsys.readouterr().out
    assert out.count("pass failed ([Errno 28] No space left on device)") == 2
    assert slept == [2.0, 4.0, 1.0]  # backing off while it fails, then the usual pace
