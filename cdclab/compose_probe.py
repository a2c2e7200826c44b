"""Container-side helpers for docker-compose.yml: health checks and the one-shot init.

`python -m cdclab.compose_probe health <service>` runs the very `Service.healthy()` the
embedded supervisor waits on, with the context `cdclab serve` builds, so a compose health
check means what `cdclab status` means. `port <n> [--host h]` checks a TCP port (Spark
master, Jupyter).
`init` seeds the source once (only into an empty table) and sets up the lake through the
Glue API, like `cdclab up` does after the services are healthy.
"""

from __future__ import annotations

import argparse
import os
import sys

from cdclab import settings
from cdclab.services.base import StackContext, port_answers


def container_context(port_names: tuple[str, ...]) -> StackContext:
    from cdclab.serve import port_for

    return StackContext(
        state_dir=settings.state_dir(),
        ports={p: port_for(p) for p in port_names},
        env={k: v for k, v in os.environ.items() if k.startswith(("CDCLAB_", "AWS_", "GLUE_"))},
    )


def health(name: str) -> bool:
    from cdclab.supervisor import all_services

    services = {s.name: s for s in all_services()}
    if name not in services:
        raise SystemExit(f"compose_probe: unknown service {name!r}; one of {', '.join(services)}")
    service = services[name]
    try:
        return bool(service.healthy(container_context(service.port_names)))
    except Exception as exc:  # not up yet: say why in `docker inspect` health output
        print(f"{name}: not healthy: {type(exc).__name__}: {exc}", file=sys.stderr)
        return False


def init(rows: int) -> None:
    import psycopg
    from psycopg import sql

    from cdclab.sample_data import seed
    from cdclab.setup import setup_lake

    src = settings.load_pipeline().source
    with psycopg.connect(os.environ[settings.ENV_PG_DSN]) as conn:
        count = conn.execute(sql.SQL("SELECT count(*) FROM {}.{}").format(
            sql.Identifier(src.schema), sql.Identifier(src.table))).fetchone()[0]
        if rows and not count:  # seed once: a restart must not add rows again
            seed(conn, rows, seed=42)
            print(f"init: seeded {rows} rows into {src.schema}.{src.table}", flush=True)
    setup_lake(os.environ, progress=lambda msg: print(f"init: {msg}", flush=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cdclab.compose_probe")
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("health").add_argument("service")
    port = sub.add_parser("port")
    port.add_argument("port", type=int)
    port.add_argument("--host", default="127.0.0.1")
    sub.add_parser("init").add_argument("--rows", type=int, default=5000)
    args = parser.parse_args(argv)
    if args.what == "health":
        return 0 if health(args.service) else 1
    if args.what == "port":
        return 0 if port_answers(args.port, args.host) else 1
    init(args.rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
