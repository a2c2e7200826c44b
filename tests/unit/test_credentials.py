"""Generated credentials: the 0600 file, the DSN's userinfo, masking."""

from __future__ import annotations

import stat
from urllib.parse import unquote, urlsplit

from hypothesis import given
from hypothesis import strategies as st
from psycopg.conninfo import conninfo_to_dict

from cdclab import credentials
from pipeline_contract import settings

text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
               min_size=1, max_size=30)


@given(user=text, password=text)
def test_userinfo_round_trips_any_user_and_password(user: str, password: str) -> None:
    dsn = credentials.with_userinfo("postgresql://postgres:5432/airbnb_db", user, password)
    parsed = conninfo_to_dict(dsn)
    assert (parsed["user"], parsed["password"]) == (user, password)
    assert (parsed["host"], parsed["port"], parsed["dbname"]) == ("postgres", "5432",
                                                                  "airbnb_db")
    url = urlsplit(dsn)  # what the standard library sees agrees
    assert (unquote(url.username), unquote(url.password)) == (user, password)
    assert (url.hostname, url.port, url.path) == ("postgres", 5432, "/airbnb_db")


@given(user=text, password=text)
def test_an_existing_userinfo_is_kept(user: str, password: str) -> None:
    dsn = "postgresql://a:b@h:1/d"
    assert credentials.with_userinfo(dsn, user, password) == dsn
    given_dsn = credentials.with_userinfo("postgresql://h:1/d", user, password)
    assert credentials.with_userinfo(given_dsn, "x", "y") == given_dsn  # idempotent


def test_explicit_settings_win_and_the_dsn_is_completed() -> None:
    env = {settings.ENV_PG_DSN: "postgresql://postgres:5432/airbnb_db",
           settings.ENV_ACCESS_KEY: "mine"}
    creds = credentials.generate()
    credentials.complete_env(env, creds)
    assert env[settings.ENV_ACCESS_KEY] == "mine"
    assert env[settings.ENV_SECRET_KEY] == creds[settings.ENV_SECRET_KEY]
    assert conninfo_to_dict(env[settings.ENV_PG_DSN])["password"] == creds[credentials.PG_PASSWORD]


def test_the_file_is_made_once_0600_with_a_jupyter_token(tmp_path) -> None:
    path = tmp_path / "credentials.json"
    assert credentials.ensure_file(path) is True
    first = path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert credentials.ensure_file(path) is False and path.read_text() == first
    env = {settings.ENV_CREDENTIALS_FILE: str(path)}
    assert credentials.apply_file(env)
    assert env[credentials.JUPYTER_TOKEN] and env[settings.ENV_SECRET_KEY]


def test_a_missing_file_loads_nothing(tmp_path) -> None:
    env = {settings.ENV_CREDENTIALS_FILE: str(tmp_path / "absent.json")}
    assert credentials.apply_file(env) is False and len(env) == 1


def test_mask_hides_every_secret_and_the_dsn_password() -> None:
    creds = {**credentials.generate(), credentials.JUPYTER_TOKEN: "tok"}
    env = {**creds, settings.ENV_PG_DSN: "postgresql://u:hunter2@h:5432/d"}
    shown = credentials.mask(env)
    for key in credentials.SECRET_KEYS:
        assert shown[key] == "***"
    assert "hunter2" not in str(shown) and creds[settings.ENV_SECRET_KEY] not in str(shown)
