"""Choice types and DynamicRecords (docs/glue-fidelity.md, "Choice types and
DynamicRecords"): scripts in the style of AWS's resolve_choice sample run as jobs through
the local Glue API, their catalog table in the same API; each output is checked against
the result computed here in plain Python from the same input, without Glue."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import boto3
import pytest

from glue_local.server import running_server
from tests.integration.test_glue_corpus import create, run
from tests.integration.test_glue_partitioned_catalog import sdk_driver  # noqa: F401

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HEADER = ["drg definition", "provider id", "provider name", "provider city",
          "provider zip code", "total discharges", "average covered charges"]
ROWS = [["039 - EXTRACRANIAL PROCEDURES", "10001", "SOUTHEAST ALABAMA", "DOTHAN", "36301",
         "91", "$32963.07"],
        ["039 - EXTRACRANIAL PROCEDURES", "10005", "MARSHALL MEDICAL", "BOAZ", "35957",
         "14", "$15131.85"],
        ["057 - DEGENERATIVE NERVOUS", "10011", "ST VINCENTS", "BIRMINGHAM", "35235", "33",
         "$37560.37"],
        # the sample's erroneous records: strings in `provider id`
        ["948 - SIGNS & SYMPTOMS", "ABCDEF", "UNKNOWN PROVIDER", "NOWHERE", "11111", "45",
         "$1.00"],
        ["948 - SIGNS & SYMPTOMS", "x10001", "OTHER PROVIDER", "NOWHERE", "22222", "12",
         "$2.00"]]
TYPES = {"provider id": "bigint", "provider zip code": "bigint", "total discharges": "bigint"}
LAZY = {"SerializationLibrary": "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
        "Parameters": {"field.delim": ","}}


@pytest.fixture()
def glue(sdk_driver, tmp_path):  # noqa: F811
    """The local Glue API; its job runs and the driver read its Data Catalog."""
    from tests.resources.spark import glue_session

    system = sdk_driver.sparkContext._jvm.java.lang.System
    with running_server(tmp_path / "state", env={}, quiet=True,
                        session_factory=glue_session) as server:
        system.setProperty("cdclab.glue.endpoint", server.endpoint)
        try:
            yield boto3.client("glue", endpoint_url=server.endpoint, region_name="us-east-1",
                               aws_access_key_id="x", aws_secret_access_key="y")
        finally:
            system.clearProperty("cdclab.glue.endpoint")


def typed(value: str, hive: str):
    """Glue's CSV reader: a value the column's type parses is of that type, else a string."""
    if hive == "bigint":
        try:
            return int(value), "long"
        except ValueError:
            return value, "string"
    return value, "string"


def lines(folder: Path) -> list[dict]:
    out = []
    for p in sorted(folder.iterdir()):
        if p.name.startswith(("_", ".")):
            continue
        out += [json.loads(line) for line in p.read_text().splitlines() if line]
    return out


def no_nulls(record: dict) -> dict:
    """JSON sinks leave out null fields (Spark's writer locally)."""
    return {k: (no_nulls(v) if isinstance(v, dict) else v) for k, v in record.items()
            if v is not None}


def key(r: dict) -> str:
    return r["provider name"]


def test_resolve_choice_sample_reads_a_choice_and_resolves_it_four_ways(glue, tmp_path):
    src, out = tmp_path / "medicare", tmp_path / "out"
    src.mkdir()
    with (src / "Medicare_Hospital_Provider.csv").open("w", newline="") as f:
        csv.writer(f).writerows([HEADER, *ROWS])
    glue.create_database(DatabaseInput={"Name": "payments"})
    glue.create_table(DatabaseName="payments", TableInput={
        "Name": "medicare", "Parameters": {"classification": "csv",
                                           "skip.header.line.count": "1"},
        "StorageDescriptor": {
            "Location": f"file://{src}", "SerdeInfo": LAZY,
            "Columns": [{"Name": c, "Type": TYPES.get(c, "string")} for c in HEADER]}})
    create(glue, "choices", "resolve_choice_medicare.py", target=f"file://{out}")
    got = run(glue, "choices")
    log = Path(got["LogGroupName"], f"{got['Id']}.log").read_text()

    # AWS's printSchema of the sample: the choice, then each resolution
    assert "|-- provider id: choice\n|    |-- long\n|    |-- string\n" in log
    assert "|-- provider id: long\n" in log
    assert "|-- provider id_long: long\n" in log
    assert log.count("|-- provider id_string: string\n") == 1
    assert "|-- provider id: struct\n|    |-- long: long\n|    |-- string: string\n" in log

    records = []
    for row in ROWS:
        rec = {c: typed(v, TYPES.get(c, "string")) for c, v in zip(HEADER, row, strict=True)}
        records.append(rec)

    def plain(rec: dict, choice) -> dict:
        out = {}
        for c in HEADER:
            value, kind = rec[c]
            if c == "provider id":
                out.update(choice(value, kind))
            else:
                out[c] = value
        return out

    def as_long(v, k):
        return {"provider id": v if k == "long" else None}

    want = {
        "medicare_json_cast": [plain(r, as_long) for r in records],
        "medicare_json_project": [plain(r, as_long) for r in records],
        "medicare_json_match_catalog": [plain(r, as_long) for r in records],
        "medicare_json_make_cols": [plain(r, lambda v, k: {f"provider id_{k}": v})
                                    for r in records],
        "medicare_json_make_struct": [plain(r, lambda v, k: {"provider id": {k: v}})
                                      for r in records],
        "medicare_json_sql": [plain(r, lambda v, k: {"provider id": {k: v}})
                              for r in records if r["total discharges"][0] > 30],
    }
    for folder, rows in want.items():
        assert sorted(lines(out / folder), key=key) == sorted(map(no_nulls, rows), key=key), \
            folder
    # make_cols: the first type's column in the field's place, the others at the end
    first = lines(out / "medicare_json_make_cols")[0]
    assert list(first)[:2] == ["drg definition", "provider id_long"]


def test_choice_fields_in_python_records_and_writes(glue, sdk_driver, tmp_path):  # noqa: F811
    """Map/Filter see each record's own value of a choice; a write of an unresolved choice
    fails by name (on Glue a choice must be resolved before it is written)."""
    from awsglue.context import GlueContext

    src = tmp_path / "t"
    src.mkdir()
    (src / "a.csv").write_text("id,n\n1,5\n2,five\n3,\n")
    glue.create_database(DatabaseInput={"Name": "db"})
    glue.create_table(DatabaseName="db", TableInput={
        "Name": "t", "Parameters": {"classification": "csv", "skip.header.line.count": "1"},
        "StorageDescriptor": {"Location": f"file://{src}", "SerdeInfo": LAZY,
                              "Columns": [{"Name": "id", "Type": "int"},
                                          {"Name": "n", "Type": "int"}]}})
    ctx = GlueContext(sdk_driver.sparkContext)
    frame = ctx.create_dynamic_frame.from_catalog(database="db", table_name="t")
    n = next(f for f in frame.schema().fields if f.name == "n").dataType
    assert type(n).__name__ == "ChoiceType" and sorted(n.choices) == ["int", "string"]
    seen = frame.map(lambda r: {**r, "kind": type(r["n"]).__name__}).toDF().collect()
    assert sorted((r.id, r.kind) for r in seen) == [(1, "int"), (2, "str"), (3, "NoneType")]
    ints = frame.filter(lambda r: isinstance(r["n"], int)).resolveChoice(
        specs=[("n", "project:int")]).toDF().collect()
    assert [(r.id, r.n) for r in ints] == [(1, 5)]
    # the schema comes from the records: where only ints are left, the field is an int
    only_ints = frame.filter(lambda r: isinstance(r["n"], int)).schema()
    assert next(f for f in only_ints.fields if f.name == "n").dataType.typeName() == "int"
    with pytest.raises(Exception, match="cdclab: writing the unresolved choice fields"):
        ctx.write_dynamic_frame.from_options(frame, "s3", {"path": f"file://{tmp_path}/o"},
                                             format="json")
    by_choice = frame.resolveChoice(choice="make_cols").toDF()
    assert by_choice.columns == ["id", "n_int", "n_string"]


REVIEWS = [{"id": i, "rating": i % 6, "country": ["US", "DE", "US"][i % 3]} for i in range(40)]
for i in range(0, 40, 4):
    del REVIEWS[i]["rating"]  # records without the key (AWS: the predicate's KeyError)
for i in range(1, 40, 10):
    del REVIEWS[i]["country"]
REVIEWS[5]["rating"] = None  # an explicit null: None >= 4 is a TypeError on Glue too


def aws_filter(records: list[dict], predicate) -> list[dict]:
    """awsglue/dynamicframe.py's filter: KeyError, ValueError and TypeError make the
    predicate False; the record is dropped."""
    kept = []
    for r in records:
        try:
            if predicate(r):
                kept.append(r)
        except (KeyError, ValueError, TypeError):
            pass
    return kept


def test_glue_studio_filter_drops_records_without_the_key(glue, tmp_path):
    src, out = tmp_path / "reviews", tmp_path / "out"
    src.mkdir()
    (src / "part.json").write_text("\n".join(json.dumps(r) for r in REVIEWS) + "\n")
    create(glue, "studio-filter", "glue_studio_json_filter.py", source=f"file://{src}",
           target=f"file://{out}")
    run(glue, "studio-filter")
    def predicate(row):
        return row["rating"] >= 4 and row["country"] != "DE"

    want = aws_filter(REVIEWS, predicate)
    every_key = [{"id": None, "rating": None, "country": None, **r} for r in REVIEWS]
    assert 0 < len(want) < len(aws_filter(every_key, predicate))  # what locally was kept
    assert sorted(lines(out), key=lambda r: r["id"]) == sorted(map(no_nulls, want),
                                                               key=lambda r: r["id"])


def test_json_records_carry_only_their_keys(glue, sdk_driver, tmp_path):  # noqa: F811
    """Map sees only the keys a JSON record has; an exception other than KeyError,
    ValueError, TypeError in a Filter predicate makes an error record (AWS's Python)."""
    from awsglue.context import GlueContext
    from awsglue.transforms import Filter, Map

    src = tmp_path / "r"
    src.mkdir()
    (src / "part.json").write_text("\n".join(json.dumps(r) for r in REVIEWS) + "\n")
    ctx = GlueContext(sdk_driver.sparkContext)
    frame = ctx.create_dynamic_frame.from_options("s3", {"paths": [f"file://{src}"]},
                                                  format="json")
    keys = Map.apply(frame=frame, f=lambda r: {"id": r["id"], "keys": ",".join(sorted(r))})
    assert {r.id: r["keys"] for r in keys.toDF().collect()} == {
        r["id"]: ",".join(sorted(r)) for r in REVIEWS}  # an explicit null is a key
    odd = Filter.apply(frame=frame, f=lambda r: 1 / (r["id"] % 7) > 0)
    assert odd.count() == len([r for r in REVIEWS if r["id"] % 7])
    assert odd.errorsCount() == len([r for r in REVIEWS if r["id"] % 7 == 0])
    # a DataFrame's rows have every column: fromDF records carry their nulls (as on Glue,
    # whose DropNullFields example adds a null column through fromDF)
    from awsglue.dynamicframe import DynamicFrame

    df_frame = DynamicFrame.fromDF(frame.toDF(), ctx, "df")
    assert Filter.apply(frame=df_frame, f=lambda r: "rating" in r).count() == len(REVIEWS)


def test_json_fields_of_mixed_types_are_choices(glue, sdk_driver, tmp_path):  # noqa: F811
    """A JSON field holding numbers and strings is choice(long, string), as Glue's reader
    makes it; the other fields keep their one type."""
    from awsglue.context import GlueContext

    src = tmp_path / "j"
    src.mkdir()
    records = [{"id": 1, "pid": 10001, "name": "a"}, {"id": 2, "pid": "ABC", "name": "b"},
               {"id": 3, "name": "c"}, {"id": 4, "pid": 2.5, "name": "d"}]
    (src / "p.json").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    ctx = GlueContext(sdk_driver.sparkContext)
    frame = ctx.create_dynamic_frame.from_options("s3", {"paths": [f"file://{src}"]},
                                                  format="json")
    pid = next(f for f in frame.schema().fields if f.name == "pid").dataType
    assert type(pid).__name__ == "ChoiceType"
    assert list(pid.choices) == ["long", "double", "string"]
    cols = frame.resolveChoice(specs=[("pid", "make_cols")]).toDF()
    assert cols.columns == ["id", "name", "pid_long", "pid_double", "pid_string"]

    def kind(v):
        return {int: "long", float: "double", str: "string"}.get(type(v))

    assert sorted(tuple(r) for r in cols.collect()) == sorted(
        (r["id"], r["name"], *(r.get("pid") if kind(r.get("pid")) == k else None
                               for k in ("long", "double", "string")))
        for r in records)
    cast = frame.resolveChoice(specs=[("pid", "cast:string")]).toDF()
    assert sorted(r.pid or "" for r in cast.collect()) == ["", "10001", "2.5", "ABC"]
    seen = frame.map(lambda r: {"id": r["id"], "t": type(r.get("pid")).__name__}).toDF()
    assert {r.id: r.t for r in seen.collect()} == {1: "int", 2: "str", 3: "NoneType",
                                                   4: "float"}


PROVIDERS = [
    {"id": 1, "pid": 10001, "provider": {"id": 10001, "name": "SOUTHEAST"}},
    {"id": 2, "pid": "ABC", "provider": {"id": "x10005", "name": "MARSHALL"}},
    {"id": 3, "pid": 10011, "provider": {"id": 10011, "name": "ST VINCENTS"}},
    {"id": 4, "provider": None},
    {"id": 5, "pid": 7, "provider": {"name": "NO ID"}},
]
SOLO = {"id": 6, "pid": "Z9", "provider": {"id": 42, "name": "SOLO"}}


def kind_of(v) -> str | None:
    return {int: "long", str: "string"}.get(type(v))


def resolved(records: list[dict], choice) -> list[dict]:
    """Each record with `pid` and `provider.id` put through choice(name, value, kind) ->
    the fields that replace it (in plain Python, from the records as written)."""
    out = []
    for r in records:
        rec = {"id": r["id"]}
        if "pid" in r:
            rec.update(choice("pid", r["pid"], kind_of(r["pid"])))
        if r.get("provider") is not None:
            p = {k: v for k, v in r["provider"].items() if k != "id"}
            if "id" in r["provider"]:
                p.update(choice("id", r["provider"]["id"], kind_of(r["provider"]["id"])))
            rec["provider"] = p
        out.append(no_nulls(rec))
    return sorted(out, key=lambda r: r["id"])


def test_choices_from_multiline_and_catalog_json_and_nested_paths(glue, tmp_path):
    """AWS's resolve_choice sample over JSON: choices at `pid` and `provider.id` from
    multi-line JSON (Glue Studio's "multiline" spelling) and from a catalog JSON table,
    each resolved on its dotted path; every folder against plain Python."""
    src, table, out = tmp_path / "files", tmp_path / "table", tmp_path / "out"
    src.mkdir()
    table.mkdir()
    (src / "providers.json").write_text(json.dumps(PROVIDERS, indent=2))  # one array
    (src / "solo.json").write_text(json.dumps(SOLO, indent=2))  # one object over lines
    records = [*PROVIDERS, SOLO]
    (table / "part.json").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    glue.create_database(DatabaseInput={"Name": "payments"})
    glue.create_table(DatabaseName="payments", TableInput={
        "Name": "providers", "Parameters": {"classification": "json"},
        "StorageDescriptor": {
            "Location": f"file://{table}",
            "SerdeInfo": {"SerializationLibrary": "org.openx.data.jsonserde.JsonSerDe"},
            "Columns": [{"Name": "id", "Type": "int"}, {"Name": "pid", "Type": "bigint"},
                        {"Name": "provider", "Type": "struct<id:bigint,name:string>"}]}})
    create(glue, "nested", "nested_choices_json.py", source=f"file://{src}",
           target=f"file://{out}")
    got = run(glue, "nested")
    log = Path(got["LogGroupName"], f"{got['Id']}.log").read_text()
    assert "|-- pid: choice\n|    |-- long\n|    |-- string\n" in log
    assert ("|-- provider: struct\n|    |-- id: choice\n|    |    |-- long\n"
            "|    |    |-- string\n|    |-- name: string\n") in log
    # make_cols: the first type's field in place, the others at the end of its struct
    assert ("|-- provider: struct\n|    |-- id_long: long\n|    |-- name: string\n"
            "|    |-- id_string: string\n") in log

    def cast_long(name, v, k):
        return {name: v if k == "long" else None}  # a string that is no number: null

    def got_folder(folder: str) -> list[dict]:
        return sorted(lines(out / folder), key=lambda r: r["id"])

    assert got_folder("files_cast") == resolved(records, cast_long)
    assert got_folder("files_make_cols") == resolved(
        records, lambda name, v, k: {f"{name}_{k}": v})
    assert got_folder("files_project") == resolved(
        records, lambda name, v, k: {name: v if k == ("string" if name == "id" else "long")
                                     else None})
    assert got_folder("catalog_match_catalog") == resolved(records, cast_long)
    assert got_folder("catalog_make_struct") == resolved(
        records, lambda name, v, k: {name: {k: v}})


def test_json_multiline_spellings_and_array_choices(glue, sdk_driver, tmp_path):  # noqa: F811
    """multiLine and multiline both read multi-line JSON; AWS's array example (ResolveChoice
    class: "myList[].price" with "cast:double") resolves a choice inside an array's structs;
    a choice among an array's scalars fails by name; a long/double mix stays double."""
    from awsglue.context import GlueContext

    src, arr = tmp_path / "m", tmp_path / "a"
    src.mkdir()
    arr.mkdir()
    (src / "p.json").write_text(json.dumps(PROVIDERS, indent=2))
    ctx = GlueContext(sdk_driver.sparkContext)

    def read(path, **fo):
        return ctx.create_dynamic_frame.from_options(
            "s3", {"paths": [f"file://{path}"]}, format="json", format_options=fo)

    for spelling in ("multiLine", "multiline"):
        frame = read(src, **{spelling: True})
        assert sorted(r.id for r in frame.toDF().collect()) == [1, 2, 3, 4, 5]
        pid = next(f for f in frame.schema().fields if f.name == "pid").dataType
        assert type(pid).__name__ == "ChoiceType", spelling
    with pytest.raises(Exception, match="multiLine=true and multiline=false disagree"):
        read(src, multiLine=True, multiline=False).count()

    lists = [{"id": 1, "myList": [{"price": 100.00}, {"price": "$100.00"}, {"n": 1}]},
             {"id": 2, "myList": []}, {"id": 3}, {"id": 4, "myList": [{"price": 7}]}]
    (arr / "p.json").write_text("\n".join(json.dumps(r) for r in lists))
    frame = read(arr)
    element = next(f for f in frame.schema().fields if f.name == "myList").dataType.elementType
    price = next(f for f in element.fields if f.name == "price").dataType
    assert type(price).__name__ == "ChoiceType" and list(price.choices) == [
        "long", "double", "string"]
    with pytest.raises(Exception, match=r"writing the unresolved choice fields \[myList\[\]"):
        ctx.write_dynamic_frame.from_options(frame, "s3", {"path": f"file://{tmp_path}/o"},
                                             format="json")
    cast = frame.resolveChoice(specs=[("myList[].price", "cast:double")]).toDF().collect()

    def as_double(v):
        return float(v) if isinstance(v, (int, float)) else None  # "$100.00" does not cast

    assert sorted((r.id, None if r.myList is None else [e.price for e in r.myList])
                  for r in cast) == sorted(
        (r["id"], None if "myList" not in r else [as_double(e.get("price"))
                                                  for e in r["myList"]]) for r in lists)
    # toDF keeps an unresolved choice as its struct, no longer marked as a choice
    kept = frame.toDF().schema["myList"].dataType.elementType["price"]
    assert kept.dataType.names == ["long", "double", "string"] and kept.metadata == {}
    made = frame.resolveChoice(choice="make_cols").toDF()
    assert made.schema["myList"].dataType.elementType.names == [
        "n", "price_long", "price_double", "price_string"]
    scalars = tmp_path / "s"
    scalars.mkdir()
    (scalars / "p.json").write_text(json.dumps({"tags": [1, "x"]}))
    with pytest.raises(Exception, match=r"cdclab: a choice inside an array of scalars \(field "
                                        r"tags\[\] holds \[long, string\]\) is not "
                                        "supported locally"):
        read(scalars).count()
    mixed = tmp_path / "n"
    mixed.mkdir()
    (mixed / "p.json").write_text(json.dumps({"n": 1}) + "\n" + json.dumps({"n": 2.5}))
    n = next(f for f in read(mixed).schema().fields if f.name == "n").dataType
    assert n.typeName() == "double"  # what Glue gives is not documented (docs/glue-fidelity.md)


NULLS = [{"id": 1, "k": "a", "s": {"x": 1, "y": None}, "items": [{"p": 1}]},
         {"id": 2, "k": None, "s": None},
         {"id": 3, "s": {"x": 2}},
         {"id": 4, "k": None, "s": {"y": None}}]


def keys_of(record: dict) -> dict:
    """A record's keys, nested dicts' too, as Glue's DynamicRecords have them."""
    return {k: keys_of(v) if isinstance(v, dict) else None for k, v in record.items()}


def test_explicit_nulls_are_keys_missing_keys_are_not(glue, sdk_driver, tmp_path):  # noqa: F811
    """A JSON key holding null is in the record (None), one the JSON lacks is not, from
    files (line-delimited and multi-line) and a catalog JSON table, through Filter, Map
    (a key it sets to None stays), select/drop/rename/apply_mapping; the hidden part is
    in no schema, DataFrame, plan, show or write."""
    from awsglue.context import GlueContext
    from awsglue.transforms import ApplyMapping, DropFields, Filter, Map, RenameField, SelectFields

    lines_dir, multi, table = tmp_path / "l", tmp_path / "m", tmp_path / "t"
    for d in (lines_dir, multi, table):
        d.mkdir()
    (lines_dir / "p.json").write_text("\n".join(json.dumps(r) for r in NULLS) + "\n")
    (multi / "p.json").write_text(json.dumps(NULLS, indent=2))
    (table / "p.json").write_text("\n".join(json.dumps(r) for r in NULLS) + "\n")
    glue.create_database(DatabaseInput={"Name": "nulls"})
    glue.create_table(DatabaseName="nulls", TableInput={
        "Name": "recs", "Parameters": {"classification": "json"},
        "StorageDescriptor": {
            "Location": f"file://{table}",
            "SerdeInfo": {"SerializationLibrary": "org.openx.data.jsonserde.JsonSerDe"},
            "Columns": [{"Name": "id", "Type": "bigint"}, {"Name": "k", "Type": "string"},
                        {"Name": "s", "Type": "struct<x:bigint,y:bigint>"}]}})
    parts = tmp_path / "parts"  # a partitioned catalog table: records split over two
    for part, records in (("a", NULLS[:2]), ("b", NULLS[2:])):
        (parts / f"p={part}").mkdir(parents=True)
        (parts / f"p={part}" / "r.json").write_text(
            "\n".join(json.dumps(r) for r in records) + "\n")
    columns = [{"Name": "id", "Type": "bigint"}, {"Name": "k", "Type": "string"},
               {"Name": "s", "Type": "struct<x:bigint,y:bigint>"}]
    serde = {"SerializationLibrary": "org.openx.data.jsonserde.JsonSerDe"}
    glue.create_table(DatabaseName="nulls", TableInput={
        "Name": "parts", "Parameters": {"classification": "json"},
        "PartitionKeys": [{"Name": "p", "Type": "string"}],
        "StorageDescriptor": {"Location": f"file://{parts}/", "Columns": columns,
                              "SerdeInfo": serde}})
    glue.batch_create_partition(DatabaseName="nulls", TableName="parts", PartitionInputList=[
        {"Values": [v], "StorageDescriptor": {"Location": f"file://{parts}/p={v}/",
                                              "Columns": columns, "SerdeInfo": serde}}
        for v in ("a", "b")])
    ctx = GlueContext(sdk_driver.sparkContext)
    frames = {
        "lines": ctx.create_dynamic_frame.from_options(
            "s3", {"paths": [f"file://{lines_dir}"]}, format="json"),
        "multiline": ctx.create_dynamic_frame.from_options(
            "s3", {"paths": [f"file://{multi}"]}, format="json",
            format_options={"multiline": True}),
        "catalog": ctx.create_dynamic_frame.from_catalog(database="nulls", table_name="recs"),
        "partitioned": DropFields.apply(frame=ctx.create_dynamic_frame.from_catalog(
            database="nulls", table_name="parts"), paths=["p"])}

    def ids(frame) -> list[int]:
        return sorted(r.id for r in frame.toDF().collect())

    def seen(frame) -> dict:
        """Each record's keys as a Map function sees them."""
        got = Map.apply(frame=frame, f=lambda r: {"id": r["id"], "j": json.dumps(
            keys_of(dict(r)), sort_keys=True)})
        return {r.id: json.loads(r.j) for r in got.toDF().collect()}

    table_cols = {"id", "k", "s"}
    for name, frame in frames.items():
        want = {r["id"]: keys_of({k: v for k, v in r.items()
                                  if name in ("lines", "multiline") or k in table_cols})
                for r in NULLS}
        if name in ("lines", "multiline"):  # elements of an array: only non-null keys
            want[1]["items"] = None
        assert seen(frame) == want, name
        # Glue's filter: KeyError drops the record; None is a value
        assert ids(Filter.apply(frame=frame, f=lambda r: r["k"] is None)) == [2, 4], name
        assert ids(Filter.apply(frame=frame, f=lambda r: "k" in r)) == [1, 2, 4], name
        assert ids(Filter.apply(frame=frame, f=lambda r: r["s"]["y"] is None)) == [1, 4], name
    frame = frames["lines"]
    # a key a Map sets to None is in the next step's record; one it leaves out is not
    flagged = Map.apply(frame=frame, f=lambda r: {**dict(r), "flag": None if r["id"] % 2
                                                  else "even"})
    assert ids(Filter.apply(frame=flagged, f=lambda r: r["flag"] is None)) == [1, 3]
    assert ids(Filter.apply(frame=flagged, f=lambda r: "k" in r)) == [1, 2, 4]
    only_id = Map.apply(frame=frame, f=lambda r: {"id": r["id"]})
    assert ids(Filter.apply(frame=only_id, f=lambda r: "k" in r)) == []
    # transforms that keep fields keep them
    picked = SelectFields.apply(frame=frame, paths=["id", "k"])
    assert ids(Filter.apply(frame=picked, f=lambda r: "k" in r)) == [1, 2, 4]
    dropped = DropFields.apply(frame=frame, paths=["s"])
    assert ids(Filter.apply(frame=dropped, f=lambda r: r["k"] is None)) == [2, 4]
    renamed = RenameField.apply(frame=frame, old_name="k", new_name="kk")
    assert ids(Filter.apply(frame=renamed, f=lambda r: "kk" in r)) == [1, 2, 4]
    assert ids(Filter.apply(frame=renamed, f=lambda r: "k" in r)) == []
    mapped = ApplyMapping.apply(frame=frame, mappings=[
        ("id", "long", "id", "long"), ("k", "string", "key", "string"),
        ("s.y", "long", "sy", "long")])
    assert seen(mapped) == {1: {"id": None, "key": None, "sy": None},
                            2: {"id": None, "key": None},
                            3: {"id": None}, 4: {"id": None, "key": None, "sy": None}}
    # the hidden part shows nowhere
    for f in (frame, flagged, renamed, mapped, Filter.apply(frame=flagged, f=lambda r: True)):
        df = f.toDF()
        assert not any("__cdclab" in c for c in df.columns)
        assert "__cdclab" not in df._jdf.queryExecution().toString()
        assert not any("__cdclab" in x.name for x in f.schema().fields)
        assert "__cdclab" not in f._jdf.showString(20)
    assert frame.count() == len(NULLS)
    out = tmp_path / "out"
    ctx.write_dynamic_frame.from_options(flagged, "s3", {"path": f"file://{out}"},
                                         format="json")
    assert sorted(r["id"] for r in lines(out)) == [1, 2, 3, 4]
    assert not any("__cdclab" in k for r in lines(out) for k in r)
