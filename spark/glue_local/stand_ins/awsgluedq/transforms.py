"""`awsgluedq.transforms` as a script sees it: EvaluateDataQuality, AWS's [Python class]
(https://docs.aws.amazon.com/glue/latest/dg/aws-glue-api-crawler-pyspark-transforms-EvaluateDataQuality.html),
evaluating DQDL locally (awsgluedq.dqdl parses, awsgluedq.evaluate evaluates; this module
is the thin Spark adapter).

`apply(frame, ruleset, publishing_options)` gives the rule outcomes (Rule, Outcome,
FailureReason, EvaluatedMetrics map<string,double>); `process_rows(...)` a
DynamicFrameCollection of originalData, ruleOutcomes and rowLevelOutcomes (the frame plus
DataQualityRulesPass, DataQualityRulesFail, DataQualityRulesSkip, DataQualityEvaluationResult),
the keys Glue Studio's generated code selects. Publishing options are accepted and
logged: nothing is sent to CloudWatch, the Glue Studio Data Quality tab or resultsS3Prefix.
"""

from __future__ import annotations

from awsgluedq.dqdl import DQDLError, Rule, Ruleset, UnsupportedLocally, parse
from awsgluedq.evaluate import InvalidWhere, evaluate, row_results

__all__ = ["EvaluateDataQuality", "UnsupportedLocally", "DQDLError"]

PUBLISHING_OPTIONS = {"dataQualityEvaluationContext", "enableDataQualityCloudWatchMetrics",
                      "enableDataQualityResultsPublishing", "resultsS3Prefix"}
HIDDEN = "__cdclab_dq_where_{}"


def where_clauses(ruleset: Ruleset) -> list[str]:
    found: list[str] = []

    def walk(node) -> None:
        if isinstance(node, Rule):
            if node.where is not None and node.where not in found:
                found.append(node.where)
        else:
            for part in node.parts:
                walk(part)
    for rule in ruleset.rules:
        walk(rule)
    return found


def check_options(publishing_options, additional_options) -> dict:
    for name, value in (("publishing_options", publishing_options),
                        ("additional_options", additional_options)):
        if value is not None and not isinstance(value, dict):
            raise TypeError(f"cdclab: EvaluateDataQuality {name} must be a dict, got "
                            f"{type(value).__name__}")
    options = dict(publishing_options or {})
    unknown = sorted(set(options) - PUBLISHING_OPTIONS)
    if unknown:
        raise ValueError(f"cdclab: EvaluateDataQuality publishing_options {unknown} are not "
                         f"Glue's; allowed: {sorted(PUBLISHING_OPTIONS)}")
    return options


def run(frame, ruleset: str, publishing_options, additional_options):
    """The outcomes, per-row results and the frame's DataFrame, rows in one order."""
    from pyspark.sql import functions as F  # noqa: N812 (PySpark's own spelling)

    options = check_options(publishing_options, additional_options)
    parsed = parse(ruleset)
    if not hasattr(frame, "toDF") or not hasattr(frame, "glue_ctx"):
        raise TypeError("cdclab: EvaluateDataQuality frame must be a DynamicFrame, got "
                        f"{type(frame).__name__}")
    df = frame.toDF()
    columns = list(df.columns)
    clauses = where_clauses(parsed)
    with_masks, invalid = df, set()
    for i, clause in enumerate(clauses):
        try:  # Spark analyses the expression here; a bad one fails its rule, not the job
            with_masks = with_masks.withColumn(HIDDEN.format(i), F.expr(clause).cast("boolean"))
        except Exception:
            invalid.add(clause)
    collected = with_masks.collect()
    rows = [r.asDict(recursive=False) for r in collected]
    masks = {c: [bool(r[HIDDEN.format(i)]) for r in rows]
             for i, c in enumerate(clauses) if c not in invalid}

    def where(clause: str) -> list[bool]:
        if clause in invalid:
            raise InvalidWhere(clause)
        return masks[clause]
    plain = [{k: v for k, v in r.items() if k in columns} for r in rows]

    def sql(statement: str) -> float:
        df.createOrReplaceTempView("primary")  # the name DQDL's CustomSql uses
        got = df.sparkSession.sql(statement).collect()
        if len(got) != 1 or len(got[0]) != 1 or got[0][0] is None:
            raise ValueError(f"CustomSql must return one number; {statement!r} returned "
                             f"{len(got)} row(s)")
        return float(got[0][0])

    outcomes = evaluate(parsed, columns, plain, where, sql)
    context = options.get("dataQualityEvaluationContext", "default_context")
    failed = sum(o.outcome == "Failed" for o in outcomes)
    print(f"cdclab: data quality {context}: {len(outcomes)} rule(s), "
          f"{len(outcomes) - failed} passed, {failed} failed; not published locally "
          "(CloudWatch metrics, Glue Studio results, resultsS3Prefix)", flush=True)
    return outcomes, [tuple(r[c] for c in columns) for r in rows], df


