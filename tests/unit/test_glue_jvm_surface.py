"""Every JVM call AWS's awsglue Python makes has a method in spark/glue-jvm.

The calls are read from the installed AWSGlueDataplanePython source (py4j calls on
`_jdf`, `_ssql_ctx`, `_jsource`, `_jsink` and `_jvm.<Class>`), the methods from the built
jar by `javap`. A method cdclab does not implement still exists and fails with
"cdclab: <method> is not supported locally": py4j would otherwise say "Method ... does
not exist". A new awsglue release that calls something new fails this test.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import warnings
from collections import defaultdict
from importlib.metadata import distribution
from pathlib import Path

import pytest

RECEIVERS = {"_jdf": "DynamicFrame", "_ssql_ctx": "GlueContext",
             "_glue_scala_context": "GlueContext", "_jsource": "DataSource",
             "_jsink": "DataSink"}
CLASSES = {
    "DynamicFrame": "com.amazonaws.services.glue.DynamicFrame",
    "GlueContext": "com.amazonaws.services.glue.GlueContext",
    "DataSource": "com.amazonaws.services.glue.DataSource",
    "DataSink": "com.amazonaws.services.glue.DataSink",
    "GluePythonUtils": "com.amazonaws.services.glue.util.GluePythonUtils",
    "ResolveSpec": "com.amazonaws.services.glue.ResolveSpec",
    "MappingSpec": "com.amazonaws.services.glue.MappingSpec",
    "Job": "com.amazonaws.services.glue.util.Job",
    "JsonOptions": "com.amazonaws.services.glue.util.JsonOptions",
    "CallSite": "com.amazonaws.services.glue.errors.CallSite",
    "GlueLogger": "com.amazonaws.services.glue.log.GlueLogger",
}
# Called by awsglue, provided by someone else or deliberately absent (docs/glue-fidelity.md).
ABSENT = {
    "PythonUtils": "Spark's own org.apache.spark.api.python.PythonUtils",
    "StreamingSource": "streaming (forEachBatch) is not supported locally",
    "RecordUtils": "DropNullFields on nested fields is not supported locally",
    "gluefunctions": "awsglue.functions is not supported locally",
    "AWSConnectionUtils": "awsglue.devutils (Glue dev endpoints) only",
}
# Calls made through a variable or the constructor, which the scan cannot see.
INDIRECT = {("MappingSpec", "apply", 1), ("Job", "init", 3), ("Job", "commit", 0),
            ("Job", "isInitialized", 0), ("JsonOptions", "<init>", 1),
            ("CallSite", "<init>", 2), ("GlueLogger", "<init>", 0),
            ("GlueContext", "<init>", 1), ("GlueContext", "<init>", 3)}


def awsglue_calls() -> set[tuple[str, str, int]]:
    root = Path(str(distribution("AWSGlueDataplanePython").locate_file("awsglue")))
    calls = set()
    for path in root.rglob("*.py"):
        if "scripts" in path.parts:
            continue
        with warnings.catch_warnings():  # AWS's sources hold invalid escapes ('\_')
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            owner = node.func.value
            if isinstance(owner, ast.Attribute | ast.Name):
                name = owner.attr if isinstance(owner, ast.Attribute) else owner.id
                if name in RECEIVERS:
                    calls.add((RECEIVERS[name], node.func.attr, len(node.args)))
                    continue
            if (isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Attribute)
                    and owner.value.attr == "_jvm"):
                calls.add((owner.attr, node.func.attr, len(node.args)))
    return calls | INDIRECT


def jar_methods(jar: Path) -> dict[str, set[tuple[str, int]]]:
    out = subprocess.run(["javap", "-public", "-cp", str(jar), *CLASSES.values()],
                         check=True, capture_output=True, text=True).stdout
    methods: dict[str, set[tuple[str, int]]] = defaultdict(set)
    current = None
    for line in out.splitlines():
        if m := re.search(r"class (\S+)", line):
            current = next(k for k, v in CLASSES.items() if v == m.group(1))
        elif (m := re.search(r"([\w$]+)\((.*)\);", line)) and current:
            name = m.group(1)
            name = "<init>" if CLASSES[current].endswith("." + name) else name
            params = m.group(2)
            while "<" in params:  # generics hold commas: Map<String, Object>
                params = re.sub(r"<[^<>]*>", "", params)
            arity = 0 if not params.strip() else params.count(",") + 1
            methods[current].add((name, arity))
    return methods


@pytest.fixture(scope="module")
def methods():
    if not shutil.which("javap"):
        pytest.fail("javap not found: install a JDK 17 (scripts/bootstrap.sh checks for it)")
    from glue_local import glue_jvm

    return jar_methods(glue_jvm.build())


def test_every_jvm_call_of_awsglue_exists(methods) -> None:
    missing = []
    for owner, name, arity in sorted(awsglue_calls()):
        if owner in ABSENT:
            continue
        if owner not in CLASSES:
            missing.append(f"{owner}.{name}/{arity}: unknown class (add it or to ABSENT)")
        elif (name, arity) not in methods[owner]:
            missing.append(f"{CLASSES[owner]}.{name}/{arity}")
    assert not missing, "awsglue calls the JVM where glue-jvm has nothing:\n" + "\n".join(missing)


def test_the_scan_sees_the_calls_that_matter() -> None:
    calls = awsglue_calls()
    assert ("GlueContext", "getCatalogSource", 7) in calls
    assert ("DynamicFrame", "applyMapping", 6) in calls
    assert ("DataSink", "pyWriteDynamicFrame", 3) in calls
