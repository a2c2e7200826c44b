"""Example Glue job: the latest change per key of the bronze table -> Parquet.

Runs unchanged on AWS Glue 5.1 and in the lab (`cdclab job add jobs/example_job.py
--arg output_path=s3://<silver-bucket>/example/`, then `cdclab job run example_job`).
Like the shipped jobs, awsglue is imported inside main(): the pure logic below imports
nothing of Glue, so tests/test_example_job.py runs it with plain pytest.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

OPS = ("I", "U", "D")  # the DMS Op column: insert, update, delete


def latest_per_key(rows: Iterable[dict], key: str, seq: str) -> list[dict]:
    """Per key, the change with the greatest change sequence; deleted keys drop out.
    Order by the sequence DMS adds (AR_H_CHANGE_SEQ), never by timestamp: two changes
    can share a timestamp."""
    latest: dict[object, dict] = {}
    for row in rows:
        if row.get("Op", "I") not in OPS:
            raise ValueError(f"row {row!r}: Op must be one of {OPS}")
        held = latest.get(row[key])
        if held is None or str(row[seq]) > str(held[seq]):
            latest[row[key]] = row
    return [r for r in latest.values() if r.get("Op") != "D"]


def main() -> None:
    from awsglue.context import GlueContext
    from awsglue.job import Job
    from awsglue.utils import getResolvedOptions
    from pyspark.context import SparkContext
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    args = getResolvedOptions(
        sys.argv, ["JOB_NAME", "database", "table", "key", "output_path"])
    glue_context = GlueContext(SparkContext.getOrCreate())
    job = Job(glue_context)
    job.init(args["JOB_NAME"], args)

    bronze = glue_context.create_dynamic_frame.from_catalog(
        database=args["database"], table_name=args["table"],
        transformation_ctx="bronze").toDF()  # transformation_ctx: job bookmarks
    newest = Window.partitionBy(args["key"]).orderBy(F.col("change_seq").desc())
    latest = (bronze.withColumn("_rank", F.row_number().over(newest))
              .where((F.col("_rank") == 1) & (F.col("Op") != "D")).drop("_rank"))
    latest.write.mode("overwrite").parquet(args["output_path"])
    job.commit()


if __name__ == "__main__":
    main()
