"""Credentials generated per install (never hard-coded), kept in a 0600 file.

The embedded runtime keeps them in the state dir. In containers the one-shot
`credentials` service writes them once to its own volume, and every process reads the
file named by CDCLAB_CREDENTIALS_FILE into its own environment at start: they never
appear in a container's environment (`docker inspect`), on a command line or in a log.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import MutableMapping
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

from cdclab.redact import mask_password
from pipeline_contract import minio_users, settings

PG_USER = "CDCLAB_PG_USER"
PG_PASSWORD = "CDCLAB_PG_PASSWORD"
JUPYTER_TOKEN = "JUPYTER_TOKEN"  # read by Jupyter Server itself
SECRET_KEYS = (settings.ENV_SECRET_KEY, PG_PASSWORD, JUPYTER_TOKEN, minio_users.ENV_MINIO_USERS,
               settings.ENV_CATALOG_TOKEN)
# keys added after the first installs: an older file gets them (_with_new_keys)
_LATER_KEYS = {minio_users.ENV_MINIO_USERS: minio_users.generate,
               settings.ENV_CATALOG_TOKEN: lambda: secrets.token_urlsafe(32)}


def generate() -> dict[str, str]:
    return {
        settings.ENV_ACCESS_KEY: "cdclab-" + secrets.token_hex(6),
        settings.ENV_SECRET_KEY: secrets.token_urlsafe(30),
        PG_USER: "cdclab",
        PG_PASSWORD: secrets.token_urlsafe(24),
        settings.ENV_REGION: settings.DEFAULT_REGION,
        # one MinIO user per service (pipeline_contract.minio_users; the pair above is MinIO's root)
        # and the Iceberg REST catalog's bearer token
        **{key: make() for key, make in _LATER_KEYS.items()},
    }


def _with_new_keys(path: Path, creds: dict[str, str]) -> dict[str, str]:
    """Credentials of an install made before a key existed (the per-service MinIO users,
    the catalog token) get it added, in place: the file stays 0600, the earlier keys stay
    as they were."""
    missing = {key: make() for key, make in _LATER_KEYS.items() if key not in creds}
    if not missing:
        return creds
    creds = {**creds, **missing}
    tmp = path.with_name(path.name + ".new")
    tmp.unlink(missing_ok=True)
    write_new(tmp, creds)
    os.replace(tmp, path)
    return creds


def write_new(path: Path, creds: dict[str, str]) -> None:
    """Create the file 0600 (never overwrite: volumes were initialised with the old ones)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(creds, f, indent=2)
        f.flush()
        os.fsync(f.fileno())


def load_or_create(state_dir: Path) -> dict[str, str]:
    path = state_dir / "credentials.json"
    if path.exists():
        return _with_new_keys(path, json.loads(path.read_text()))
    state_dir.mkdir(parents=True, exist_ok=True)
    creds = generate()
    write_new(path, creds)
    return creds


def ensure_file(path: Path) -> bool:
    """The containers' credentials: generated once (with a Jupyter token); True if new."""
    if path.exists():
        _with_new_keys(path, json.loads(path.read_text()))  # a damaged file fails loudly
        return False
    write_new(path, {**generate(), JUPYTER_TOKEN: secrets.token_urlsafe(24)})
    return True


def with_userinfo(dsn: str, user: str, password: str) -> str:
    """postgresql://host:5432/db -> postgresql://user:password@host:5432/db (kept if set)."""
    parts = urlsplit(dsn)
    if "@" in parts.netloc:
        return dsn
    netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{parts.netloc}"
    return urlunsplit(parts._replace(netloc=netloc))


def complete_env(env: MutableMapping[str, str], creds: dict[str, str]) -> None:
    """Add credentials to a configuration (values set explicitly win); fill in the DSN."""
    for key, value in creds.items():
        env.setdefault(key, value)
    dsn = env.get(settings.ENV_PG_DSN)
    if dsn and PG_USER in env and PG_PASSWORD in env:
        env[settings.ENV_PG_DSN] = with_userinfo(dsn, env[PG_USER], env[PG_PASSWORD])


def apply_file(env: MutableMapping[str, str] = os.environ) -> bool:
    """Load CDCLAB_CREDENTIALS_FILE, when set and present, into `env`; True if loaded."""
    name = env.get(settings.ENV_CREDENTIALS_FILE)
    if not name or not Path(name).exists():
        return False
    complete_env(env, json.loads(Path(name).read_text()))
    return True


def mask(env: dict[str, str]) -> dict[str, str]:
    """The configuration with secrets (and the DSN's password) replaced by ***."""
    shown = {k: ("***" if k in SECRET_KEYS else v) for k, v in env.items()}
    if settings.ENV_PG_DSN in shown:
        shown[settings.ENV_PG_DSN] = mask_password(shown[settings.ENV_PG_DSN])
    return shown
