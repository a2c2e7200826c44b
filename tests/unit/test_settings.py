"""pipeline.toml's settings: every key checked when the file is loaded, one error type
(SettingsError) naming the file, the key, the value and what is allowed (pure, plus the
`cdclab deploy` entry point)."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import tomllib
from datetime import datetime
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from cdclab import deploy_cli
from pipeline_contract import settings
from pipeline_contract.settings import (
    PIPELINE_FILE,
    SECTIONS,
    DmsSettings,
    PipelineSettings,
    load_pipeline,
    parse_pipeline,
)
from pipeline_contract.settings_check import SettingsError, show
from pipeline_contract.table_overrides import DERIVE_RULES, NAME_RULES, TableOverrides

SHIPPED = tomllib.loads(PIPELINE_FILE.read_text())
WHERE = "my/pipeline.toml"
KEYS = [(name, key) for name, cls in SECTIONS.items() for key in cls.RULES]


def with_value(section: str, key: str, value: Any) -> dict[str, Any]:
    raw = copy.deepcopy(SHIPPED)
    raw.setdefault(section, {})[key] = value
    return raw


def refused(raw: dict[str, Any], env: dict[str, str] | None = None) -> SettingsError:
    with pytest.raises(SettingsError) as err:
        parse_pipeline(raw, WHERE, env or {})
    return err.value


def test_the_shipped_pipeline_loads_and_every_field_has_a_rule() -> None:
    p = parse_pipeline(SHIPPED, str(PIPELINE_FILE))
    assert p == load_pipeline(PIPELINE_FILE)
    assert p.glue_job.bounded_files == 500 and p.tables["public.hosts_demo"]
    for cls in SECTIONS.values():
        assert [f.name for f in dataclasses.fields(cls)] == list(cls.RULES), cls.SECTION


def test_bounded_files_lots_names_the_file_the_key_the_value_and_what_is_allowed(
        tmp_path) -> None:
    path = tmp_path / "pipeline.toml"
    path.write_text(PIPELINE_FILE.read_text().replace("bounded_files = 500",
                                                      'bounded_files = "lots"'))
    with pytest.raises(SettingsError) as err:
        load_pipeline(path)
    assert str(err.value) == (f'{path}: glue_job.bounded_files = "lots": a whole number '
                              ">= 0 (0: no cap)")
    assert (err.value.where, err.value.key, err.value.value) == (
        str(path), "glue_job.bounded_files", "lots")


def test_a_file_that_is_not_toml_or_not_there_is_named(tmp_path) -> None:
    path = tmp_path / "pipeline.toml"
    with pytest.raises(SettingsError, match=re.escape(f"{path}: cannot read it")):
        load_pipeline(path)
    path.write_text("[glue_job\n")
    with pytest.raises(SettingsError, match=re.escape(f"{path}: not valid TOML")):
        load_pipeline(path)


# --- every key x bad values (hypothesis) ----------------------------------------------
_ANY_TYPE = {
    bool: st.booleans(),
    int: st.integers(),
    float: st.floats(allow_nan=False, allow_infinity=False),
    str: st.text(max_size=8),
    list: st.lists(st.integers(), max_size=2),
    dict: st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    datetime: st.datetimes(),
}


def _other_types(kind: type) -> st.SearchStrategy:
    """Values TOML can hold that are not of `kind` (a float key takes an int)."""
    wrong = [t for t in _ANY_TYPE if t is not kind and not (kind is float and t is int)]
    return st.one_of(*(_ANY_TYPE[t] for t in wrong))


@st.composite
def bad_values(draw: st.DrawFn) -> tuple[str, str, Any]:
    section, key = draw(st.sampled_from(KEYS))
    rule = SECTIONS[section].RULES[key]
    options = [_other_types(rule.kind)]
    if rule.kind is str:
        options.append(st.text(max_size=6).map(lambda t: t + "\x00"))  # no key takes NUL
        if rule.choices:
            folded = {c.casefold() for c in rule.choices}
            options.append(st.text(max_size=12).filter(lambda t: t.casefold() not in folded))
    if rule.kind in (int, float):
        num = st.integers if rule.kind is int else st.floats
        if rule.lo is not None:
            options.append(num(max_value=rule.lo - 1))
        if rule.hi is not None:
            options.append(num(min_value=rule.hi + 1))
    if rule.kind is float:
        options.append(st.sampled_from([float("nan"), float("inf"), -float("inf")]))
    return section, key, draw(st.one_of(*options))


@given(bad_values())
def test_every_key_refuses_a_wrong_type_or_range_naming_the_key(
        case: tuple[str, str, Any]) -> None:
    section, key, value = case
    err = refused(with_value(section, key, value))
    assert err.key == f"{section}.{key}" and err.where == WHERE
    text = str(err)
    assert text.startswith(f"{WHERE}: {section}.{key} = {show(value)}: ")
    assert err.allowed == SECTIONS[section].RULES[key].allowed


@given(st.sampled_from(KEYS), st.one_of(*_ANY_TYPE.values()))
def test_any_value_of_any_key_loads_or_is_a_settings_error_about_it(
        key: tuple[str, str], value: Any) -> None:
    """Never a bare TypeError or KeyError: a value loads, or the error names its key (or
    the key it breaks a rule with)."""
    section, name = key
    try:
        p = parse_pipeline(with_value(section, name, value), WHERE)
    except SettingsError as err:
        assert err.where == WHERE
        assert err.key == f"{section}.{name}" or err.key in _TIED.get(f"{section}.{name}",
                                                                       ())
    else:
        assert getattr(getattr(p, section), name) == value


_TIED = {  # rules across keys: the error may name the other key of the rule
    "dms.cdc_inserts_only": ("dms.cdc_inserts_and_updates",),
    "dms.csv_delimiter": ("dms.csv_null_value",),
    "dms.bucket_folder": ("lake.quarantine_prefix", "lake.archive_prefix"),
    "lake.quarantine_prefix": ("lake.archive_prefix",),
    "maintenance.retain_last_snapshots": ("maintenance.max_snapshots",),
}


@pytest.mark.parametrize(("section", "key"), KEYS)
def test_every_key_has_a_rule_the_shipped_value_meets(section: str, key: str) -> None:
    cls = SECTIONS[section]
    value = SHIPPED.get(section, {}).get(key)
    default = {f.name: f.default for f in dataclasses.fields(cls)}.get(key)
    for v in (value, default):
        if v is not None and v is not dataclasses.MISSING:
            assert cls.RULES[key].accepts(v), (section, key, v)


# --- keys and sections --------------------------------------------------------------
def test_unknown_and_missing_keys_and_sections_are_named() -> None:
    err = refused(with_value("glue_job", "bounded_file", 5))
    assert err.key == "glue_job.bounded_file" and "not a key of [glue_job]" in str(err)
    assert "bounded_files" in err.allowed  # the keys it may have meant
    raw = copy.deepcopy(SHIPPED)
    del raw["lake"]["silver_bucket"]
    assert "lake.silver_bucket is missing: an S3 bucket name" in str(refused(raw))
    raw = {**copy.deepcopy(SHIPPED), "glue": {"name": "x"}}
    assert str(refused(raw)).startswith(f'{WHERE}: glue = {{"name": "x"}}: not a section')
    raw = {**copy.deepcopy(SHIPPED), "dms": "csv"}
    assert str(refused(raw)).startswith(f'{WHERE}: [dms] = "csv": a table of keys')
    raw = copy.deepcopy(SHIPPED)
    del raw["maintenance"]  # every key has a default
    assert parse_pipeline(raw, WHERE).maintenance == settings.MaintenanceSettings()


@pytest.mark.parametrize(("changes", "key", "allowed"), [
    ({"cdc_inserts_only": True, "cdc_inserts_and_updates": True},
     "dms.cdc_inserts_and_updates", "DMS refuses both"),
    ({"csv_null_value": "a,b"}, "dms.csv_null_value", "without the delimiter ','"),
    ({"csv_delimiter": '"'}, "dms.csv_delimiter", "other than a quote"),
    ({"csv_row_delimiter": "\r"}, "dms.csv_row_delimiter", "one of"),
    ({"data_format": "orc"}, "dms.data_format", "one of csv, parquet"),
    ({"parquet_version": "parquet-3-0"}, "dms.parquet_version", "parquet-2-0"),
    ({"row_group_length": -1}, "dms.row_group_length", ">= 1, or unset"),
    ({"date_partition_timezone": "Mars/Olympus"}, "dms.date_partition_timezone",
     "Area/Location"),
    ({"max_file_size_kb": 1048577}, "dms.max_file_size_kb", "from 1 to 1048576"),
    ({"bucket_folder": "dms/../x"}, "dms.bucket_folder", "'..' folder"),
    ({"bucket_folder": "dms/airbnb_db/"}, "dms.bucket_folder", "trailing"),
    ({"bucket_folder": "quarantine/dms"}, "lake.quarantine_prefix", "neither may hold"),
])
def test_rules_within_and_across_keys(changes: dict, key: str, allowed: str) -> None:
    raw = copy.deepcopy(SHIPPED)
    raw["dms"].update(changes)
    err = refused(raw)
    assert err.key == key and allowed in err.allowed


def test_compression_type_takes_either_case_as_the_dms_api_does() -> None:
    assert parse_pipeline(with_value("dms", "compression_type", "gzip"), WHERE)


def test_a_bucket_from_the_environment_is_named_as_such() -> None:
    env = {settings.ENV_BRONZE_BUCKET: "My_Bucket"}
    err = refused(copy.deepcopy(SHIPPED), env)
    assert str(err).startswith('$CDCLAB_BRONZE_BUCKET: lake.bronze_bucket = "My_Bucket": '
                               "an S3 bucket name")
    ok = parse_pipeline(SHIPPED, WHERE, {settings.ENV_BRONZE_BUCKET: "acme-bronze"})
    assert ok.lake.bronze_bucket == "acme-bronze"


# --- [tables."schema.table"] --------------------------------------------------------
TABLE_KEYS = [*NAME_RULES, *(f"derive.{k}" for k in DERIVE_RULES)]


def with_override(key: str, value: Any) -> dict[str, Any]:
    raw = copy.deepcopy(SHIPPED)
    entry = raw["tables"]["public.hosts_demo"]
    if key.startswith("derive."):
        entry["derive"][0][key.removeprefix("derive.")] = value
    else:
        entry[key] = value
    return raw


@given(st.sampled_from(TABLE_KEYS), st.one_of(*_ANY_TYPE.values()))
def test_table_overrides_load_or_name_the_key(key: str, value: Any) -> None:
    try:
        parse_pipeline(with_override(key, value), WHERE)
    except SettingsError as err:
        at = 'tables."public.hosts_demo".' + key.replace("derive.", "derive[0].")
        assert err.key == at and str(err).startswith(f"{WHERE}: {at} = ")


@pytest.mark.parametrize(("key", "value", "allowed"), [
    ("silver_table", "Hosts-Silver", "lower-case letters, digits or '_'"),
    ("silver_table", "", "1 to 255"),
    ("transformation_ctx", 7, "1 to 255 characters"),
    ("derive.into", ["a", "b", "c"], "one or two new column names"),
    ("derive.pattern", "(", "a regular expression"),
    ("derive.transform", "regexp", "one of split"),
])
def test_bad_table_overrides(key: str, value: Any, allowed: str) -> None:
    err = refused(with_override(key, value))
    assert allowed in err.allowed


def test_bad_table_entries() -> None:
    raw = copy.deepcopy(SHIPPED)
    raw["tables"]["hosts"] = {"silver_table": "x"}
    assert 'name the source table as "schema.table"' in str(refused(raw))
    raw = copy.deepcopy(SHIPPED)
    raw["tables"]["public.t"] = "t_silver"
    assert str(refused(raw)).startswith(f'{WHERE}: [tables."public.t"] = "t_silver"')
    raw = copy.deepcopy(SHIPPED)
    raw["tables"]["public.hosts_demo"]["derive"][0].pop("column")
    assert 'derive[0].column is missing' in str(refused(raw))
    with pytest.raises(SettingsError, match=r"\[tables\] = 3"):
        dataclasses.replace(load_pipeline(), tables=3).check(WHERE)  # type: ignore[arg-type]


# --- the boxes accept what the settings accept -----------------------------------------
def test_the_value_lists_agree_with_the_boxes_that_apply_them() -> None:
    from deploy.options import WORKER_TYPES
    from dms_emitter import change_seq, changes, date_partition, emitter, replication
    from glue_local import bookmarks, jobs_api
    from pipeline_contract.dms_format import parquet_types, values

    assert settings.MIGRATION_TYPES == emitter.MIGRATION_TYPES
    assert settings.CHANGE_SEQ_LAYOUTS == change_seq.LAYOUTS
    assert settings.PK_UPDATE_HANDLINGS == changes.PK_UPDATE_MODES
    assert settings.UNCHANGED_TOAST == (changes.TOAST_LOOKUP, changes.TOAST_NULL)
    assert settings.BYTEA_FORMATS == values.BYTEA_FORMATS
    assert settings.INTERVAL_STYLES == replication.INTERVAL_STYLES
    assert settings.PARQUET_VERSIONS == parquet_types.PARQUET_VERSIONS
    assert settings.ENCODING_TYPES == parquet_types.ENCODINGS
    assert tuple(date_partition.SEQUENCES) == settings.DATE_PARTITION_SEQUENCES
    assert tuple(date_partition.DELIMITERS) == settings.DATE_PARTITION_DELIMITERS
    assert settings.WORKER_TYPES == WORKER_TYPES
    assert settings.BOOKMARK_OPTIONS == bookmarks.OPTIONS
    assert settings.GLUE_MAX_TIMEOUT_MINUTES == jobs_api.MAX_TIMEOUT_MINUTES


def _choices(key: str) -> st.SearchStrategy:
    return st.sampled_from(DmsSettings.RULES[key].choices)


@given(st.fixed_dictionaries({
    "data_format": _choices("data_format"), "compression_type": _choices("compression_type"),
    "parquet_version": _choices("parquet_version"), "encoding_type": _choices("encoding_type"),
    "date_partition_sequence": _choices("date_partition_sequence"),
    "date_partition_delimiter": _choices("date_partition_delimiter"),
    "date_partition_timezone": st.sampled_from(["", "UTC", "Asia/Seoul", "America/New_York"]),
    "bytea_format": _choices("bytea_format"), "interval_style": _choices("interval_style"),
    "timestamptz_time_zone": st.sampled_from(["UTC", "Europe/Paris", "Etc/GMT+3"]),
    "cdc_inserts_only": st.booleans(), "row_group_length": st.none() | st.integers(1, 10**6),
    "csv_delimiter": st.sampled_from([",", ";", "\t", "|"]),
    "csv_null_value": st.sampled_from(["", "NULL", "\\N"]),
    "max_file_size_kb": st.none() | st.integers(1, 1048576),
}))
def test_what_the_settings_accept_the_emitter_applies(changes: dict[str, Any]) -> None:
    from dms_emitter.date_partition import DatePartitioning
    from dms_emitter.dms_csv import CsvFormat
    from dms_emitter.replication import session_options
    from pipeline_contract.dms_format.values import RenderOptions

    raw = copy.deepcopy(SHIPPED)
    raw["dms"].update({k: v for k, v in changes.items() if v is not None})
    assume(changes["csv_delimiter"] not in changes["csv_null_value"])
    d = parse_pipeline(raw, WHERE).dms
    CsvFormat.from_settings(d)
    DatePartitioning(d.date_partition_enabled, d.date_partition_sequence,
                     d.date_partition_delimiter, d.date_partition_timezone)
    RenderOptions.from_settings(d)
    session_options(d.timestamptz_time_zone, d.interval_style)
    # the object gate lets through every LOAD file the emitter cuts, and DMS's own
    from lambda_shim.function_env import DMS_MAX_FILE_SIZE_KB, gate_limits
    load_kb = d.max_file_size_kb or settings.LAB_LOAD_FILE_KB
    assert gate_limits(d)["GATE_MAX_OBJECT_BYTES"] > max(
        load_kb, d.max_file_size_kb or DMS_MAX_FILE_SIZE_KB) * 1024


def test_a_section_derived_in_code_is_not_rechecked() -> None:
    """The deploy plan derives the lake of an AWS stack (a placeholder account in a
    dry run): what the user writes is checked, not what code derives from it."""
    p = load_pipeline()
    aws = dataclasses.replace(p.lake, bronze_bucket="cdclab-bronze-<account-id>")
    assert isinstance(dataclasses.replace(p, lake=aws), PipelineSettings)


# --- `cdclab deploy` runs the same checks ------------------------------------------------
def test_deploy_refuses_a_bad_setting_naming_it(monkeypatch, tmp_path, capsys) -> None:
    path = tmp_path / "pipeline.toml"
    path.write_text(PIPELINE_FILE.read_text().replace('data_format = "csv"',
                                                      'data_format = "orc"'))
    monkeypatch.setenv(settings.ENV_PIPELINE_FILE, str(path))
    specs = tmp_path / "tables.json"
    specs.write_text(json.dumps({"tables": []}))
    assert deploy_cli.main(["deploy", "--profile", "aws", "--dry-run", "--region",
                            "us-east-1", "--tables-config", str(specs)]) == 2
    err = capsys.readouterr().err
    assert f'{path}: dms.data_format = "orc": one of csv, parquet' in err


def test_deploy_refuses_bad_table_mappings_naming_the_file(monkeypatch, tmp_path,
                                                           capsys) -> None:
    mappings = tmp_path / "mappings.json"
    mappings.write_text(json.dumps({"rules": [{"rule-type": "selection", "rule-id": "1",
                                               "object-locator": {"schema-name": "public"},
                                               "rule-action": "include", "filter": 1}]}))
    path = tmp_path / "pipeline.toml"
    path.write_text(PIPELINE_FILE.read_text().replace('table_mappings = ""',
                                                      f'table_mappings = "{mappings}"'))
    monkeypatch.setenv(settings.ENV_PIPELINE_FILE, str(path))
    specs = tmp_path / "tables.json"
    specs.write_text(json.dumps({"tables": []}))
    assert deploy_cli.main(["deploy", "--profile", "aws", "--dry-run", "--region",
                            "us-east-1", "--tables-config", str(specs)]) == 2
    err = capsys.readouterr().err
    assert f"{mappings}: rules[0] (rule-id '1').filter = 1: not a key of a rule" in err


def test_table_overrides_parse_what_the_settings_checked() -> None:
    entry = SHIPPED["tables"]["public.hosts_demo"]
    over = TableOverrides.parse("public.hosts_demo", entry)
    assert over.transformation_ctx == "hostsIncrementalInputDF"
    assert over.derive[0].into == ("location_city", "location_country")


@given(st.lists(st.text(max_size=70) | st.from_regex(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]",
                                                     fullmatch=True), max_size=4))
def test_any_job_buckets_are_kept_as_given_or_a_bad_one_is_named_by_place(names) -> None:
    raw = with_value("glue_job", "job_buckets", names)
    try:
        p = parse_pipeline(raw, WHERE, {})
    except SettingsError as err:
        i = int(err.key.removeprefix("glue_job.job_buckets[").rstrip("]"))
        assert err.value == names[i]
        assert "an S3 bucket name" in err.allowed or "not the lab's" in err.allowed
    else:
        assert p.glue_job.job_buckets == names
        assert all(re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", n) for n in names)


def test_job_buckets_are_s3_bucket_names_of_the_users_own() -> None:
    p = parse_pipeline(with_value("glue_job", "job_buckets", ["my-bucket", "a.b-c"]), WHERE)
    assert p.glue_job.job_buckets == ["my-bucket", "a.b-c"]
    for bad in ("My_Bucket", "ab", "a..b", "192.168.1.1", "xn--x", "x-s3alias"):
        err = refused(with_value("glue_job", "job_buckets", ["ok-bucket", bad]))
        assert (err.key, err.value) == ("glue_job.job_buckets[1]", bad)
        assert "an S3 bucket name" in err.allowed
    err = refused(with_value("glue_job", "job_buckets", "my-bucket"))
    assert err.key == "glue_job.job_buckets" and "a list of S3 bucket names" in err.allowed
    lab = SHIPPED["lake"]["bronze_bucket"]
    err = refused(with_value("glue_job", "job_buckets", [lab]))
    assert (err.key, err.value) == ("glue_job.job_buckets[0]", lab)
    assert "lake.bronze_bucket" in err.allowed


@given(st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False))
def test_seconds_from_the_environment_take_any_finite_number_from_zero(seconds: float) -> None:
    env = {settings.ENV_DRIVER_WARMUP: repr(seconds)}
    assert settings.env_seconds(env, settings.ENV_DRIVER_WARMUP, 60.0) == seconds
    assert settings.env_seconds({}, settings.ENV_DRIVER_WARMUP, 60.0) == 60.0


@given(st.one_of(st.floats(max_value=-1e-9).map(repr), st.just("nan"), st.just("inf"),
                 st.text().filter(lambda s: not _is_seconds(s))))
def test_seconds_from_the_environment_refuse_anything_else_by_name(value: str) -> None:
    with pytest.raises(ValueError, match=settings.ENV_DRIVER_WARMUP):
        settings.env_seconds({settings.ENV_DRIVER_WARMUP: value}, settings.ENV_DRIVER_WARMUP, 1)


def _is_seconds(text: str) -> bool:
    try:
        return 0 <= float(text) < float("inf")
    except ValueError:
        return False
