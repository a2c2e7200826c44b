#!/usr/bin/env bash
# `docker compose` for this checkout, with the base images scripts/docker-setup.sh chose
# (stand-ins on machines that reach no registry). With a normal Docker install plain
# `docker compose` does the same.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${CDCLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cdclab}"
if [[ -s "$CACHE/docker-bases.env" ]]; then
  set -a
  # shellcheck source=/dev/null
  source "$CACHE/docker-bases.env"
  set +a
fi
# Builds fetch packages: on engines set up by docker-engine.sh the default bridge has no
# way out, the host network has.
if [[ -f /run/cdclab-dockerd.pid ]]; then export CDCLAB_BUILD_NETWORK="${CDCLAB_BUILD_NETWORK:-host}"; fi
# The classic builder where there is no buildx (Debian's docker.io): BuildKit through
# compose would need a newer engine's frontend.
if ! docker buildx version >/dev/null 2>&1; then export DOCKER_BUILDKIT=0; fi
exec docker compose --project-directory "$ROOT" "$@"
