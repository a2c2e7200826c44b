"""The JVM side of AWS's `awsglue` library: spark/glue-jvm, built by Maven from source.

AWS publishes Glue's Python library (AWSGlueDataplanePython, installed from the lock) but
not the `com.amazonaws.services.glue.*` classes its Python calls; cdclab's clean-room ones
live in spark/glue-jvm. The jar is cached per source digest (like the REST launcher), so
an edit rebuilds it and an unchanged tree never does. The image builds it at build time.

    python -m glue_local.glue_jvm build   # build (or find) the jar, print its path
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from pipeline_contract import resources, settings

SOURCE_DIR = resources.resource("spark", "glue-jvm")
JAR_NAME = "cdclab-glue-jvm.jar"


def source_files(root: Path = SOURCE_DIR) -> list[Path]:
    return sorted([root / "pom.xml", *(root / "src").rglob("*.java")])


def source_digest(root: Path = SOURCE_DIR) -> str:
    h = hashlib.sha256()
    for f in source_files(root):
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    h.update(" ".join(maven_properties()).encode())  # the pins it is compiled against
    return h.hexdigest()[:16]


def jar_path() -> Path:
    return settings.cache_dir() / "classes" / f"glue-jvm-{source_digest()}" / JAR_NAME


def maven_properties() -> list[str]:
    """Pins from versions.env, so the pom's defaults never drift from the platform."""
    v = settings.versions()
    return [f"-Dspark.version={v['SPARK_VERSION']}",
            f"-Dscala.binary.version={v['SCALA_BINARY_VERSION']}",
            f"-Dhadoop.version={v['HADOOP_AWS_VERSION']}",
            f"-Daws.sdk.version={v['AWS_JAVA_SDK_BUNDLE_VERSION']}"]


def build(quiet: bool = True) -> Path:
    """The jar for the current sources, built with Maven when missing."""
    out = jar_path()
    if out.exists():
        return out
    if not shutil.which("mvn"):
        raise RuntimeError("Maven not found: it builds spark/glue-jvm (the JVM side of awsglue)."
                           " Install it (e.g. apt-get install maven) or run scripts/bootstrap.sh.")
    print(f"building spark/glue-jvm with Maven (once per source version) -> {out}",
          file=sys.stderr, flush=True)
    work = out.parent.with_name(out.parent.name + f".build-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(SOURCE_DIR, work, ignore=shutil.ignore_patterns("target"))
    cmd = ["mvn", "-B", *(["-q"] if quiet else []), "package",
           f"-Dmaven.repo.local={settings.cache_dir() / 'm2'}", *maven_properties()]
    log = settings.cache_dir() / "glue-jvm-build.log"
    with open(log, "w") as f:
        done = subprocess.run(cmd, cwd=work, stdout=f, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise RuntimeError(f"building spark/glue-jvm failed; see {log}")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    shutil.copyfile(work / "target" / JAR_NAME, tmp)
    os.replace(tmp, out)  # concurrent builders: the last rename wins, same bytes
    shutil.rmtree(work, ignore_errors=True)
    return out


def main(argv: list[str]) -> int:
    if argv[:1] != ["build"]:
        print(__doc__, file=sys.stderr)
        return 2
    print(build())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
