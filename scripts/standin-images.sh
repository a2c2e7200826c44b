#!/usr/bin/env bash
# Builds stand-ins for the base images the Dockerfile names (python, maven, golang) from
# Debian packages, for machines that reach no image registry. Each is debootstrap
# minbase + `docker import`, then layers from Debian's packages (Python 3.11, JDK 17 +
# Maven) or, for Go, Debian's Go from bookworm-backports upgraded by the Go toolchain
# mechanism (GOTOOLCHAIN) to the version the Dockerfile asks for. The host's locally
# added CA certificates are trusted inside, so package clients work behind this machine's
# TLS-inspecting egress. Prints the build arguments that select the stand-ins.
#
# Usage: scripts/standin-images.sh            # build what is missing, print KEY=image lines
#        scripts/standin-images.sh --env FILE # also write those lines to FILE
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=../versions.env
source "$ROOT/versions.env"
CACHE="${CDCLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cdclab}"
REPO="cdclab-standin"
LABEL="org.cdclab.standin=1"
say() { printf '\033[1mstandin-images:\033[0m %s\n' "$*" >&2; }
die() { printf '\033[31mstandin-images: error:\033[0m %s\n' "$*" >&2; exit 1; }

env_out=""
if [[ "${1:-}" == "--env" ]]; then env_out="${2:?--env FILE}"; fi

have() { docker image inspect "$1" >/dev/null 2>&1; }

# --- debian:bookworm, minbase, with this machine's CA certificates --------------------
DEBIAN="$REPO/debian:bookworm"
if ! have "$DEBIAN"; then
  [[ "$(id -u)" == 0 ]] || die "debootstrap needs root; or build/pull the official base images instead"
  command -v debootstrap >/dev/null || {
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  }
  rootfs="$(mktemp -d "${TMPDIR:-/tmp}/cdclab-rootfs.XXXXXX")"
  trap 'rm -rf "$rootfs"' EXIT
  say "debootstrap --variant=minbase bookworm (a minute or two)"
  debootstrap --variant=minbase --include=ca-certificates bookworm "$rootfs" \
    >"$CACHE/debootstrap.log" 2>&1 || die "debootstrap failed; see $CACHE/debootstrap.log"
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
    chroot "$rootfs" update-ca-certificates >/dev/null
  fi
  # bookworm-backports next to bookworm (Debian's newer Go lives there)
  sed -n 's/ bookworm main$/ bookworm-backports main/p' "$rootfs/etc/apt/sources.list" \
    >"$rootfs/etc/apt/sources.list.d/backports.list"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
    --change 'ENV REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt' \
    --change "LABEL $LABEL" \
    --change 'CMD ["bash"]' - "$DEBIAN" >/dev/null
  rm -rf "$rootfs"; trap - EXIT
  say "built $DEBIAN"
fi

# --- layers from Debian's packages -----------------------------------------------------
layer() {  # layer <image> <dockerfile text>
  local image="$1" dockerfile="$2"
  have "$image" && return
  say "building $image"
  printf '%s\n' "$dockerfile" | docker build --network=host --label "$LABEL" -q -t "$image" - >/dev/null \
    || die "building $image failed"
  docker image prune -f --filter "label=$LABEL" >/dev/null
}

PYTHON="$REPO/python:${PYTHON_VERSION}-slim-bookworm"
layer "$PYTHON" "FROM $DEBIAN
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 python3-venv python3-pip \
 && ln -s /usr/bin/python3 /usr/local/bin/python \
 && python -c 'import sys; assert sys.version_info[:2] == tuple(map(int, \"$PYTHON_VERSION\".split(\".\")))' \
 && rm -rf /var/lib/apt/lists/*"

MAVEN="$REPO/maven:3-jdk-${JAVA_VERSION}"
layer "$MAVEN" "FROM $DEBIAN
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      openjdk-${JAVA_VERSION}-jdk-headless ca-certificates-java maven \
 && rm -rf /var/lib/apt/lists/*"

GO="$REPO/golang:${GO_VERSION}-bookworm"
layer "$GO" "FROM $DEBIAN
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      -t bookworm-backports golang-1.23-go git \
 && ln -s /usr/lib/go-1.23/bin/go /usr/local/bin/go \
 && rm -rf /var/lib/apt/lists/*
ENV GOPATH=/go GOTOOLCHAIN=go${GO_TOOLCHAIN}+auto PATH=/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN go version | grep -q 'go${GO_TOOLCHAIN}'"

lines="CDCLAB_PYTHON_IMAGE=$PYTHON
CDCLAB_MAVEN_IMAGE=$MAVEN
CDCLAB_GO_IMAGE=$GO"
printf '%s\n' "$lines"
if [[ -n "$env_out" ]]; then printf '%s\n' "$lines" >"$env_out"; fi
