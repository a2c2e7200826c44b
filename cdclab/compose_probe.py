"""Container-side helpers for docker-compose.yml: credentials, health checks, set-up.

Every subcommand but `health` and `credentials` first loads the generated credentials
(CDCLAB_CREDENTIALS_FILE) into its own environment, as `cdclab` itself does, so no secret
is ever in a container's environment.

- `credentials`: the one-shot that generates the stack's credentials once (0600).
- `health <service>`: cheap: this start of the service passed the very `Service.healthy()`
  the embedded supervisor waits on (`cdclab serve`'s ready marker) and still answers on
  its port. `deep-health <service>` runs `Service.healthy()` itself. `port <n> [--host h]`
  checks a TCP port (Spark master, Jupyter).
- `init`: seeds the source once (only into an empty table) and sets up the lake through
  the Glue API, like `cdclab up` does after the services are healthy.
- `jupyter`: starts as root only to take the uid owning the mounted notebooks (so saving
  works for the host user), drops to it, and runs `cdclab notebook`.
- `jupyter-url`: the notebook URL with its token (for `docker compose exec`).
- `notebooks`: executes every notebook headless inside the container (CI, smoke checks).
- `spark-worker <worker args>`: the `spark` profile's standalone worker (Spark's own
  launcher, given the arguments as they are) with the S3 pair its executors read.
- `spark-app <master host>`: the Glue runner's driver is an application of that
  standalone master, holding cores (its runs go to the cluster, not local mode).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import NoReturn

from cdclab import credentials
from cdclab.services import registry
from cdclab.services.base import StackContext, port_answers
from glue_local.driver_state import driver_healthy
from pipeline_contract import minio_users, resources, settings
from pipeline_contract.settings import PipelineSettings

CONTAINER_USER = 1000  # the image's cdclab user
NOTEBOOKS = resources.resource("notebooks")


def container_context(port_names: tuple[str, ...], pipeline: PipelineSettings) -> StackContext:
    from cdclab.serve import port_for

    return StackContext(
        state_dir=settings.state_dir(),
        ports={p: port_for(p) for p in port_names},
        env={k: v for k, v in os.environ.items() if k.startswith(("CDCLAB_", "AWS_", "GLUE_"))},
        pipeline=pipeline,
    )


# The port each server answers on inside its container (cdclab.serve.CONTAINER_PORTS).
HEALTH_PORTS = {name: port.name for name, port in registry.PUBLISHED.items()}


def health(name: str) -> bool:
    """Cheap, because Docker runs it every few seconds in every container: this start of
    the service became healthy and set up (`cdclab serve`'s ready marker, written after
    the very `Service.healthy()` the supervisor waits on), and it still answers. No client
    library is imported: importing them all cost ~2 CPU-seconds per check."""
    from cdclab.serve import port_for, ready_marker

    if not ready_marker(name).exists():
        print(f"{name}: not ready yet (starting)", file=sys.stderr)
        return False
    if name == "glue" and not driver_healthy(settings.state_dir()):
        print("glue: its Spark driver died and is restarting", file=sys.stderr)
        return False
    if name in HEALTH_PORTS:
        return port_answers(port_for(HEALTH_PORTS[name]))
    if name == "emitter":  # streaming (or a full-load-only task done), not re-loading
        state = settings.state_dir() / "emitter" / "state.json"
        doc = json.loads(state.read_text())  # and not stopped for a resync
        return doc.get("phase") in ("streaming", "loaded") and not doc.get("resync_needed")
    if name == "watcher":  # listing: its state file rewritten within the last 90 s
        state = settings.state_dir() / "watcher" / "state.json"
        try:
            return time.time() - state.stat().st_mtime < settings.WATCHER_STALE_SECONDS
        except OSError:
            return False
    return True


def deep_health(name: str, pipeline: PipelineSettings) -> bool:
    """The supervisor's own check, with every client (for debugging a container)."""
    from cdclab.supervisor import all_services

    services = {s.name: s for s in all_services()}
    if name not in services:
        raise SystemExit(f"compose_probe: unknown service {name!r}; one of {', '.join(services)}")
    service = services[name]
    try:
        return bool(service.healthy(container_context(service.port_names, pipeline)))
    except Exception as exc:  # not up yet: say why in `docker inspect` health output
        print(f"{name}: not healthy: {type(exc).__name__}: {exc}", file=sys.stderr)
        return False


