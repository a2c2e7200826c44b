"""`cdclab`: run, inspect and check the local CDC pipeline."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from cdclab import credentials
from cdclab.redact import mask_password
from cdclab.services.base import ServiceError
from pipeline_contract import resources, settings
from pipeline_contract.settings_check import SettingsError
from pipeline_contract.table_specs import SpecError


def say(msg: str) -> None:
    print(f"cdclab: {msg}", flush=True)


def _runtime(p: settings.PipelineSettings):
    from cdclab import runtime

    return runtime.current(p, progress=say)


def _embedded_only(what: str, p: settings.PipelineSettings):
    rt = _runtime(p)
    if rt.name != "embedded":
        raise ServiceError(f"`cdclab {what}` drives the embedded stack; the compose stack is "
                           "started and stopped with `docker compose up -d --wait` / `down`")
    return rt.stack


# --- commands ---------------------------------------------------------------------------
def cmd_up(args: argparse.Namespace) -> int:
    from cdclab.setup import setup_lake

    p = settings.load_pipeline()
    stack = _embedded_only("up", p)
    start = time.monotonic()
    names = args.only or None
    stack.up(names)
    if all(stack.pid_of(s) is not None for s in ("glue", "minio", "postgres")):
        setup_lake(stack.env(), p, progress=say)
    say(f"stack up in {time.monotonic() - start:.1f}s; state in {stack.state_dir}")
    say(f"environment for scripts: source {stack.state_dir / 'cdclab.env'}")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    stack = _embedded_only("down", settings.load_pipeline())
    stack.down(args.only or None)
    say(f"stopped {', '.join(args.only)}" if args.only else "stack stopped")
    return 0


def emitter_summary(state: dict) -> dict:
    """What status shows of the emitter's state file (no secrets are in it)."""
    keys = ("phase", "last_file", "last_file_at", "files_written", "changes_written",
            "confirmed_lsn", "confirmed_at", "slot_lag_bytes", "schema_changes",
            "resync_needed")
    summary = {k: state[k] for k in keys if k in state}
    table_keys = ("folder", "load_rows", "load_files", "files_written", "changes_written",
                  "last_file", "last_file_at", "last_lsn", "last_commit_at", "lag_seconds")
    if "tables" in state:
        summary["tables"] = {name: {k: t[k] for k in table_keys if k in t}
                             for name, t in state["tables"].items()}
    return summary


def emitter_lines(summary: dict) -> list[str]:
    if not summary:
        return []
    lines = [f"\nemitter:  {summary.get('phase', '?')}; "
             f"{summary.get('files_written', 0)} CDC files, "
             f"{summary.get('changes_written', 0)} changes; last "
             f"{summary.get('last_file') or '-'} {summary.get('last_file_at', '')}".rstrip()]
    if summary.get("confirmed_lsn"):
        lines.append(f"  slot confirmed at {summary['confirmed_lsn']} "
                     f"({summary.get('confirmed_at', '')}): every change before it is "
                     f"stored; {summary.get('slot_lag_bytes', 0)} bytes of WAL behind")
    for name, t in sorted(summary.get("tables", {}).items()):
        newest = (f"; newest at LSN {t['last_lsn']}, {t.get('lag_seconds')} s from commit "
                  "to S3" if t.get("last_lsn") else "")
        lines.append(f"  {name:<30} full load {t.get('load_rows', 0)} rows, "
                     f"{t.get('files_written', 0)} CDC files, "
                     f"{t.get('changes_written', 0)} changes{newest}")
    changes = summary.get("schema_changes") or []
    if changes:
        newest = changes[-1]
        lines.append(f"  {len(changes)} schema change(s); newest "
                     f"{newest.get('seen_at', '')}: {newest.get('table')}: "
                     f"{'; '.join(newest.get('changes', []))}")
    return lines


