"""`awsgluedq.transforms` as a script sees it: EvaluateDataQuality (AWS's [Python class]
(https://docs.aws.amazon.com/glue/latest/dg/aws-glue-api-crawler-pyspark-transforms-EvaluateDataQuality.html):
`apply(frame, ruleset, publishing_options)`, `process_rows(frame, ruleset,
publishing_options, additional_options)`), whose calls fail by name: Glue Data Quality
(DQDL rules, CloudWatch metrics, results publishing) is not implemented locally.
"""

from __future__ import annotations

WHAT = "awsgluedq.transforms.EvaluateDataQuality (AWS Glue Data Quality)"


class UnsupportedLocally(NotImplementedError):
    """A Glue feature cdclab does not implement, named."""


def _refuse(call: str) -> UnsupportedLocally:
    return UnsupportedLocally(f"cdclab: {WHAT} {call} is not supported locally; remove the "
                              "data quality step to run the job in the lab")


class EvaluateDataQuality:
    """Constructs like AWS's (Glue Studio writes `EvaluateDataQuality().process_rows(...)`);
    evaluating fails by name."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    @classmethod
    def apply(cls, *args, **kwargs):
        raise _refuse("apply")

    def process_rows(self, *args, **kwargs):
        raise _refuse("process_rows")

    def __call__(self, *args, **kwargs):
        raise _refuse("__call__")


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise ImportError(f"cdclab: awsgluedq.transforms.{name} is not supported locally")
