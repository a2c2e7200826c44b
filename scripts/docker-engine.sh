#!/usr/bin/env bash
# Makes sure a Docker engine answers, with the Compose plugin. With a normal Docker
# install this only checks and returns. On a bare Debian machine run as root (CI), it
# installs Debian's docker.io and starts dockerd the way these closed machines need:
#   - no iptables/NAT/forwarding: no container traffic can leave the machine;
#   - pulls fail fast (the daemon's proxy is a closed local port): images are built here;
#   - overlay2 storage.
# Compose is the plugin built from its Go module by scripts/bootstrap.sh.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${CDCLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cdclab}"
DOCKERD_LOG="${CDCLAB_DOCKERD_LOG:-/var/log/cdclab-dockerd.log}"
DOCKERD_PID="/run/cdclab-dockerd.pid"
say() { printf '\033[1mdocker-engine:\033[0m %s\n' "$*"; }
die() { printf '\033[31mdocker-engine: error:\033[0m %s\n' "$*" >&2; exit 1; }

engine_answers() { docker info >/dev/null 2>&1; }

install_compose_plugin() {
  if docker compose version >/dev/null 2>&1; then return; fi
  [[ -x "$CACHE/bin/docker-compose" ]] || bash "$ROOT/scripts/bootstrap.sh"
  mkdir -p "$HOME/.docker/cli-plugins"
  ln -sf "$CACHE/bin/docker-compose" "$HOME/.docker/cli-plugins/docker-compose"
  docker compose version >/dev/null || die "docker compose does not run from $CACHE/bin/docker-compose"
  say "docker compose plugin: $(docker compose version --short)"
}

if engine_answers; then
  install_compose_plugin
  exit 0
fi

# --- no engine answers: only a bare Debian machine as root gets one installed ---------
if [[ "$(id -u)" != 0 || ! -f /etc/debian_version ]]; then
  die "no Docker engine answers (docker info failed). Start Docker (or Docker Desktop) and try again."
fi
if ! command -v dockerd >/dev/null; then
  say "installing Debian's docker.io"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi

mkdir -p /etc/docker
wanted='{"storage-driver":"overlay2","iptables":false,"ip6tables":false,"ip-masq":false,"ip-forward":false}'
if [[ "$(cat /etc/docker/daemon.json 2>/dev/null)" != "$wanted" ]]; then
  printf '%s\n' "$wanted" >/etc/docker/daemon.json
fi

if [[ -f "$DOCKERD_PID" ]] && kill -0 "$(cat "$DOCKERD_PID")" 2>/dev/null; then
  say "dockerd (pid $(cat "$DOCKERD_PID")) is starting"
else
  say "starting dockerd (log: $DOCKERD_LOG)"
  # Port 9 on loopback is closed: any registry pull fails at once instead of hanging.
  # The daemon outlives us: it keeps none of our callers' descriptors (scripts/detach.sh).
  # shellcheck source=scripts/detach.sh
  . "$ROOT/scripts/detach.sh"
  detach env HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 \
    NO_PROXY=localhost,127.0.0.1 nohup dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null
  echo $! >"$DOCKERD_PID"
fi
for _ in $(seq 1 60); do
  engine_answers && break
  sleep 1
done
engine_answers || die "dockerd did not answer within 60 s; see $DOCKERD_LOG"
say "engine $(docker version --format '{{.Server.Version}}') answers"
install_compose_plugin
