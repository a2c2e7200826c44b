#!/usr/bin/env bash
# Installs what is missing, idempotently. Downloads are cached outside the repo in
# $CDCLAB_CACHE (default ~/.cache/cdclab) so a fresh clone on a warm machine is quick.
# Everything is resolved by name/coordinates with its own ecosystem's tool:
# Python by uv/pip, JVM jars by Maven coordinates, MinIO and docker compose by the Go tool.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=../versions.env
source "$ROOT/versions.env"

CACHE="${CDCLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cdclab}"
VENV="$ROOT/.venv"
mkdir -p "$CACHE"

say() { printf '\033[1mbootstrap:\033[0m %s\n' "$*" >&2; }  # stdout: the make target's own (JSON)
die() { printf '\033[31mbootstrap: error:\033[0m %s\n' "$*" >&2; exit 1; }

# One bootstrap at a time per cache: two `make setup` (two clones, or CI jobs) sharing
# it would build into the same temp names and logs. flock is util-linux (not on macOS:
# there the second run just races, as before).
if command -v flock >/dev/null; then
  exec 9>"$CACHE/.bootstrap.lock"
  flock 9 || die "cannot lock $CACHE/.bootstrap.lock"
fi

# --- prerequisites, with what to do when one is missing -------------------------
PYTHON="${CDCLAB_PYTHON:-}"
if [[ -z "$PYTHON" ]]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
      PYTHON="$(command -v "$candidate")"; break
    fi
  done
fi
[[ -n "$PYTHON" ]] || die "Python 3.11 not found (AWS Glue 5.1 runs 3.11). Install it, or set CDCLAB_PYTHON=/path/to/python3.11."
command -v java >/dev/null || die "Java not found. Install a JDK $JAVA_VERSION (e.g. apt-get install openjdk-17-jdk-headless) and put java on PATH."
java_major="$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)"
[[ "$java_major" == "$JAVA_VERSION" ]] || die "Java $JAVA_VERSION is required (Spark $SPARK_VERSION on Glue 5.1); found Java ${java_major:-unknown}. Set JAVA_HOME/PATH to a JDK $JAVA_VERSION."
command -v mvn >/dev/null || die "Maven not found: it resolves the Spark/Iceberg jars by coordinates. Install it (e.g. apt-get install maven)."

