"""Credentials generated per install (never hard-coded), kept in the state dir, mode 0600."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from cdclab import settings

PG_USER = "CDCLAB_PG_USER"
PG_PASSWORD = "CDCLAB_PG_PASSWORD"


def generate() -> dict[str, str]:
    return {
        settings.ENV_ACCESS_KEY: "cdclab-" + secrets.token_hex(6),
        settings.ENV_SECRET_KEY: secrets.token_urlsafe(30),
        PG_USER: "cdclab",
        PG_PASSWORD: secrets.token_urlsafe(24),
        settings.ENV_REGION: settings.DEFAULT_REGION,
    }


def load_or_create(state_dir: Path) -> dict[str, str]:
    path = state_dir / "credentials.json"
    if path.exists():
        return json.loads(path.read_text())
    state_dir.mkdir(parents=True, exist_ok=True)
    creds = generate()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(creds, f, indent=2)
    return creds
