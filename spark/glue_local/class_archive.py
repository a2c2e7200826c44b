"""A class-data-sharing archive for the local Spark driver's JVM.

A fresh driver spends seconds loading and verifying the same classes at every start
(the SparkSession ~7 s, its first query and catalog call ~4.5 s more). Java's dynamic CDS
archive (JEP 350: `-XX:ArchiveClassesAtExit` once, then `-XX:SharedArchiveFile`) maps
them instead: about 3 s less per driver start (docs/performance.md, eighteenth run).
`make setup` (scripts/bootstrap.sh) makes it once per Java, PySpark and jar set, into the
cache; a driver uses it when it is there. `-Xshare:auto`: an archive the JVM finds not
matching is ignored, never an error.

    python -m glue_local.class_archive   # make it (bootstrap does)
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from pipeline_contract import settings

# what the archive's making runs: the session, the warm start's query, and the JIT
# warm-up's batches (Catalyst, Iceberg's MERGE and commit), so their classes are in it
MAKE = """
import sys
from pathlib import Path
from glue_local import jit_warmup
from glue_local.spark_session import build_session
spark = build_session({}, {}, "none", app_name="cdclab-class-archive",
                      extra_conf={"spark.driver.extraJavaOptions": sys.argv[1]})
spark.range(100).selectExpr("sum(id)").collect()
jit_warmup.exercise(spark, Path(sys.argv[2]), 5.0, busy=lambda: False)
jvm = spark._jvm
spark.stop()
jvm.System.exit(0)  # the archive is written as the JVM exits
"""


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java") or "java"
    return os.path.realpath(found)


def _pyspark_jars() -> Path:
    import pyspark

    return (Path(pyspark.__file__).parent / "jars").resolve()


def archive_path(jars: Sequence[Path]) -> Path:
    """Where the archive of a driver with these jars (besides PySpark's own) lives: named
    by what the JVM checks it against (the Java binary, and PySpark's jars, the driver's
    class path: their folder, names, sizes and times) and these jars' names and sizes. So
    each virtualenv has its own."""
    pyspark_jars = _pyspark_jars()
    digest = hashlib.sha256(f"{_java()}\0{pyspark_jars}".encode())
    for jar in [*sorted(pyspark_jars.glob("*.jar")), *(Path(j) for j in jars)]:
        stat = jar.stat() if jar.exists() else None
        digest.update(f"\0{jar.name}\0{stat and stat.st_size}\0{stat and stat.st_mtime_ns}"
                      .encode())
    return settings.cache_dir() / "jvm" / f"spark-driver-{digest.hexdigest()[:16]}.jsa"


def java_options(jars: Sequence[Path]) -> str:
    """The driver's JVM options that map the archive, when it has been made ('' if not);
    one the JVM finds stale is ignored without a word."""
    path = archive_path(jars)
    return (f" -XX:SharedArchiveFile={path} -Xshare:auto -Xlog:cds*=off"
            if path.is_file() else "")


def prune(folder: Path) -> None:
    """Remove the archives of virtualenvs that are gone (a removed checkout's)."""
    for source in folder.glob("*.jsa.source"):
        if not Path(source.read_text().strip()).is_dir():
            source.with_suffix("").unlink(missing_ok=True)
            source.unlink(missing_ok=True)


def make(jars: Sequence[Path]) -> Path | None:
    """Make the archive for a driver with `jars` (none yet); its path, or None if the JVM
    did not write it. Written under a temporary name, then renamed."""
    path = archive_path(jars)
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    prune(path.parent)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    work = path.with_name(f"make-{os.getpid()}")
    options = (f"-Djava.io.tmpdir={work} -XX:+ExitOnOutOfMemoryError "
               f"-XX:ArchiveClassesAtExit={partial}")
    work.mkdir(exist_ok=True)
    try:
        subprocess.run([sys.executable, "-c", MAKE, options, str(work / "warm")],
                       env={**os.environ, settings.ENV_STATE_DIR: str(work / "state")},
                       capture_output=True, timeout=600, check=False)
        if not partial.is_file() or partial.stat().st_size == 0:
            return None
        path.with_name(f"{path.name}.source").write_text(f"{_pyspark_jars()}\n")
        partial.replace(path)
        return path
    finally:
        partial.unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    from glue_local import glue_jvm

    jars = [*settings.spark_jars(), glue_jvm.jar_path()]
    if not archive_path(jars).is_file():
        print("class_archive: making the Spark driver's class archive (once per Java, "
              "PySpark and jar set; ~30 s)", file=sys.stderr)
    made = make(jars)
    print(made or "the driver's class archive was not written (drivers start without it)")


if __name__ == "__main__":
    main()