# --- Python environment -----------------------------------------------------------
lock_hash="$(cat requirements.lock pyproject.toml | sha256sum | cut -c1-16)"
if [[ ! -f "$VENV/.cdclab-lock-$lock_hash" ]]; then
  say "Python environment (.venv) from requirements.lock"
  [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
  if [[ ! -x "$VENV/bin/uv" ]]; then
    PIP_CACHE_DIR="$CACHE/pip" "$VENV/bin/python" -m pip install -q --disable-pip-version-check "uv==$UV_VERSION"
  fi
  UV_CACHE_DIR="$CACHE/uv" "$VENV/bin/uv" pip sync -q --python "$VENV/bin/python" requirements.lock
  UV_CACHE_DIR="$CACHE/uv" "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" --no-deps -e .
  rm -f "$VENV"/.cdclab-lock-*
  touch "$VENV/.cdclab-lock-$lock_hash"
fi

# --- the AWS Glue 5.0 runtime: a job whose GlueVersion is 5.0 runs on its own Python ----
# (pyspark 3.5.4, AWSGlueDataplanePython 5.0.0; spark/glue_local/glue_runtimes.py)
GLUE50_VENV="${CDCLAB_GLUE50_VENV:-$ROOT/.venv-glue50}"
glue50_hash="$(sha256sum requirements-glue50.lock | cut -c1-16)"
if [[ ! -f "$GLUE50_VENV/.cdclab-lock-$glue50_hash" ]]; then
  say "AWS Glue 5.0 runtime ($GLUE50_VENV) from requirements-glue50.lock"
  [[ -x "$GLUE50_VENV/bin/python" ]] || "$PYTHON" -m venv "$GLUE50_VENV"
  UV_CACHE_DIR="$CACHE/uv" "$VENV/bin/uv" pip sync -q --python "$GLUE50_VENV/bin/python" \
    requirements-glue50.lock
  rm -f "$GLUE50_VENV"/.cdclab-lock-*
  touch "$GLUE50_VENV/.cdclab-lock-$glue50_hash"
fi

# uv keeps each revision of a source distribution it downloads again, built (pyspark's is
# ~1 GiB); behind an index whose answers cannot be revalidated every install adds one.
# Only what the cache still points at is kept.
UV_CACHE_DIR="$CACHE/uv" "$VENV/bin/uv" cache prune -q

# --- JVM jars by Maven coordinates ------------------------------------------------
JARS="$CACHE/jars"
mkdir -p "$JARS"
artifacts=(
  "org.apache.iceberg:iceberg-spark-runtime-3.5_${SCALA_BINARY_VERSION}:${ICEBERG_VERSION}"
  "org.apache.iceberg:iceberg-aws-bundle:${ICEBERG_VERSION}"
  "org.apache.hadoop:hadoop-aws:${HADOOP_AWS_VERSION}"
  "com.amazonaws:aws-java-sdk-bundle:${AWS_JAVA_SDK_BUNDLE_VERSION}"
  "org.apache.iceberg:iceberg-open-api:${ICEBERG_REST_VERSION}"
  # Glue 5.0's Iceberg (its S3A jars are the ones above)
  "org.apache.iceberg:iceberg-spark-runtime-3.5_${SCALA_BINARY_VERSION}:${GLUE50_ICEBERG_VERSION}"
  "org.apache.iceberg:iceberg-aws-bundle:${GLUE50_ICEBERG_VERSION}"
)
for coord in "${artifacts[@]}"; do
  IFS=: read -r _group artifact version <<<"$coord"
  if [[ ! -s "$JARS/$artifact-$version.jar" ]]; then
    say "resolving $coord (Maven)"
    mvn -q -B dependency:copy -Dartifact="$coord" -DoutputDirectory="$JARS" \
      -Dmaven.repo.local="$CACHE/m2" -Dtransitive=false >"$CACHE/mvn.log" 2>&1 \
      || die "Maven could not resolve $coord; see $CACHE/mvn.log"
  fi
done

# --- the JVM side of awsglue (spark/glue-jvm), built by Maven per source digest --------
CDCLAB_CACHE="$CACHE" "$VENV/bin/python" -m glue_local.glue_jvm build >/dev/null \
  || die "building spark/glue-jvm failed; see $CACHE/glue-jvm-build.log"

# --- the Spark driver's class-data-sharing archive (about 3 s less per driver start) ---
# glue_local/class_archive.py; without it drivers start as before
CDCLAB_CACHE="$CACHE" "$VENV/bin/python" -m glue_local.class_archive >/dev/null \
  || say "the Spark driver's class archive was not made: drivers start without it"

# --- MinIO from its Go module, with cdclab's fix (minio/flush_fix.go) -----------------
MINIO_BIN="$CACHE/bin/minio-$MINIO_VERSION-$MINIO_FIX"
if [[ ! -x "$MINIO_BIN" ]]; then
  command -v go >/dev/null || die "Go not found: MinIO is built from its Go module ($MINIO_MODULE@$MINIO_VERSION). Install Go >= $GO_VERSION."
  say "building MinIO $MINIO_VERSION from its Go module (first time only, a few minutes)"
  mkdir -p "$CACHE/bin" "$CACHE/go"
  minio_mod="$(GOPATH="$CACHE/go" GOMODCACHE="$CACHE/go/pkg/mod" GOFLAGS=-mod=mod \
    go mod download -json "$MINIO_MODULE@$MINIO_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
  [[ -n "$minio_mod" ]] || die "Go could not download $MINIO_MODULE@$MINIO_VERSION"
  minio_src="$(mktemp -d)"  # the module cache is read-only: the fix goes into a copy
  cp -R "$minio_mod/." "$minio_src" && chmod -R u+w "$minio_src"
  cp "$ROOT/minio/flush_fix.go" "$minio_src/cmd/zz_cdclab_flush_fix.go"
  (cd "$minio_src" && GOPATH="$CACHE/go" GOMODCACHE="$CACHE/go/pkg/mod" GOFLAGS=-mod=mod CGO_ENABLED=0 \
    go build -trimpath -o "$MINIO_BIN.tmp.$$" .) >"$CACHE/minio-build.log" 2>&1 \
    || die "building MinIO failed; see $CACHE/minio-build.log"
  rm -rf "$minio_src"
  mv "$MINIO_BIN.tmp.$$" "$MINIO_BIN"
fi

# --- docker compose: validates docker-compose.yml (tests), drives the containers backend ---
# Built from its Go module. Its go.mod has exclude directives, which `go install pkg@v`
# refuses, so the module is downloaded by the Go tool and built in place.
COMPOSE_BIN="$CACHE/bin/docker-compose-$COMPOSE_VERSION"
if [[ ! -x "$COMPOSE_BIN" ]]; then
  command -v go >/dev/null || die "Go not found: docker compose is built from its Go module (github.com/docker/compose/v2@$COMPOSE_VERSION). Install Go >= $GO_VERSION."
  say "building docker compose $COMPOSE_VERSION from its Go module (first time only)"
  mkdir -p "$CACHE/bin" "$CACHE/go"
  compose_src="$(GOPATH="$CACHE/go" GOMODCACHE="$CACHE/go/pkg/mod" GOFLAGS=-mod=mod \
    go mod download -json "github.com/docker/compose/v2@$COMPOSE_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
  [[ -n "$compose_src" ]] || die "Go could not download github.com/docker/compose/v2@$COMPOSE_VERSION"
  (cd "$compose_src" && GOPATH="$CACHE/go" GOMODCACHE="$CACHE/go/pkg/mod" GOFLAGS=-mod=mod CGO_ENABLED=0 \
    go build -trimpath -ldflags "-X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" \
    -o "$COMPOSE_BIN.tmp.$$" ./cmd) >"$CACHE/compose-build.log" 2>&1 \
    || die "building docker compose failed; see $CACHE/compose-build.log"
  mv "$COMPOSE_BIN.tmp.$$" "$COMPOSE_BIN"
fi
ln -sf "$COMPOSE_BIN" "$CACHE/bin/docker-compose"

say "ready (cache: $CACHE)"
