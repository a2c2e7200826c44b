"""Log rotation as the keeper does it: a writer holding its O_APPEND file keeps writing."""

from __future__ import annotations

import os
import time

from cdclab.log_rotation import prune_run_logs, rotate, rotate_all


def test_a_large_log_is_copied_aside_and_emptied_while_its_writer_goes_on(tmp_path) -> None:
    log = tmp_path / "emitter.log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)  # as Popen's stdout
    try:
        os.write(fd, b"x" * 200)
        assert not rotate(log, max_bytes=500)
        os.write(fd, b"y" * 400)
        assert rotate(log, max_bytes=500)
        assert (tmp_path / "emitter.log.1").read_bytes() == b"x" * 200 + b"y" * 400
        os.write(fd, b"after\n")
        assert log.read_bytes() == b"after\n"  # no hole of NULs: O_APPEND writes at the end
    finally:
        os.close(fd)


def test_rotations_shift_and_the_oldest_goes(tmp_path) -> None:
    log = tmp_path / "glue.log"
    for n in range(5):
        log.write_bytes(str(n).encode() * 10)
        assert rotate(log, max_bytes=5, keep=3)
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == ["glue.log", "glue.log.1", "glue.log.2", "glue.log.3"]
    assert [(tmp_path / f"glue.log.{n}").read_bytes()[:1] for n in (1, 2, 3)] == [b"4", b"3", b"2"]


def test_only_the_newest_run_logs_are_kept(tmp_path) -> None:
    runs = tmp_path / "glue-runs"
    runs.mkdir()
    now = time.time()
    for n in range(7):
        path = runs / f"jr_{n}.log"
        path.write_text("run")
        os.utime(path, (now - 100 + n, now - 100 + n))
    assert prune_run_logs(runs, keep=3) == 4
    assert sorted(p.name for p in runs.iterdir()) == ["jr_4.log", "jr_5.log", "jr_6.log"]
    assert rotate_all(tmp_path, max_bytes=1, runs_kept=3) == []  # nothing big, nothing old