def pipeline_health(rt, env: dict[str, str], statuses, runs, emitter: dict):
    from cdclab import pipeline_health as ph

    slot = rt.pipeline.source.slot
    running = {s.name for s in statuses if s.running}
    health = ph.assess(time.time(),
                       watcher=rt.service_state("watcher") if "watcher" in running else None,
                       runs=runs, slot=ph.slot_row(env, slot), slot_name=slot,
                       emitter_running="emitter" in running,
                       slot_expected=bool(emitter.get("confirmed_lsn")),
                       resync_needed=emitter.get("resync_needed"))
    if rt.name == "embedded":
        try:
            free = shutil.disk_usage(rt.where).free
        except OSError:
            free = None
        ph.assess_disk(health, rt.where, free)
    return health


def cmd_status(args: argparse.Namespace) -> int:
    from cdclab.pipeline_health import job_runs

    p = settings.load_pipeline()
    rt = _runtime(p)
    statuses = rt.status()
    try:
        env = rt.env()
    except ServiceError:
        env = {}
    runs, emitter = job_runs(env, p.glue_job.name), rt.emitter_state()
    flow = pipeline_health(rt, env, statuses, runs, emitter)
    if args.json:
        dsn = env.get(settings.ENV_PG_DSN)
        print(json.dumps({
            "runtime": rt.name,
            "state_dir": rt.where,
            "services": [s.__dict__ for s in statuses],
            "postgres_dsn": dsn if args.show_secrets or not dsn else mask_password(dsn),
            "s3_endpoint": env.get(settings.ENV_S3_ENDPOINT),
            "glue_endpoint": env.get(settings.ENV_GLUE_ENDPOINT),
            "catalog_uri": env.get(settings.ENV_CATALOG_URI),
            "env_file": str(Path(rt.where) / "cdclab.env") if rt.name == "embedded" else None,
            "emitter": emitter_summary(emitter),
            "pipeline": flow.to_json(),
            "quarantine": quarantine_summary(env, p, STATUS_REASONS, runs),
        }, indent=2, default=str))
    else:
        print(f"runtime: {rt.name} ({rt.where})")
        print(f"{'service':<14}{'state':<10}{'health':<10}{'pid':<9}{'restarts':<10}address")
        for s in statuses:
            state = "running" if s.running else "stopped"
            health = ("healthy" if s.healthy else "unhealthy") if s.running else "-"
            print(f"{s.name:<14}{state:<10}{health:<10}{s.pid or '-'!s:<9}{s.restarts:<10}"
                  f"{s.address}")
        for s in statuses:
            if s.note:
                print(f"  {s.name}: {s.note}")
        if env.get(settings.ENV_PG_DSN):
            # the password stays out of terminals and screen shares
            print(f"\npostgres: {mask_password(env[settings.ENV_PG_DSN])}")
            print(f"s3:       {env.get(settings.ENV_S3_ENDPOINT)}")
        for line in emitter_lines(emitter_summary(emitter)):
            print(line)
        if env:
            from cdclab.quarantine import lines

            print()
            for line in lines(quarantine_summary(env, p, STATUS_REASONS, runs),
                                   STATUS_REASONS):
                print(line)
        print("\npipeline: " + ("data is flowing" if flow.ok else "STALLED OR FAILING"))
        for problem in flow.problems:
            print(f"  {problem}")
    all_up = all(s.running and s.healthy for s in statuses)
    return 0 if all_up and flow.ok else 3


STATUS_REASONS = 3  # the newest quarantine reasons status shows


def quarantine_summary(env: dict[str, str], p: settings.PipelineSettings, limit: int,
                       runs=None) -> dict:
    from cdclab.quarantine import summary

    return summary(env, p, limit, runs) if env.get(settings.ENV_S3_ENDPOINT) else {}


def cmd_quarantine(args: argparse.Namespace) -> int:
    from cdclab.quarantine import lines

    p = settings.load_pipeline()
    s = quarantine_summary(_runtime(p).env(), p, args.limit)
    if args.json:
        print(json.dumps(s, indent=2, default=str))
    else:
        for line in lines(s, args.limit):
            print(line)
        if s.get("objects"):
            say("a quarantined object stays as it was; fix it and upload it again under "
                "the bronze prefix (a new name) to have it read")
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    cmd = _runtime(settings.load_pipeline()).log_command(args.service, args.follow, args.lines)
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:
        return 0


