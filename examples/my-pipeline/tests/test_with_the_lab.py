"""Your pipeline in the lab, through cdclab's pytest fixtures (`pip install 'cdclab[pytest]'`).

The lab starts once for the session at the first test that needs it (embedded processes,
or `--cdclab-backend containers` for docker-compose.yml's services) and is removed at
the end. Source changes flow as on AWS: PostgreSQL -> DMS files -> Lambda -> Glue MERGE.
"""

from __future__ import annotations

from pathlib import Path

JOB = Path(__file__).resolve().parents[1] / "jobs" / "example_job.py"
HAND_MADE = 900_000  # keys of hand-made DMS rows, apart from the source's


def source_rows(connection) -> dict[int, tuple]:
    rows = connection.execute("SELECT id, name, location FROM public.hosts_demo").fetchall()
    return {r[0]: r[1:] for r in rows}


def silver_ids(lab) -> set[int]:
    return set(lab.silver()["id"])


def test_source_changes_reach_silver(cdclab_lab, cdclab_source) -> None:
    cdclab_lab.start_pipeline()
    with cdclab_source.transaction():
        cdclab_source.execute(
            "INSERT INTO public.hosts_demo (id, name, location) VALUES "
            "(1, 'Ana', 'Lisbon, Portugal'), (2, 'Bo', 'Oslo, Norway'), (3, 'Cy', 'Rome, Italy')")
    cdclab_source.execute("UPDATE public.hosts_demo SET name = 'Ana B' WHERE id = 1")
    cdclab_source.execute("DELETE FROM public.hosts_demo WHERE id = 3")

    cdclab_lab.wait_for_silver(timeout=300)

    silver = cdclab_lab.silver().set_index("id")
    assert set(silver.index) == {1, 2}
    assert silver.loc[1, "name"] == "Ana B"
    result = cdclab_lab.reconcile()
    assert result.equal and not result.duplicate_ids, result


def test_the_lab_runs_my_pipeline_toml(cdclab_lab, cdclab_source) -> None:
    """The emitter writes DMS files as this repository's [dms] settings say."""
    cdclab_lab.start_pipeline()
    cdclab_source.execute("INSERT INTO public.hosts_demo (id, name) VALUES (20, 'Ed') "
                          "ON CONFLICT (id) DO UPDATE SET name = excluded.name")
    cdclab_lab.wait_for_silver(timeout=300)
    newest = cdclab_lab.bronze_files().iloc[-1]["key"]
    body = cdclab_lab.lab.s3.get_object(Bucket=cdclab_lab.pipeline.lake.bronze_bucket,
                                        Key=newest)["Body"].read().decode()
    header = body.splitlines()[0].split(",")
    assert cdclab_lab.pipeline.dms.timestamp_column_name in header, (newest, header)


def test_my_glue_script_runs_as_a_job_on_what_dms_wrote(cdclab_lab, cdclab_source,
                                                        cdclab_run_job, tmp_path) -> None:
    cdclab_lab.start_pipeline()
    cdclab_source.execute("INSERT INTO public.hosts_demo (id, name) VALUES (10, 'Di') "
                          "ON CONFLICT (id) DO UPDATE SET name = excluded.name")
    cdclab_lab.wait_for_silver(timeout=300)
    bronze = cdclab_lab.lab.spec()  # the demo table's catalog names, as the job reads it
    output = f"s3://{cdclab_lab.pipeline.lake.silver_bucket}/example-output/"

    run = cdclab_run_job(JOB, {"database": bronze["bronze_database"],
                               "table": bronze["bronze_table"], "key": "id",
                               "output_path": output})

    assert run["JobRunState"] == "SUCCEEDED"
    written = cdclab_lab.read_parquet(output)
    assert {int(i) for i in written["id"]} == set(source_rows(cdclab_source))  # CSV: text


def test_the_merge_job_applies_a_hand_made_dms_file(cdclab_lab, cdclab_dms_files) -> None:
    cdclab_lab.start_pipeline()
    a, b = HAND_MADE + 1, HAND_MADE + 2
    cdclab_dms_files([
        {"Op": "I", "id": str(a), "name": "first"},
        {"Op": "U", "id": str(a), "name": "second"},
        {"Op": "I", "id": str(b), "name": "gone soon"},
        {"Op": "D", "id": str(b), "name": "gone soon"},
    ])
    cdclab_lab.wait_until(lambda: a in silver_ids(cdclab_lab), f"id {a} in silver")
    silver = cdclab_lab.silver().set_index("id")
    assert silver.loc[a, "name"] == "second" and b not in silver.index

    cdclab_dms_files([{"Op": "D", "id": str(a)}])  # leave silver as the source has it
    cdclab_lab.wait_until(lambda: a not in silver_ids(cdclab_lab), f"id {a} deleted")
