"""Keeping secrets off terminals and logs."""

from __future__ import annotations


def mask_password(dsn: str) -> str:
    """postgresql://user:secret@host/db -> postgresql://user:***@host/db"""
    scheme, sep, rest = dsn.partition("://")
    creds, at, host = rest.rpartition("@")
    if not sep or not at or ":" not in creds:
        return dsn
    return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"