def cmd_seed(args: argparse.Namespace) -> int:
    import psycopg

    from cdclab.sample_data import seed

    p = settings.load_pipeline()
    env = _runtime(p).require("postgres")
    with psycopg.connect(env[settings.ENV_PG_DSN]) as conn:
        count = seed(conn, p, args.rows, seed=args.seed)
    say(f"seeded {count} hosts into {p.source.table}")
    return 0


def cmd_workload(args: argparse.Namespace) -> int:
    from cdclab.workload import run_workload

    p = settings.load_pipeline()
    env = _runtime(p).require("postgres")
    report = run_workload(
        env[settings.ENV_PG_DSN], p, duration=args.duration, rate=args.rate, seed=args.seed,
        progress=say,
    )
    say(f"workload done: {report}")
    return 0


def cmd_reconcile(args: argparse.Namespace) -> int:
    from cdclab.reconcile import reconcile

    p = settings.load_pipeline()
    if args.against:
        return reconcile_against(args, p)

    env = _runtime(p).require("postgres", "minio", "iceberg-rest")
    try:
        result = reconcile(env, p, args.table)
    except ValueError as exc:
        say(str(exc))
        return 2
    if args.json:
        print(json.dumps(result.to_json(), default=str))
    else:
        verdict = "EQUAL" if result.equal else "NOT EQUAL"
        for name, one in result.tables.items():
            print(f"  {name}: {'EQUAL' if one['equal'] else 'NOT EQUAL'} "
                  f"(source {one['source_rows']} rows, silver {one['silver_rows']} rows)")
        print(f"silver vs source{' (' + result.table + ')' if result.table else ''}: "
              f"{verdict} (source {result.source_rows} rows, "
              f"silver {result.silver_rows} rows)")
        for rule, count in result.normalisations.items():
            print(f"  compared as AWS carries it: {rule} ({count} values)")
        if result.quarantine_expected:
            print(f"  {result.quarantine_expected} source rows the job quarantines are not "
                  "expected in silver")
        if not result.equal:
            print(f"  missing in silver {result.missing_in_silver}, extra in silver "
                  f"{result.extra_in_silver}, different {result.different}")
            print(f"  first mismatching ids: {result.mismatching_keys}")
            if result.orphan_keys:
                print(f"  orphan keys (in silver, not in source): {result.orphan_keys}")
            for hint in result.hints:
                print(f"  {hint}")
            if result.duplicate_ids:
                print(f"  ids held more than once in silver ({result.duplicate_rows} extra "
                      f"rows): {result.duplicate_ids}")
            for ex in result.examples:
                print(f"  {ex.get('table', '')} key {ex['id']}:\n    source {ex['source']}"
                      f"\n    silver {ex['silver']}")
    return 0 if result.equal else 1


def reconcile_against(args: argparse.Namespace, p: settings.PipelineSettings) -> int:
    from cdclab.reconcile_against import MAX_EXAMPLES, against

    if not (args.silver_table and args.key):
        say("--against needs --silver-table and --key (the expected file's key columns)")
        return 2
    env = _runtime(p).require("minio", "iceberg-rest")
    try:
        result = against(env, args.silver_table, args.key.split(","), Path(args.against))
    except (OSError, ValueError) as exc:
        say(str(exc))
        return 2
    if args.json:
        print(json.dumps(result.to_json(), default=str))
        return 0 if result.equal else 1
    print(f"{result.table} vs {args.against}: {'EQUAL' if result.equal else 'NOT EQUAL'} "
          f"(expected {result.expected_rows} rows, silver {result.silver_rows} rows)")
    for label, keys in (("missing in silver", result.missing_in_silver),
                        ("extra in silver", result.extra_in_silver),
                        ("held more than once in silver", result.duplicate_keys)):
        if keys:
            print(f"  {label} ({len(keys)}): {keys[:MAX_EXAMPLES]}")
    for d in result.different[:MAX_EXAMPLES]:
        print(f"  key {d['key']}: {d['columns']}")
    if result.extra_in_silver:
        print("  (keys in silver but not expected: a primary-key UPDATE replicated without "
              "before-image columns leaves its old key; see docs/dms-fidelity.md)")
    return 0 if result.equal else 1


