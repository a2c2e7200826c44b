#!/usr/bin/env bash
# Everything `docker compose` needs on this machine, idempotently:
#   1. a Docker engine with the Compose plugin (scripts/docker-engine.sh);
#   2. the base images: the official ones the Dockerfile pins when the engine can pull
#      them, else stand-ins built from Debian packages (scripts/standin-images.sh).
# Writes $CDCLAB_CACHE/docker-bases.env: the CDCLAB_*_IMAGE build arguments to use and the
# build network (empty when the official images are used). scripts/compose.sh reads it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${CDCLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cdclab}"
BASES="$CACHE/docker-bases.env"
mkdir -p "$CACHE"
say() { printf '\033[1mdocker-setup:\033[0m %s\n' "$*"; }

# One at a time per cache (two clones or CI jobs): the stand-in images and $BASES are
# shared. bootstrap.sh, which docker-engine.sh may run, takes a lock of its own.
if command -v flock >/dev/null; then
  exec 8>"$CACHE/.docker-setup.lock"
  flock 8 || { echo "docker-setup: cannot lock $CACHE/.docker-setup.lock" >&2; exit 1; }
fi

bash "$ROOT/scripts/docker-engine.sh"

# The official bases, as the Dockerfile pins them (ARG defaults before the first FROM).
mapfile -t official < <(sed -n 's/^ARG CDCLAB_[A-Z]*_IMAGE=\(.*\)$/\1/p' "$ROOT/spark/Dockerfile")
reachable=1
for image in "${official[@]}"; do
  docker image inspect "$image" >/dev/null 2>&1 && continue
  if ! timeout 600 docker pull -q "$image" >/dev/null 2>&1; then reachable=0; break; fi
done
if [[ "$reachable" == 1 ]]; then
  say "official base images: ${official[*]}"
  : >"$BASES"
else
  say "no registry answers: building stand-in base images from Debian packages"
  bash "$ROOT/scripts/standin-images.sh" --env "$BASES" >/dev/null
  # no registry usually means no way out of the default bridge either: build on the host's
  echo "CDCLAB_BUILD_NETWORK=host" >>"$BASES"
  say "stand-ins: $(tr '\n' ' ' <"$BASES")"
fi