def init(rows: int, pipeline: PipelineSettings) -> None:
    import psycopg
    from psycopg import sql

    from cdclab.sample_data import seed
    from cdclab.setup import setup_lake

    src = pipeline.source
    with psycopg.connect(os.environ[settings.ENV_PG_DSN]) as conn:
        count = conn.execute(sql.SQL("SELECT count(*) FROM {}.{}").format(
            sql.Identifier(src.schema), sql.Identifier(src.table))).fetchone()[0]
        if rows and not count:  # seed once: a restart must not add rows again
            seed(conn, pipeline, rows, seed=42)
            print(f"init: seeded {rows} rows into {src.schema}.{src.table}", flush=True)
    setup_lake(os.environ, pipeline, progress=lambda msg: print(f"init: {msg}", flush=True))


# The one-shot mounts each service's own credentials volume here (/secrets/<service>);
# the service mounts only its own, at /run/cdclab: no container holds another's secret.
SERVICE_SECRETS = Path("/secrets")
AWS_RUNNER = "glue-aws"  # the aws profile's Glue API: only the stack's admin pair
# The `spark` profile's worker: an executor reads the Glue runner's S3 pair from the
# environment it inherits (S3A's EnvironmentVariableCredentialsProvider, S3FileIO's
# default chain); the Glue API's client keys and the catalog token are not its business.
SPARK_WORKER = "spark-worker"
EXECUTOR_KEYS = (settings.ENV_ACCESS_KEY, settings.ENV_SECRET_KEY, settings.ENV_REGION)


def service_credentials(service, creds: dict[str, str]) -> dict[str, str]:
    """What one service's container gets: its own MinIO user's pair as AWS_* (the root
    pair only where its set-up needs it), the secrets its process and set-up use, and,
    for the Glue API, its clients' keys."""
    from glue_local.launcher import accepted_clients
    from glue_local.server import ENV_GLUE_CLIENTS

    allowed = service.secrets | service.setup_secrets
    out = {k: creds[k] for k in (credentials.PG_USER, settings.ENV_REGION) if k in creds}
    users = minio_users.parse_users(creds.get(minio_users.ENV_MINIO_USERS, ""))
    if service.name in users:
        out[settings.ENV_ACCESS_KEY], out[settings.ENV_SECRET_KEY] = users[service.name]
    elif not users:  # a hand-made configuration: one pair for all (minio_users.service_keys)
        out |= {k: creds[k] for k in (settings.ENV_ACCESS_KEY, settings.ENV_SECRET_KEY)
                if k in creds}
    out |= {k: creds[k] for k in allowed if k in creds}
    if ENV_GLUE_CLIENTS in allowed:
        out[ENV_GLUE_CLIENTS] = accepted_clients(creds)
    return out


def secret_folders() -> list[str]:
    """The one-shot's mount points, made in the image so the volumes are the cdclab
    user's (a new volume takes its mount point's owner)."""
    from cdclab.supervisor import all_services

    return [str(SERVICE_SECRETS / n)
            for n in [s.name for s in all_services()] + [AWS_RUNNER, SPARK_WORKER]]


def per_service_credentials(creds: dict[str, str]) -> dict[str, dict[str, str]]:
    from cdclab.supervisor import all_services

    out = {s.name: service_credentials(s, creds) for s in all_services()}
    out[AWS_RUNNER] = {k: creds[k] for k in (settings.ENV_ACCESS_KEY, settings.ENV_SECRET_KEY)}
    out[SPARK_WORKER] = {k: v for k, v in out["glue"].items() if k in EXECUTOR_KEYS}
    return out


def make_credentials() -> None:
    path = Path(os.environ[settings.ENV_CREDENTIALS_FILE])
    created = credentials.ensure_file(path)
    print(f"credentials: {'generated' if created else 'kept'} {path} (mode 0600)", flush=True)
    creds = json.loads(path.read_text())
    for name, own in per_service_credentials(creds).items():
        folder = SERVICE_SECRETS / name
        if not folder.is_dir():
            continue  # not mounted (an older compose file): the service reads none
        target = folder / "credentials.json"
        tmp = folder / ".credentials.json.new"
        tmp.unlink(missing_ok=True)
        credentials.write_new(tmp, own)
        os.replace(tmp, target)
        print(f"credentials: {name} gets {', '.join(sorted(own)) or 'nothing'}", flush=True)


def notebook_owner(path: Path) -> tuple[int, int]:
    """The uid/gid Jupyter runs as: the notebooks' owner, never root."""
    st = path.stat()
    if st.st_uid == 0:
        return CONTAINER_USER, CONTAINER_USER
    return st.st_uid, st.st_gid


