"""The idle driver hands glibc's free native memory back (glue_local.driver's
trim_native_heap, HotSpot's System.trim_native_heap) on the tests' real Spark driver."""

from __future__ import annotations

import platform
import re

import pytest

from glue_local.driver import collect_compactly, trim_native_heap

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_the_driver_trims_its_native_heap(spark) -> None:
    jvm = spark.sparkContext._jvm
    collect_compactly(jvm)  # collects, then trims; then once more on its own for the report
    report = trim_native_heap(jvm)
    assert report is not None and re.match(r"Trim native heap: RSS\+Swap: \d+\w->\d+\w", report)