def cmd_replay(args: argparse.Namespace) -> int:
    from cdclab.replay import ReplayError, ReplayOptions, replay, report_json

    keys = {}
    for item in args.key or []:
        table, _, columns = item.partition("=")
        if not columns:
            say(f"--key {item!r}: expected schema.table=column[,column]")
            return 2
        keys[table] = tuple(columns.split(","))
    try:
        endpoint = json.loads(Path(args.endpoint_settings).read_text()) \
            if args.endpoint_settings else {}
    except (OSError, ValueError) as exc:
        say(f"--endpoint-settings {args.endpoint_settings}: {exc}")
        return 2
    options = ReplayOptions(
        source=args.source, name=args.name, ddl=Path(args.ddl) if args.ddl else None,
        source_dsn_env=args.source_dsn_env, keys=keys,
        endpoint_settings=endpoint.get("S3Settings", endpoint),
        table_mappings=Path(args.table_mappings) if args.table_mappings else None,
        change_seq_column=args.change_seq_column or "",
        tables=tuple(t for t in (args.tables or "").split(",") if t), as_table=args.as_table or "",
        profile=args.profile, endpoint_url=args.endpoint_url)
    need = ("minio", "glue", "iceberg-rest") + (("postgres",) if args.ddl else ())
    p = settings.load_pipeline()
    env = _runtime(p).require(*need)

    def progress(msg: str) -> None:  # with --json, stdout holds only the report
        print(f"cdclab: {msg}", file=sys.stderr if args.json else sys.stdout, flush=True)

    try:
        report = replay(options, env, p, progress)
    except ReplayError as exc:
        say(f"replay: {exc}")
        return 2
    if args.json:
        print(report_json(report))
    else:
        for line in report.lines():
            print(line)
        say(f"{len(report.runs)} runs of {report.job}: "
            f"{'all succeeded' if report.ok else 'a run failed'}; query silver with "
            "`cdclab.lab.connect()` in a notebook, or compare it with "
            "`cdclab reconcile --against FILE --silver-table T --key K`")
    return 0 if report.ok else 1


def cmd_tables(args: argparse.Namespace) -> int:
    """The tables the Glue job merges: each source table, its bronze catalog table, its
    silver table and key; --sync rebuilds them from the source (after a table was added
    to the selection, or a column to a table)."""
    from cdclab.tables_sync import published_specs, sync

    p = settings.load_pipeline()
    env = _runtime(p).require("postgres", "minio", "glue")
    skipped: dict[str, str] = {}
    if args.sync:
        report = sync(env, p, progress=say)
        specs, skipped = report.specs, report.skipped
    else:
        specs = published_specs(env, p)
    if args.json:
        print(json.dumps({"tables": specs, "skipped": skipped}, indent=1))
        return 0
    if not specs:
        say("the job has no tables yet: run `cdclab tables --sync`")
    for s in specs:
        silver = [c["name"] + (" <- " + c["from"] if c["from"] != c["name"] else "")
                  for c in s["silver_columns"]]
        print(f"{s['name']}\n  bronze  {s['bronze_database']}.{s['bronze_table']} "
              f"({s['bronze_location']})\n  silver  {s['silver_table']} key "
              f"{', '.join(s['keys'])}\n  columns {', '.join(silver)}")
    for name, why in skipped.items():
        print(f"{name}: not merged: {why}")
    return 0