def jupyter() -> int:
    uid, gid = notebook_owner(NOTEBOOKS)
    if os.geteuid() == 0:
        home = settings.state_dir() / "home"
        home.mkdir(parents=True, exist_ok=True)
        for root, dirs, files in os.walk(settings.state_dir()):
            for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
                os.lchown(name, uid, gid)
        os.environ["HOME"] = str(home)
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
        print(f"jupyter: running as uid {uid} (owner of {NOTEBOOKS})", flush=True)
    from cdclab.cli import main as cdclab_main

    return cdclab_main(["notebook", "--ip", "0.0.0.0", "--no-browser"])


def run_notebooks(timeout: float = 420) -> int:
    """Execute every notebook headless in this container (nothing is saved)."""
    import time

    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    failed = 0
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        start = time.monotonic()
        try:
            NotebookClient(nb, timeout=timeout, kernel_name="python3",
                           resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
            print(f"notebooks: {path.name} ok ({time.monotonic() - start:.1f}s)", flush=True)
        except CellExecutionError as exc:
            failed += 1
            print(f"notebooks: {path.name} FAILED: {str(exc)[-2000:]}", flush=True)
    return 1 if failed else 0


def jupyter_url() -> int:
    from cdclab.notebook import DEFAULT_PORT, browse_url

    port = os.environ.get("CDCLAB_PORT_JUPYTER", str(DEFAULT_PORT))
    print(browse_url("0.0.0.0", int(port), os.environ[credentials.JUPYTER_TOKEN]))
    return 0


WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_worker(worker_args: list[str]) -> NoReturn:
    """Spark's standalone worker, its environment holding the S3 pair its executors
    inherit (this container's credentials file has nothing else)."""
    credentials.apply_file(os.environ)
    missing = [k for k in EXECUTOR_KEYS if not os.environ.get(k)]
    if missing:  # executors would fail each S3 read later, far from the cause
        raise SystemExit(f"spark-worker: {', '.join(missing)} missing from "
                         f"{os.environ.get(settings.ENV_CREDENTIALS_FILE)} (the credentials "
                         f"one-shot writes them to the spark-worker-secrets volume)")
    os.execvp("spark-class", ["spark-class", WORKER_CLASS, *worker_args])


def cluster_app(master_state: dict, app_name: str) -> dict | None:
    """The running application of that name holding cores, from the master's /json/.
    (A run with a driver of its own, another Glue version's, runs in local mode.)"""
    return next((a for a in master_state.get("activeapps", [])
                 if a.get("name") == app_name and a.get("cores", 0) > 0), None)


def spark_app(master_host: str, ui_port: int = 8080) -> int:
    from urllib.request import urlopen

    from glue_local.spark_session import APP_NAME

    with urlopen(f"http://{master_host}:{ui_port}/json/", timeout=10) as answer:
        state = json.load(answer)
    app = cluster_app(state, APP_NAME)
    if app is None:
        names = [a.get("name") for a in state.get("activeapps", [])]
        print(f"spark-app: no {APP_NAME} holding cores on {master_host}: {names}",
              file=sys.stderr)
        return 1
    print(f"spark-app: {app['id']} ({app['name']}) holds {app['cores']} core(s) on "
          f"{master_host}; workers: {len(state.get('workers', []))}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["spark-worker"]:  # Spark's own arguments, in any order Spark takes
        spark_worker(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m cdclab.compose_probe")
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("credentials")
    sub.add_parser("health").add_argument("service")
    sub.add_parser("deep-health").add_argument("service")
    port = sub.add_parser("port")
    port.add_argument("port", type=int)
    port.add_argument("--host", default="127.0.0.1")
    sub.add_parser("init").add_argument("--rows", type=int, default=5000)
    sub.add_parser("jupyter")
    sub.add_parser("jupyter-url")
    sub.add_parser("notebooks")
    sub.add_parser("spark-app").add_argument("master_host")
    args = parser.parse_args(argv)
    if args.what == "credentials":
        make_credentials()
        return 0
    if args.what == "health":  # no credentials needed: keep it cheap
        return 0 if health(args.service) else 1
    credentials.apply_file(os.environ)
    if args.what == "deep-health":
        return 0 if deep_health(args.service, settings.load_pipeline()) else 1
    if args.what == "port":
        return 0 if port_answers(args.port, args.host) else 1
    if args.what == "spark-app":
        return spark_app(args.master_host)
    if args.what == "jupyter":
        return jupyter()
    if args.what == "jupyter-url":
        return jupyter_url()
    if args.what == "notebooks":
        return run_notebooks()
    init(args.rows, settings.load_pipeline())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
