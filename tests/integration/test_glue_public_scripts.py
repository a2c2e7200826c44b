"""Public Glue scripts' styles (tests/corpus/: AWS's join_and_relationalize and
data_cleaning_and_lambda samples, the SDK scenario's flight job) run as jobs through the
local Glue API; each output is checked against the result computed here in plain Python
from the same input, without Glue."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from tests.integration.test_glue_corpus import create, glue, run  # noqa: F401 (fixture)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Glue's object names (docs/glue-fidelity.md): csv/json without extension, Parquet blocks
TEXT_NAME = re.compile(r"run-\d{13}-part-r-\d{5}")
PARQUET_NAME = re.compile(r"run-\d{13}-part-block-0-r-\d{5}-snappy\.parquet")


def jsonl(path: Path, records: list[dict]) -> None:
    path.mkdir(parents=True)
    (path / "part.json").write_text("\n".join(json.dumps(r) for r in records) + "\n")


def objects(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


PERSONS = [
    {"id": "p1", "name": "Ann Lee", "given_name": "Ann", "image": "ann.jpg",
     "links": [{"note": "web", "url": "http://ann"}], "images": [{"url": "a1"}],
     "identifiers": [{"scheme": "bio", "identifier": "A1"}],
     "other_names": [{"name": "Annie", "lang": "en", "note": "nick"}],
     "contact_details": [{"type": "fax", "value": "1"}]},
    {"id": "p2", "name": "Bob Ray", "given_name": "Bob", "images": [{"url": "b1"}],
     "identifiers": [], "other_names": [], "contact_details": []},
]
MEMBERSHIPS = [
    {"person_id": "p1", "organization_id": "o1", "role": "member", "start_date": "2001"},
    {"person_id": "p1", "organization_id": "o2", "role": "member", "start_date": "2005"},
    {"person_id": "p2", "organization_id": "o2", "role": "chair", "start_date": "2003"},
    {"person_id": "p9", "organization_id": "o1", "role": "member", "start_date": "1999"},
]
ORGS = [
    {"id": "o1", "name": "Senate", "classification": "legislature", "seats": 100,
     "image": "senate.png", "links": [{"note": "site", "url": "http://senate"}],
     "identifiers": [{"scheme": "x", "identifier": "S"}],
     "other_names": [{"name": "Upper", "lang": "en", "note": "n"}]},
    {"id": "o2", "name": "House", "classification": "legislature", "seats": 435},
    {"id": "o3", "name": "Unused", "classification": "party"},
]


def expected_history() -> list[dict]:
    """Glue's Join (docs/glue-fidelity.md): one record per matching pair; a field both
    frames have (orgs' and persons' `links`, `image`) once, the second frame's value unless
    it is null; drop_fields then removes person_id and org_id."""
    rows = []
    for o in ORGS:
        org = {k: v for k, v in o.items() if k not in ("other_names", "identifiers")}
        org["org_id"], org["org_name"] = org.pop("id"), org.pop("name")
        for p in PERSONS:
            for m in MEMBERSHIPS:
                if m["person_id"] != p["id"] or m["organization_id"] != org["org_id"]:
                    continue
                right = {**p, **m}
                row = {**org, **{k: v for k, v in right.items() if v is not None}}
                for k in ("person_id", "org_id"):
                    row.pop(k)
                rows.append(row)
    return rows


def test_join_and_relationalize_sample_joins_shared_fields_as_glue(glue, tmp_path, spark):  # noqa: F811
    src, out = tmp_path / "src", tmp_path / "out"
    for name, records in [("persons", PERSONS), ("memberships", MEMBERSHIPS),
                          ("organizations", ORGS),
                          ("sales", [{"saleid": 1, "customerid": 10, "amount": 5.5},
                                     {"saleid": 2, "customerid": 11, "amount": 7.0},
                                     {"saleid": 3, "customerid": 99, "amount": 1.0}]),
                          ("customers", [{"customerid": 10, "name": "Ann"},
                                         {"customerid": 11, "name": "Bob"}])]:
        jsonl(src / name, records)
    create(glue, "legislators", "join_legislators.py", source=f"file://{src}",
           target=f"file://{out}", TempDir=f"file://{tmp_path / 'temp'}")
    got = run(glue, "legislators")
    log = Path(got["LogGroupName"], f"{got['Id']}.log").read_text()
    assert "Count:  3" in log

    want = expected_history()
    history = spark.read.parquet(str(out / "legislator_history"))
    assert sorted(history.columns) == sorted({k for r in want for k in r})
    assert history.columns.count("links") == history.columns.count("image") == 1

    def plain(value):
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value.asDict(recursive=True) if hasattr(value, "asDict") else value

    rows = [{k: plain(v) for k, v in r.asDict().items()} for r in history.collect()]
    key = ("id", "organization_id")
    assert sorted((tuple(r[k] for k in key), {k: r.get(k) for k in sorted(want[0])})
                  for r in rows) == sorted(
        (tuple(w[k] for k in key), {k: w.get(k) for k in sorted(want[0])}) for w in want)
    ann_senate = next(r for r in rows if (r["id"], r["organization_id"]) == ("p1", "o1"))
    assert ann_senate["image"] == "ann.jpg" and ann_senate["links"] == [
        {"note": "web", "url": "http://ann"}]  # the second frame's (persons') values
    bob_house = next(r for r in rows if r["id"] == "p2")
    assert bob_house["image"] is None and bob_house["seats"] == 435

    assert {p.name for p in out.iterdir()} >= {
        "hist_root", "hist_root_links", "hist_root_images", "hist_root_identifiers",
        "hist_root_other_names", "hist_root_contact_details"}
    for folder in ("legislator_history", "hist_root", "hist_root_links"):
        assert all(PARQUET_NAME.fullmatch(n) for n in objects(out / folder)), \
            objects(out / folder)

    # the key both frames name alike stays twice, one `.customerid`, which the script drops
    assert "|-- .customerid: long" in log and "|-- customerid: long" in log
    sales = []
    for name in objects(out / "customersales"):
        assert TEXT_NAME.fullmatch(name), name
        sales += [json.loads(line) for line in (out / "customersales" / name).open()]
    assert sorted(sales, key=lambda r: r["saleid"]) == [
        {"saleid": 1, "customerid": 10, "amount": 5.5, "name": "Ann"},
        {"saleid": 2, "customerid": 11, "amount": 7.0, "name": "Bob"}]


MEDICARE_HEADER = ["drg definition", "provider id", "provider name", "provider street address",
                   "provider city", "provider state", "provider zip code",
                   "hospital referral region description", "total discharges",
                   "average covered charges", "average total payments",
                   "average medicare payments"]
MEDICARE = [
    ["039 - EXTRACRANIAL", "10001", "SOUTHEAST ALABAMA", "1108 ROSS", "DOTHAN", "AL", "36301",
     "AL - Dothan", "91", "$32963.07", "$5777.24", "$4763.73"],
    ["039 - EXTRACRANIAL", "10005", "MARSHALL MEDICAL", "2505 US", "BOAZ", "AL", "35957",
     "AL - Birmingham", "14", "$15131.85", "$5787.57", "$4976.71"],
    ["948 - SIGNS", "ABC", "BAD ROW", "x", "NOWHERE", "ZZ", "00000", "ZZ - None", "1",
     "$1.00", "$1.00", "$1.00"],
]


def test_data_cleaning_sample_nests_with_apply_mapping(glue, tmp_path, spark):  # noqa: F811
    src, out = tmp_path / "medicare", tmp_path / "out"
    src.mkdir()
    with (src / "Medicare_Hospital_Provider.csv").open("w", newline="") as f:
        csv.writer(f).writerows([MEDICARE_HEADER, *MEDICARE])
    create(glue, "medicare", "nest_with_apply_mapping.py", source=f"file://{src}",
           target=f"file://{out}")
    run(glue, "medicare")

    want = []
    for row in (dict(zip(MEDICARE_HEADER, r, strict=True)) for r in MEDICARE):
        if not row["provider id"].isdigit():  # cast:long gives null; the script drops it
            continue
        want.append({
            "drg": row["drg definition"],
            "provider": {"id": int(row["provider id"]), "name": row["provider name"],
                         "city": row["provider city"], "state": row["provider state"],
                         "zip": int(row["provider zip code"])},
            "rr": row["hospital referral region description"],
            "charges": {"covered": float(row["average covered charges"][1:]),
                        "total_pay": float(row["average total payments"][1:]),
                        "medicare_pay": float(row["average medicare payments"][1:])}})
    nested = spark.read.parquet(str(out))
    assert nested.schema.simpleString() == (
        "struct<drg:string,provider:struct<id:bigint,name:string,city:string,state:string,"
        "zip:bigint>,rr:string,charges:struct<covered:double,total_pay:double,"
        "medicare_pay:double>>")  # AWS's printSchema of the sample, field for field
    got = sorted((r.asDict(recursive=True) for r in nested.collect()),
                 key=lambda r: r["provider"]["id"])
    assert got == want
    assert all(PARQUET_NAME.fullmatch(n) for n in objects(out)), objects(out)


def test_flight_job_output_is_found_under_run_prefix(glue, tmp_path):  # noqa: F811
    src, bucket = tmp_path / "flight", tmp_path / "bucket"
    src.mkdir()
    header = ["year", "month", "day_of_month", "fl_date", "carrier", "fl_num",
              "origin_city_name", "dest_city_name", "distance"]
    flights = [["2016", "1", "7", "2016-01-07", "AA", "43", "Dallas, TX", "Chicago, IL", "802"],
               ["2016", "12", "31", "2016-12-31", "DL", "1201", "Atlanta, GA", "Boston, MA",
                "946"]]
    with (src / "flights.csv").open("w", newline="") as f:
        csv.writer(f).writerows([header, *flights])
    create(glue, "flights", "flight_etl_json.py", source=f"file://{src}",
           output_bucket_url=f"file://{bucket}")
    run(glue, "flights")

    # the scenario: keys = [obj.key for obj in bucket.objects.filter(Prefix="run-")]
    keys = [n for n in objects(bucket) if n.startswith("run-")]
    assert keys and keys == objects(bucket)  # nothing else (no _SUCCESS marker)
    assert all(TEXT_NAME.fullmatch(k) for k in keys), keys
    lines = [json.loads(line) for k in keys for line in (bucket / k).open()]
    want = [{"year": int(r[0]), "month": int(r[1]), "day": int(r[2]), "flight_date": r[3],
             "carrier": r[4], "flight_num": int(r[5]), "origin_city_name": r[6],
             "dest_city_name": r[7]} for r in flights]
    assert sorted(lines, key=lambda r: r["flight_num"]) == want