def cmd_resync(args: argparse.Namespace) -> int:
    from cdclab.resync import resync

    stack = _embedded_only("resync", settings.load_pipeline())
    report = resync(stack, args.table, progress=say, wait=not args.no_wait)
    if args.json:
        print(json.dumps(report.to_json(), default=str))
    else:
        say(f"resync of {', '.join(report.tables)} done: {report.archived_objects} earlier "
            f"objects kept in {report.archive_location}")
        if report.reconcile is not None:
            verdict = "EQUAL" if report.reconcile["equal"] else "NOT EQUAL"
            say(f"silver vs source: {verdict} ({report.reconcile['source_rows']} source rows, "
                f"{report.reconcile['silver_rows']} silver rows)")
    return 0 if report.reconcile is None or report.reconcile["equal"] else 1


def cmd_demo(args: argparse.Namespace) -> int:
    from cdclab.demo import run_demo

    return run_demo(_runtime(settings.load_pipeline()), rows=args.rows, duration=args.duration,
                    rate=args.rate,
                    fresh=args.fresh, keep_running=not args.stop, progress=say)


def cmd_env(args: argparse.Namespace) -> int:
    env = _runtime(settings.load_pipeline()).env()
    if not args.show_secrets:
        env = credentials.mask(env)
        print("# secrets masked: `cdclab env --show-secrets` prints them (for eval)")
    for key, value in sorted(env.items()):
        print(f"export {key}={shlex.quote(value)}")
    return 0


def cmd_job_add(args: argparse.Namespace) -> int:
    from cdclab.user_jobs import JobArgumentError, add_job, parse_arguments

    p = settings.load_pipeline()
    env = _runtime(p).require("minio", "glue")
    try:
        name = add_job(env, p, Path(args.script), args.name, parse_arguments(args.arg), say,
                       trigger=args.trigger)
    except JobArgumentError as exc:
        raise ServiceError(str(exc)) from exc
    say(f"run it: cdclab job run {name}")
    return 0


def cmd_job_run(args: argparse.Namespace) -> int:
    from cdclab.user_jobs import JobArgumentError, parse_arguments, run_job

    env = _runtime(settings.load_pipeline()).require("glue")
    try:
        run = run_job(env, args.name, parse_arguments(args.arg), say, wait=not args.no_wait,
                      timeout=args.timeout)
    except JobArgumentError as exc:
        raise ServiceError(str(exc)) from exc
    state = run["JobRunState"]
    if run.get("ErrorMessage"):
        say(f"error: {run['ErrorMessage']}")
    state_dir = env.get(settings.ENV_STATE_DIR)
    where = (settings.glue_run_logs(Path(state_dir)) / f"{run['Id']}.log" if state_dir
             else "cdclab logs glue")
    say(f"run {run['Id']}: {state} (log: {where})")
    return 0 if state in ("SUCCEEDED", "STARTING", "RUNNING", "WAITING") else 1


def cmd_init(args: argparse.Namespace) -> int:
    from cdclab.init_project import InitError, init_project

    try:
        # the lab's own pipeline.toml: what the new project's files start from
        init_project(Path(args.folder), defaults=settings.load_pipeline(settings.PIPELINE_FILE))
    except (InitError, OSError) as exc:
        print(f"cdclab init: error: {exc}", file=sys.stderr)
        return 2
    return 0


def cmd_image_build(args: argparse.Namespace) -> int:
    from cdclab.containers import ImageBuildError, build

    try:
        build(say)
    except ImageBuildError as exc:
        print(f"cdclab image build: error: {exc}", file=sys.stderr)
        return 1
    return 0


def cmd_compose(args: argparse.Namespace) -> int:
    from cdclab.containers import ENV_PIPELINE_DIR, compose_command

    command, env = compose_command(args.compose_args)
    say(f"docker compose with {env[ENV_PIPELINE_DIR]}/pipeline.toml")
    try:
        return subprocess.run(command, env=env, check=False).returncode
    except FileNotFoundError:
        print("cdclab compose: error: `docker` is not on PATH: install Docker with its "
              "Compose plugin", file=sys.stderr)
        return 2


