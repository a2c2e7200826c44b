"""What a script's own Spark settings do locally (pure: no JVM).

AWS's Iceberg page lets a script configure Spark itself instead of `--conf`
(https://docs.aws.amazon.com/glue/latest/dg/aws-glue-programming-etl-format-iceberg.html,
"Enabling the Iceberg framework": `conf = SparkConf()`, `conf.set("spark.sql.catalog.…")`,
`SparkContext(conf=conf)`); on Glue that is the job's first SparkContext, so every setting
takes effect. Locally a run joins a warm driver (docs/glue-fidelity.md, "Each run in its own
process and session"), so the script's settings go to the run's own session the way the
job's `--conf` does: session settings (catalog definitions, `spark.sql.*`) are set,
GlueCatalog-backed catalogs are pointed at the local REST catalog, driver-process settings
are noted and not applied, and driver-level settings that differ from the driver's are
refused by name (they would need the driver restarted mid-run: pass them as `--conf`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from glue_local import run_args

EXTENSIONS = "spark.sql.extensions"
# one driver per machine: the application's name is the driver's
NOTED = ("spark.app.name",)


@dataclass
class ScriptConf:
    session: dict[str, str] = field(default_factory=dict)  # to set on the run's session
    notes: list[str] = field(default_factory=list)


def script_settings(given: Mapping[str, str], defaults: Mapping[str, str]) -> dict[str, str]:
    """The settings the script made: a `SparkConf()` starts from the JVM's `spark.*`
    system properties (`defaults`), which are the driver's, not the script's."""
    return {k: v for k, v in given.items() if defaults.get(k) != v}


def plan(settings: Mapping[str, str], context: Mapping[str, str],
         lake_catalog: str | None) -> ScriptConf:
    """`settings`: the script's; `context`: the running driver's conf."""
    out = ScriptConf()
    todo = {k: v for k, v in settings.items() if context.get(k) != v}
    for key in sorted(todo):
        value = todo[key]
        if key in NOTED or run_args.process_level(key):
            out.notes.append(f"SparkConf {key} is a driver-process setting: not applied on "
                             "one machine")
        elif key == EXTENSIONS and _has_all(value, context.get(EXTENSIONS, "")):
            continue  # the driver loads these extensions already
        else:
            out.session[key] = value
    if lake_catalog and run_args.glue_catalogs(out.session):
        prefix = f"spark.sql.catalog.{lake_catalog}."
        local = {k: v for k, v in context.items() if k.startswith(prefix)}
        out.session, notes = run_args.localize_catalogs(out.session, local, lake_catalog)
        out.notes += [f"SparkConf {n}" for n in notes]
    return out


def _has_all(wanted: str, present: str) -> bool:
    have = {c.strip() for c in present.split(",") if c.strip()}
    return all(c.strip() in have for c in wanted.split(",") if c.strip())


def refusal(key: str, value: str) -> str:
    return (f"cdclab: the script's SparkConf {key}={value} is a driver-level setting that "
            "cannot change once the run has joined the local driver; give it as the job's "
            f"--conf argument ('{key}={value}'), which starts the run on a driver with it")
