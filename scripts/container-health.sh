#!/usr/bin/env bash
# Docker's health check in the cdclab containers, run every 2 s in each: so no Python
# start (even a bare one costs 0.15 CPU-s). Healthy = this start of the service passed
# Service.healthy() and was set up (`cdclab serve` wrote its ready marker) and it still
# answers. The same rules as cdclab.compose_probe.health; tests hold the two together.
set -eu
name="$1"
state="${CDCLAB_STATE_DIR:-/data}"
[[ -f "$state/.ready-$name" ]] || { echo "$name: not ready yet (starting)" >&2; exit 1; }
case "$name" in
  postgres) port="${CDCLAB_PORT_POSTGRES:-5432}" ;;
  minio) port="${CDCLAB_PORT_MINIO:-9000}" ;;
  iceberg-rest) port="${CDCLAB_PORT_ICEBERG_REST:-8181}" ;;
  # and its Spark driver not dead or restarting (glue_local/runner.py driver_healthy)
  glue) port="${CDCLAB_PORT_GLUE:-8090}"
        ! grep -Eqs '"state": *"(dead|restarting)"' "$state/glue/driver.json" ||
          { echo "glue: its Spark driver died and is restarting" >&2; exit 1; } ;;
  emitter) grep -Eq '"phase": *"(streaming|loaded)"' "$state/emitter/state.json" &&
           ! grep -q '"resync_needed"' "$state/emitter/state.json"; exit ;;
  # listing: its state file rewritten within WATCHER_STALE_SECONDS (pipeline_contract/settings.py)
  watcher) (( $(date +%s) - $(stat -c %Y "$state/watcher/state.json") < 90 )); exit ;;
  *) exit 0 ;;
esac
exec 3<>"/dev/tcp/127.0.0.1/$port"