def cmd_serve(args: argparse.Namespace) -> int:
    from cdclab.serve import serve

    return serve(args.service)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cdclab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("up", help="start the embedded stack (all services, or --only some)")
    p.add_argument("--only", nargs="+", metavar="SERVICE")
    p.set_defaults(func=cmd_up)
    p = sub.add_parser("down", help="stop the services cdclab started")
    p.add_argument("--only", nargs="+", metavar="SERVICE")
    p.set_defaults(func=cmd_down)
    p = sub.add_parser("status", help="each service with its address and health")
    p.add_argument("--json", action="store_true")
    p.add_argument("--show-secrets", action="store_true", help="the DSN with its password")
    p.set_defaults(func=cmd_status)
    p = sub.add_parser("quarantine", help="objects and records set aside, with the reasons")
    p.add_argument("--json", action="store_true")
    p.add_argument("--limit", type=int, default=20, help="reasons shown of each kind")
    p.set_defaults(func=cmd_quarantine)
    p = sub.add_parser("logs", help="show a service's log (all when none is named)")
    p.add_argument("service", nargs="?")
    p.add_argument("-f", "--follow", action="store_true")
    p.add_argument("-n", "--lines", type=int, default=40)
    p.set_defaults(func=cmd_logs)
    p = sub.add_parser("seed", help="load realistic sample hosts into the source table")
    p.add_argument("--rows", type=int, default=5000)
    p.add_argument("--seed", type=int, default=42)
    p.set_defaults(func=cmd_seed)
    p = sub.add_parser("workload", help="run a randomized insert/update/delete workload")
    p.add_argument("--duration", type=float, default=20.0, help="seconds")
    p.add_argument("--rate", type=float, default=50.0, help="transactions per second")
    p.add_argument("--seed", type=int, default=None)
    p.set_defaults(func=cmd_workload)
    p = sub.add_parser("reconcile", help="check that silver equals source (exit 1 if not)")
    p.add_argument("--table", help="one source table (schema.table); default: every one")
    p.add_argument("--json", action="store_true")
    p.add_argument("--against", metavar="FILE",
                   help="compare a silver table with the expected rows of FILE (CSV with a "
                        "header) instead of the source")
    p.add_argument("--silver-table", help="with --against: catalog.namespace.table")
    p.add_argument("--key", help="with --against: the key columns, comma-separated")
    p.set_defaults(func=cmd_reconcile)
    p = sub.add_parser("replay", help="merge the files a real DMS task wrote (a folder or "
                       "s3://bucket/prefix, read only) with the unchanged Glue job")
    p.add_argument("source", help="a folder, or s3://bucket/prefix")
    p.add_argument("--name", default="replay", help="names the job, folder and database")
    p.add_argument("--ddl", help="CREATE TABLE statements of the source tables")
    p.add_argument("--source-dsn-env", metavar="VAR",
                   help="a variable holding a live source's DSN (read its catalog)")
    p.add_argument("--key", action="append", metavar="SCHEMA.TABLE=COLS",
                   help="header-only tables: their key columns")
    p.add_argument("--endpoint-settings", metavar="FILE",
                   help="the task's S3 endpoint settings (JSON, AWS's names)")
    p.add_argument("--table-mappings", metavar="FILE", help="the task's table mappings (JSON)")
    p.add_argument("--change-seq-column",
                   help="the column the task adds with $AR_H_CHANGE_SEQ (without mappings)")
    p.add_argument("--tables", help="only these schema.table, comma-separated")
    p.add_argument("--as-table", metavar="SCHEMA.TABLE",
                   help="SOURCE is one table's folder (its files directly in it)")
    p.add_argument("--profile", help="the AWS profile to read an s3:// source with")
    p.add_argument("--endpoint-url", help="an S3-compatible endpoint for an s3:// source")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_replay)
    p = sub.add_parser("tables", help="the tables the Glue job merges (--sync: rebuild "
                                      "them from the source)")
    p.add_argument("--sync", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_tables)
    p = sub.add_parser("resync", help="re-snapshot the source (after a lost slot, a rebuilt "
                       "source or lost emitter state) so silver equals it again")
    p.add_argument("table", nargs="?", help="schema.table (default: every table, and the slot)")
    p.add_argument("--no-wait", action="store_true",
                   help="return once the emitter restarted, without draining and reconciling")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_resync)
    p = sub.add_parser("demo", help="the whole pipeline end to end, then reconcile")
    p.add_argument("--rows", type=int, default=5000)
    p.add_argument("--duration", type=float, default=20.0, help="workload seconds")
    p.add_argument("--rate", type=float, default=40.0, help="workload transactions per second")
    p.add_argument("--fresh", action="store_true", help="wipe the state dir first")
    p.add_argument("--stop", action="store_true", help="stop the stack afterwards")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("job", help="bring your own Glue script: add it as a job, run it")
    jobs = p.add_subparsers(dest="job_command", required=True)
    j = jobs.add_parser("add", help="upload a Glue script and create/update its job")
    j.add_argument("script", help="the .py Glue script")
    j.add_argument("--name", help="job name (default: the script's file name)")
    j.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                   help="a default job argument (--KEY VALUE for the script); repeatable")
    j.add_argument("--trigger", action="store_true",
                   help="start it, like the pipeline's job, for every batch of new bronze "
                        "objects (tags the job; a job created with the same tag through "
                        "boto3 is triggered too)")
    j.set_defaults(func=cmd_job_add)
    j = jobs.add_parser("run", help="start a run of a job and follow it to the end")
    j.add_argument("name")
    j.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                   help="a run argument, overriding the job's default; repeatable")
    j.add_argument("--no-wait", action="store_true", help="return once the run started")
    j.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait")
    j.set_defaults(func=cmd_job_run)
    p = sub.add_parser("init", help="start your own repository: pipeline.toml, table "
                       "mappings, an example Glue job and test (keeps files already there)")
    p.add_argument("folder", nargs="?", default=".", help="where (default: here)")
    p.set_defaults(func=cmd_init)
    p = sub.add_parser("image", help="the cdclab/runtime image the containers run")
    images = p.add_subparsers(dest="image_command", required=True)
    i = images.add_parser("build", help="build it from the installed cdclab (needs Docker "
                          "only: Maven, Go and the JDK run inside the build)")
    i.set_defaults(func=cmd_image_build)
    p = sub.add_parser("compose", help="docker compose on the lab's docker-compose.yml with "
                       "your pipeline.toml, e.g. `cdclab compose up -d --wait`")
    p.add_argument("compose_args", nargs=argparse.REMAINDER, help="docker compose's own")
    p.set_defaults(func=cmd_compose)
    p = sub.add_parser("serve", help="run one service in the foreground (container entry point)")
    p.add_argument("service")
    p.set_defaults(func=cmd_serve)
    p = sub.add_parser("env", help="print the stack's configuration as shell exports")
    p.add_argument("--show-secrets", action="store_true",
                   help="include passwords and keys (for `eval \"$(cdclab env --show-secrets)\"`)")
    p.set_defaults(func=cmd_env)
    try:
        from cdclab.deploy_cli import add_deploy_commands
    except ImportError:  # the deploy profile is optional at import time
        pass
    else:
        add_deploy_commands(sub)
    try:
        from cdclab.notebook import add_notebook_command
    except ImportError:
        pass
    else:
        add_notebook_command(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # the user's ./pipeline.toml (installed cdclab): named for every process it starts
    mine = resources.user_pipeline_file()
    if mine is not None:
        os.environ.setdefault(settings.ENV_PIPELINE_FILE, str(mine.resolve()))
    # containers: the generated credentials, into this process's environment only
    credentials.apply_file(os.environ)
    try:
        return args.func(args)
    except (ServiceError, SettingsError, SpecError) as exc:  # bad settings: no traceback
        print(f"cdclab: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("cdclab: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `cdclab status | head`: the reader has had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
