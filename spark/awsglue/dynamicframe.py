"""DynamicFrame: locally a thin wrapper around a Spark DataFrame."""

from __future__ import annotations


class DynamicFrame:
    def __init__(self, jdf, glue_ctx=None, name: str = "") -> None:
        self._df = jdf  # a pyspark DataFrame (Glue's holds a JVM DynamicFrame)
        self.glue_ctx = glue_ctx
        self.name = name

    def toDF(self):  # noqa: N802 - Glue's name
        return self._df

    @classmethod
    def fromDF(cls, dataframe, glue_ctx, name: str) -> DynamicFrame:  # noqa: N802
        return cls(dataframe, glue_ctx, name)

    def count(self) -> int:
        return self._df.count()

    def schema(self):
        return self._df.schema

    def printSchema(self) -> None:  # noqa: N802
        self._df.printSchema()
