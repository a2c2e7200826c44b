"""Glue's bounded execution (boundedFiles / boundedSize) on cdclab's JVM side, with job
bookmarks: each run takes at most the cap, oldest first, and the rest waits for later runs
without ever being skipped (the bookmark's cutoff stays below every file left for later).

Real local Spark with the Glue jar (tests/resources/spark.py); S3 stands in as file://.
"""

from __future__ import annotations

import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.integration

HOUR_MS = 3_600_000


@pytest.fixture()
def glue(spark):
    from awsglue.context import GlueContext

    return GlueContext(spark.sparkContext)


def write(path, text: str, mtime: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, (mtime, mtime))


def run_job(glue, name: str, read, option: str = "job-bookmark-enable") -> list:
    from awsglue.job import Job
    from awsglue.utils import getResolvedOptions

    args = getResolvedOptions(["s.py", "--JOB_NAME", name, "--job-bookmark-option", option],
                              ["JOB_NAME"])
    job = Job(glue)
    job.init(args["JOB_NAME"], args)
    rows = read()
    job.commit()
    return rows


def reader(glue, root, **bound):
    def read():
        df = glue.create_dynamic_frame.from_options(
            "s3", {"paths": [f"file://{root}"], **bound}, format="json",
            transformation_ctx="src").toDF()
        return sorted(r.v for r in df.collect())
    return read


def test_bounded_files_splits_a_backlog_across_runs_and_skips_nothing(glue, tmp_path) -> None:
    root = tmp_path / "files"
    old = time.time() - 5 * 3600  # far older than the bookmark's 15-minute band
    for i in range(7):
        write(root / f"{i}.json", f'{{"v": {i}}}\n', old + i)
    read = reader(glue, root, boundedFiles="3")
    runs = [run_job(glue, "bounded_files", read) for _ in range(4)]
    assert runs == [[0, 1, 2], [3, 4, 5], [6], []]  # oldest first, each file once
    write(root / "7.json", '{"v": 7}\n', time.time() - 60)
    assert run_job(glue, "bounded_files", read) == [7]


def test_bounded_size_reads_until_the_size_is_reached(glue, tmp_path) -> None:
    root = tmp_path / "sizes"
    old = time.time() - 5 * 3600
    for i in range(5):  # each file 100 bytes
        write(root / f"{i}.json", f'{{"v": {i}}}'.ljust(99) + "\n", old + i)
    read = reader(glue, root, boundedSize="250")
    # files until their sizes reach 250 bytes: the third file reaches it and is read
    assert [run_job(glue, "bounded_size", read) for _ in range(3)] == [[0, 1, 2], [3, 4], []]
    tiny = reader(glue, root, boundedSize="1")  # a file larger than the cap still goes
    assert run_job(glue, "bounded_tiny", tiny) == [0]


def test_a_cap_without_bookmarks_reads_the_oldest_files(glue, tmp_path) -> None:
    root = tmp_path / "nobm"
    old = time.time() - 3600
    for i in range(4):
        write(root / f"{9 - i}.json", f'{{"v": {i}}}\n', old + i)  # names sort backwards
    read = reader(glue, root, boundedFiles="2")
    assert run_job(glue, "nobm", read, "job-bookmark-disable") == [0, 1]
    assert run_job(glue, "nobm", read, "job-bookmark-disable") == [0, 1]


def test_both_bounds_or_a_bad_value_fail_by_name(glue, tmp_path) -> None:
    root = tmp_path / "bad"
    write(root / "a.json", '{"v": 1}\n', time.time() - 3600)
    with pytest.raises(Exception, match="only one boundary"):
        reader(glue, root, boundedFiles="1", boundedSize="10")()
    with pytest.raises(Exception, match="boundedFiles must be a positive"):
        reader(glue, root, boundedFiles="ten")()


# --- the pure selection (org.cdclab.glue.BookmarkState) through py4j ------------------
files_st = st.lists(st.tuples(st.integers(0, 40 * 60_000), st.integers(1, 500)),
                    min_size=0, max_size=40)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=files_st, cap_files=st.integers(0, 6), cap_bytes=st.integers(0, 1200),
       band_ms=st.sampled_from([60_000, 900_000]), in_band=st.integers(1, 5),
       gaps=st.lists(st.integers(1, 10 * 60_000), min_size=1, max_size=12))
def test_capped_runs_read_every_file_exactly_once(spark, files, cap_files, cap_bytes,
                                                  band_ms, in_band, gaps) -> None:
    """Files appear at their modification time; runs start at random times, then keep
    running until nothing is left. Every file is read exactly once, no run exceeds the cap,
    and the bookmark never counts an unread file as processed."""
    jvm = spark.sparkContext._jvm
    glue = jvm.org.cdclab.glue
    bound_class = getattr(glue, "BookmarkState$Bound")
    if cap_files and cap_bytes:
        cap_bytes = 0  # one boundary, as Glue supports
    bound = bound_class(cap_files, cap_bytes)
    base = 10 * HOUR_MS
    objs = [(f"s3://b/t/{i:03d}.csv", size, base + t) for i, (t, size) in enumerate(files)]
    state = glue.BookmarkState.empty()
    read: dict[str, int] = {}
    now = base
    times = [now := now + g for g in gaps]
    last = base + 40 * 60_000 + band_ms
    times += [max(times[-1], last) + 60_000 * (k + 1) for k in range(len(objs) + 2)]
    for run_start in times:
        listed = jvm.java.util.ArrayList()
        for path, size, mtime in objs:
            if mtime <= run_start:  # visible once written
                listed.add(glue.SourceFile(path, size, mtime, path))
        selection = state.select(listed, run_start, band_ms, in_band, bound)
        chosen = [(f.path(), f.size()) for f in selection.chosen()]
        if cap_files:
            assert len(chosen) <= cap_files
        if cap_bytes and chosen:
            assert sum(s for _, s in chosen[:-1]) < cap_bytes  # stopped once reached
        for path, _ in chosen:
            read[path] = read.get(path, 0) + 1
        state = state.advance(selection.chosen(), selection.left(), run_start, band_ms)
        for path, size, mtime in objs:  # nothing unread counts as processed
            if path not in read and mtime <= run_start:
                assert not state.processed(glue.SourceFile(path, size, mtime, path))
    assert read == {path: 1 for path, _, _ in objs}