def outcomes_frame(frame, outcomes, name: str):
    from awsglue.dynamicframe import DynamicFrame
    from pyspark.sql.types import DoubleType, MapType, StringType, StructField, StructType

    schema = StructType([StructField("Rule", StringType()), StructField("Outcome", StringType()),
                         StructField("FailureReason", StringType()),
                         StructField("EvaluatedMetrics", MapType(StringType(), DoubleType()))])
    spark = frame.toDF().sparkSession
    df = spark.createDataFrame([(o.rule, o.outcome, o.failure_reason,
                                 {k: float(v) for k, v in o.metrics.items()})
                                for o in outcomes], schema)
    return DynamicFrame.fromDF(df, frame.glue_ctx, name)


class EvaluateDataQuality:
    """Glue's transform: `EvaluateDataQuality.apply(frame=, ruleset=, publishing_options=)`
    and `EvaluateDataQuality().process_rows(frame=, ruleset=, publishing_options=,
    additional_options=)`."""

    DATA_QUALITY_RULE_OUTCOMES_KEY = "ruleOutcomes"
    DATA_QUALITY_ROW_LEVEL_OUTCOMES_KEY = "rowLevelOutcomes"
    DATA_QUALITY_ORIGINAL_DATA_KEY = "originalData"

    def __init__(self, *args, **kwargs) -> None:
        pass

    @classmethod
    def apply(cls, frame, ruleset, publishing_options=None, additional_options=None, **kw):
        outcomes, _, _ = run(frame, ruleset, publishing_options, additional_options)
        return outcomes_frame(frame, outcomes, "ruleOutcomes")

    def __call__(self, frame, ruleset, publishing_options=None, additional_options=None,
                 **kw):
        return self.apply(frame, ruleset, publishing_options, additional_options)

    def process_rows(self, frame, ruleset, publishing_options=None, additional_options=None,
                     **kw):
        from awsglue.dynamicframe import DynamicFrame, DynamicFrameCollection
        from pyspark.sql.types import ArrayType, StringType, StructField, StructType

        outcomes, rows, df = run(frame, ruleset, publishing_options, additional_options)
        per_row = row_results(outcomes, len(rows))
        schema = StructType([*df.schema.fields,
                             StructField("DataQualityRulesPass", ArrayType(StringType())),
                             StructField("DataQualityRulesFail", ArrayType(StringType())),
                             StructField("DataQualityRulesSkip", ArrayType(StringType())),
                             StructField("DataQualityEvaluationResult", StringType())])
        row_df = df.sparkSession.createDataFrame(
            [(*r, x.passed, x.failed, x.skipped, x.result)
             for r, x in zip(rows, per_row, strict=True)], schema)
        ctx = frame.glue_ctx
        return DynamicFrameCollection({
            self.DATA_QUALITY_ORIGINAL_DATA_KEY: frame,
            self.DATA_QUALITY_RULE_OUTCOMES_KEY: outcomes_frame(frame, outcomes, "ruleOutcomes"),
            self.DATA_QUALITY_ROW_LEVEL_OUTCOMES_KEY: DynamicFrame.fromDF(
                row_df, ctx, "rowLevelOutcomes")}, ctx)


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise ImportError(f"cdclab: awsgluedq.transforms.{name} is not supported locally")
