"""Is a new bronze object safe for the Glue job to read? Pure: bytes in, verdict out.

One bad object must never stall the pipeline: the job reads every object under its
location, and one it cannot read (a `.gz` that is not gzip, a truncated one, a record
larger than a Spark task can hold) fails every run from then on, while its good
neighbours wait behind it. The Lambda checks each new object first and moves a bad one
to the quarantine prefix with the reason, so the job never sees it (lambda_function.py).
Deployed next to lambda_function.py with gate_base.py, gate_csv.py and gate_parquet.py
(deploy/lambda_package.py ships them): no cdclab import. Every name the gate offers is
importable from here.

Every object gets a verdict, in memory bounded by a read chunk (never by the object, a
record or a field) and time bounded by `Limits.max_object_bytes`; a limit crossed is a
defect like any other, never "too large to check". Here: the key (characters Hadoop
reads as a glob or an escape (`[]{}*?\\`), control characters, a name that is not a DMS
file (`.csv`, `.csv.gz`, `.parquet`)); the bytes go to gate_csv.py (gzip, UTF-8, the
CSV) or gate_parquet.py (the footer, every page header, a pyarrow read).
"""

from __future__ import annotations

import hashlib
import posixpath
import tempfile
from collections.abc import Iterable

try:  # in the repository
    from lambda_shim.gate_base import (
        PIECE,
        SPOOL_IN_MEMORY,
        Bad,
        BytesSource,
        CsvLayout,
        Defect,
        Limits,
        MiB,
        ReadError,
        Source,
        Spooled,
        over_object,
        reading,
    )
except ImportError:  # deployed: the files at the zip's root
    from gate_base import (
        PIECE,
        SPOOL_IN_MEMORY,
        Bad,
        BytesSource,
        CsvLayout,
        Defect,
        Limits,
        MiB,
        ReadError,
        Source,
        Spooled,
        over_object,
        reading,
    )
try:  # in the repository
    from lambda_shim.gate_csv import (
        MAX_HEADER_CHARS,
        MAX_NAME_CHARS,
        capped,
        csv_defect,
        gunzip,
    )
except ImportError:  # deployed: the files at the zip's root
    from gate_csv import (
        MAX_HEADER_CHARS,
        MAX_NAME_CHARS,
        capped,
        csv_defect,
        gunzip,
    )
try:  # in the repository
    from lambda_shim.gate_parquet import (
        ARROW_BATCH_ROWS,
        ARROW_BUFFER_BYTES,
        PARQUET_MAGIC,
        parquet_defect,
        parquet_structure_defect,
    )
except ImportError:  # deployed: the files at the zip's root
    from gate_parquet import (
        ARROW_BATCH_ROWS,
        ARROW_BUFFER_BYTES,
        PARQUET_MAGIC,
        parquet_defect,
        parquet_structure_defect,
    )

__all__ = [  # the gate's public names, wherever they are defined
    "ARROW_BATCH_ROWS", "ARROW_BUFFER_BYTES", "DMS_SUFFIXES", "GLOB_CHARACTERS",
    "MAX_HEADER_CHARS", "MAX_NAME_CHARS", "PARQUET_MAGIC", "PIECE", "REASON_SUFFIX",
    "S3_MAX_KEY_BYTES", "SPOOL_IN_MEMORY", "BytesSource", "CsvLayout", "Defect", "Limits",
    "MiB", "ReadError", "Source", "content_defect", "csv_defect", "gunzip", "inspect",
    "is_hidden", "key_defect", "listing_defect", "parquet_defect", "parquet_structure_defect",
    "quarantine_key",
]

DMS_SUFFIXES = (".csv", ".csv.gz", ".parquet")  # csv NONE | GZIP; parquet (codec inside)
GLOB_CHARACTERS = frozenset("[]{}*?\\")
REASON_SUFFIX = ".reason.json"  # beside each quarantined object: why, where, when
# "a sequence of Unicode characters encoded in UTF-8, with a maximum length of 1,024
# bytes" (Naming Amazon S3 objects); prefixes included
S3_MAX_KEY_BYTES = 1024


# --- keys -------------------------------------------------------------------------------
def is_hidden(key: str) -> bool:
    """Names Glue's readers skip (as Hive does): `_…`, `.…`, folder markers; but not a
    key that breaks the folder's listing before any reader can skip it."""
    name = posixpath.basename(key)
    hidden = not name or name.startswith(("_", ".")) or name.endswith("_$folder$")
    return hidden and listing_defect(key) is None


