"""Which `GlueVersion` a job may have locally, and why the others are refused.

The lab has AWS's Glue 5.1 and 5.0 runtimes, each run on its own libraries
(glue_local.glue_runtimes): 5.1 is AWSGlueDataplanePython 5.1.0, Spark 3.5.6, Iceberg
1.10.0; 5.0 is AWSGlueDataplanePython 5.0.0, Spark 3.5.4, Iceberg 1.7.1; both Python 3.11,
Scala 2.12.18, Java 17 ([AWS Glue versions]
(https://docs.aws.amazon.com/glue/latest/dg/release-notes.html); pins: versions.env). Any
other version would run a script written for another Spark and Python on the wrong ones,
so it is refused by name at CreateJob, UpdateJob and StartJobRun rather than run silently
on 5.1.
"""

from __future__ import annotations

from glue_local.errors import GlueError

DEFAULT = "5.1"  # what a job without GlueVersion runs locally (AWS's default moves on)
LOCAL = ("5.0", "5.1")
# The runtimes of the versions the lab does not run (AWS Glue versions page).
OTHER_RUNTIMES = {
    "0.9": "Spark 2.2.1 and Python 2.7",
    "1.0": "Spark 2.4.3 and Python 2.7 or 3.6",
    "2.0": "Spark 2.4.3 and Python 3.7",
    "3.0": "Spark 3.1.1 and Python 3.7",
    "4.0": "Spark 3.3.0 and Python 3.10",
}


def checked(version: object, where: str) -> str:
    """The job's Glue version (DEFAULT when absent); any other than 5.0/5.1 is refused,
    naming it and why (`where` says which request or job)."""
    if version is None:
        return DEFAULT
    text = str(version)
    if text in LOCAL:
        return text
    runs = ("AWS Glue 5.1 (Spark 3.5.6) and AWS Glue 5.0 (Spark 3.5.4), each on its own "
            "libraries, both Python 3.11")
    if text in OTHER_RUNTIMES:
        why = (f"GlueVersion {text} is {OTHER_RUNTIMES[text]}, and a script for it is not "
               f"tested against Spark 3.5")
    elif text == "auto":
        why = "GlueVersion auto runs AWS's newest Glue version, which the lab does not have"
    else:
        why = f"GlueVersion {text[:40]!r} is not a Glue version the lab has"
    raise GlueError("InvalidInputException",
                    f"{where}: cdclab: GlueVersion {text[:40]} is not supported locally: {why}; "
                    f"the lab runs {runs}. Set GlueVersion to 5.0 or 5.1.")
