#!/usr/bin/env bash
# Builds the cdclab image with the base images scripts/docker-setup.sh chose. On the
# classic builder (no buildx) each build stage is tagged cdclab/build-stage:<stage>, so
# the layer cache survives between runs and no untagged intermediate is left behind;
# then compose builds the runtime image from those cached stages.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${CDCLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cdclab}"
say() { printf '\033[1mdocker-build:\033[0m %s\n' "$*"; }

args=()
if [[ -s "$CACHE/docker-bases.env" ]]; then
  while IFS= read -r line; do
    [[ "$line" == CDCLAB_*_IMAGE=* ]] && args+=(--build-arg "$line")
  done <"$CACHE/docker-bases.env"
fi
start=$SECONDS
# One line per step here; each step's whole output in the log, shown only when it fails.
LOG="$CACHE/docker-build.log"
mkdir -p "$CACHE" && : >"$LOG"
step() {  # step <what> <command...>
  local what="$1" t0=$SECONDS; shift
  say "$what ..."
  if ! "$@" >>"$LOG" 2>&1; then
    say "$what failed after $((SECONDS - t0)) s; the last lines of $LOG:"
    tail -n 40 "$LOG" >&2
    exit 1
  fi
  say "$what: done in $((SECONDS - t0)) s"
}
if ! docker buildx version >/dev/null 2>&1; then
  for stage in jars minio; do
    step "stage $stage" env DOCKER_BUILDKIT=0 docker build -q --network host \
      -f "$ROOT/spark/Dockerfile" --target "$stage" -t "cdclab/build-stage:$stage" \
      "${args[@]}" "$ROOT"
  done
fi
step "image cdclab/runtime (docker compose build)" \
  bash "$ROOT/scripts/compose.sh" build --quiet credentials
# untagged leftovers of our own builds only (never other projects' images)
docker image prune -f --filter "label=org.cdclab.stage" >/dev/null
say "built in $((SECONDS - start)) s: $(docker image inspect cdclab/runtime:0.1.0 --format '{{.Size}}' | awk '{printf "%.2f GB", $1/1e9}')"