def listing_defect(key: str) -> Defect | None:
    """A key that breaks every reader of its folder, whatever its name: a character XML
    1.0 cannot carry (S3's ListObjectsV2 answer is XML; the AWS SDK for Java's parser,
    Hadoop's S3A, fails on `&#x1;` and every run with it), or a glob character."""
    bad = sorted({c for c in key if c in GLOB_CHARACTERS})
    if bad:
        return Defect(f"object key has {' '.join(bad)}: Hadoop paths read these as a glob "
                      "pattern or an escape, so readers may not find the object")
    if any(ord(c) < 32 or ord(c) == 127 or ord(c) in (0xFFFE, 0xFFFF) for c in key):
        return Defect("object key has control characters")
    return None


def key_defect(key: str) -> Defect | None:
    listing = listing_defect(key)
    if listing is not None:
        return listing
    if not key.endswith(DMS_SUFFIXES):
        return Defect("not a DMS file: the name ends in none of .csv, .csv.gz, .parquet, "
                      "so the reader cannot know its format")
    return None


def quarantine_key(prefix: str, key: str) -> str:
    """Where a refused object goes: `<prefix>/<key>`, or, when that and its reason's name
    would pass S3's 1,024-byte key limit, a bounded name: the key's start, a hash of the
    whole key and its last characters (so retries of one key land on one name; the
    reason file holds the full key). A key ending like a reason file gets a `~` after it,
    so no quarantined object passes for another's reason."""
    prefix = prefix.strip("/")
    if key.endswith(REASON_SUFFIX):
        key += "~"
    plain = f"{prefix}/{key}"
    budget = S3_MAX_KEY_BYTES - len(REASON_SUFFIX.encode())
    if len(plain.encode("utf-8", "surrogatepass")) <= budget:
        return plain
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    tail = _utf8_cut(key[::-1], 64)[::-1]
    fixed = f"{prefix}/~{digest}~{tail}"
    room = budget - len(fixed.encode("utf-8", "surrogatepass"))
    if room < 0:
        raise ValueError(f"quarantine prefix {prefix!r} leaves no room for a key under "
                         f"S3's {S3_MAX_KEY_BYTES}-byte limit")
    return f"{prefix}/{_utf8_cut(key, room)}~{digest}~{tail}"


def _utf8_cut(text: str, limit: int) -> str:
    """The longest start of `text` of at most `limit` UTF-8 bytes (whole characters)."""
    out, used = [], 0
    for c in text:
        used += len(c.encode("utf-8", "surrogatepass"))
        if used > limit:
            break
        out.append(c)
    return "".join(out)

# --- the verdict ------------------------------------------------------------------------
def content_defect(key: str, data: Iterable[bytes] | Source,
                   layout: CsvLayout = CsvLayout(), limits: Limits = Limits()) -> Defect | None:
    """The first defect in the object's bytes (chunks, or a Source with ranged reads), or
    None. Every object gets a verdict: a check that fails for any other reason than
    reading (a bug here) refuses the object, naming the error. A failed read raises
    its cause (the object is gone, S3 unreachable): then there is no verdict."""
    try:
        if key.endswith(".parquet"):
            if isinstance(data, Source):
                return parquet_defect(data, limits)
            with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY) as f:
                return parquet_defect(Spooled(f, data, limits.max_object_bytes), limits)
        if isinstance(data, Source):
            if not key.endswith(".gz") and data.size > limits.max_object_bytes:
                return over_object(limits.max_object_bytes)
            data = data.read(0, data.size)
        stream = reading(data)
        stream = (gunzip(stream, limits.max_object_bytes) if key.endswith(".gz")
                  else capped(stream, limits.max_object_bytes))
        return csv_defect(stream, layout, limits)
    except Bad as e:
        return e.defect
    except ReadError as e:
        raise (e.__cause__ or e) from None
    except Exception as e:
        return Defect(f"the gate could not check it ({type(e).__name__}: {str(e)[:200]})")


def inspect(key: str, data: Iterable[bytes] | Source, layout: CsvLayout = CsvLayout(),
            limits: Limits = Limits()) -> Defect | None:
    """Key first (no bytes read when it is bad), then content."""
    return key_defect(key) or content_defect(key, data, layout, limits)
