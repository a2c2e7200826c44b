"""What a job run's Glue special parameters mean locally (pure: no I/O, no JVM).

Glue reads a set of `--` arguments itself rather than passing them to the script alone
(https://docs.aws.amazon.com/glue/latest/dg/aws-glue-programming-etl-glue-arguments.html):
`--conf` (Spark settings; one argument, further pairs chained with ' --conf '),
`--extra-py-files`, `--extra-files`, `--extra-jars`, `--additional-python-modules` with
`--python-modules-installer-option`, `--datalake-formats`, `--job-bookmark-option`.
The runner turns them into one `RunPlan`; every decision it makes about a setting that
cannot apply on one machine is a note printed at the top of the run's log.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

CONF = "--conf"
EXTRA_PY_FILES = "--extra-py-files"
EXTRA_FILES = "--extra-files"
EXTRA_JARS = "--extra-jars"
PYTHON_MODULES = "--additional-python-modules"
PYTHON_MODULES_OPTIONS = "--python-modules-installer-option"
DATALAKE_FORMATS = "--datalake-formats"

GLUE_CATALOG_IMPL = "org.apache.iceberg.aws.glue.GlueCatalog"
SUPPORTED_DATALAKE_FORMATS = ("iceberg",)

# Settings of the driver process or of executors/cluster managers: on one machine there
# is one JVM, started once, so they are noted and not applied (the worker type and count
# are mapped to the local master the same way).
PROCESS_LEVEL_PREFIXES = (
    "spark.driver.memory", "spark.driver.cores", "spark.driver.extraJavaOptions",
    "spark.driver.extraClassPath", "spark.driver.extraLibraryPath", "spark.driver.host",
    "spark.driver.bindAddress", "spark.executor.", "spark.dynamicAllocation.",
    "spark.master", "spark.submit.", "spark.cores.max", "spark.task.cpus",
)
# The driver's own jars: the local JVM side of awsglue and Iceberg are on it; a job adds
# jars with --extra-jars (as on Glue), which is applied per run.
JAR_SETTINGS = ("spark.jars", "spark.jars.packages", "spark.jars.repositories")


class RunArgumentError(ValueError):
    """A special parameter the local runner cannot honour (the run FAILS with it)."""


def conf_pairs(value: str | None) -> dict[str, str]:
    """`--conf` as Glue reads it: 'k1=v1 --conf k2=v2 ...' (values may hold '=')."""
    if not value:
        return {}
    pairs: dict[str, str] = {}
    for part in value.split(" --conf "):
        part = part.strip()
        if part.startswith("--conf "):
            part = part[len("--conf "):].strip()
        if not part:
            continue
        key, sep, val = part.partition("=")
        if not sep or not key.strip():
            raise RunArgumentError(f"--conf: {part!r} is not key=value")
        pairs[key.strip()] = val.strip()
    return pairs


def csv_list(value: str | None) -> list[str]:
    """Glue's comma-separated path lists (--extra-py-files, --extra-jars, ...)."""
    return [p.strip() for p in (value or "").split(",") if p.strip()]


def glue_catalogs(conf: Mapping[str, str]) -> list[str]:
    """Spark catalog names that the conf backs with Iceberg's GlueCatalog."""
    names = []
    for key, value in conf.items():
        if not key.startswith("spark.sql.catalog."):
            continue
        name, _, prop = key[len("spark.sql.catalog."):].partition(".")
        if (prop == "catalog-impl" and value == GLUE_CATALOG_IMPL) or (
                prop == "type" and value == "glue"):
            names.append(name)
    return sorted(set(names))


def localize_catalogs(conf: Mapping[str, str], local_catalog: Mapping[str, str],
                      local_name: str) -> tuple[dict[str, str], list[str]]:
    """Point every GlueCatalog-backed catalog at the local REST catalog.

    `local_catalog` holds the runner's own settings for the catalog `local_name` (REST uri,
    S3 endpoint, ...); they are copied under each Glue catalog's name, replacing its
    `catalog-impl`/`type`, so the argument string a job sends to AWS works unchanged.
    Returns the new conf and one note per catalog mapped.
    """
    out = dict(conf)
    notes = []
    src = f"spark.sql.catalog.{local_name}"
    for name in glue_catalogs(conf):
        dst = f"spark.sql.catalog.{name}"
        out.pop(f"{dst}.catalog-impl", None)
        out.pop(f"{dst}.type", None)
        for key, value in local_catalog.items():
            if key.startswith(src + ".") and not key.endswith(".warehouse"):
                out.setdefault(dst + key[len(src):], value)
            elif key.startswith(src + ".") and f"{dst}.warehouse" not in out:
                out[f"{dst}.warehouse"] = value
        notes.append(f"catalog {name}: GlueCatalog -> the local Iceberg REST catalog "
                     f"({out.get(dst + '.uri', '?')})")
    return out, notes


def process_level(key: str) -> bool:
    return key.startswith(PROCESS_LEVEL_PREFIXES) or key in JAR_SETTINGS


def datalake_formats(value: str | None) -> list[str]:
    formats = [f.lower() for f in csv_list(value)]
    bad = [f for f in formats if f not in SUPPORTED_DATALAKE_FORMATS]
    if bad:
        raise RunArgumentError(
            f"cdclab: --datalake-formats {','.join(bad)} is not supported locally "
            f"(supported: {', '.join(SUPPORTED_DATALAKE_FORMATS)})")
    return formats


def modules_spec(args: Mapping[str, str]) -> tuple[list[str], list[str]] | None:
    """--additional-python-modules as pip requirements plus the installer options."""
    mods = csv_list(args.get(PYTHON_MODULES))
    if not mods:
        return None
    return mods, shlex.split(args.get(PYTHON_MODULES_OPTIONS) or "")


def modules_key(requirements: list[str], options: list[str], python_tag: str) -> str:
    """Cache key of one installed module set (same request, same interpreter: reused)."""
    raw = "\0".join([python_tag, *requirements, "--", *options])
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def worker_note(job: Mapping) -> str | None:
    wt, n, cap = job.get("WorkerType"), job.get("NumberOfWorkers"), job.get("MaxCapacity")
    if not (wt or n or cap):
        return None
    asked = f"{wt or 'workers'} x {n}" if n else f"MaxCapacity {cap}"
    return f"worker settings ({asked}) -> one local driver on this machine"


@dataclass
class RunPlan:
    """Everything the run's process needs besides the script and its argv."""

    conf: dict[str, str] = field(default_factory=dict)  # set on the run's own session
    driver_conf: dict[str, str] = field(default_factory=dict)  # needs the driver restarted
    notes: list[str] = field(default_factory=list)
    py_paths: list[str] = field(default_factory=list)  # sys.path for driver and workers
    jars: list[str] = field(default_factory=list)
