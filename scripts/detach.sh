# Sourced: `detach CMD...` starts CMD in the background in its own session, holding no
# descriptor of its caller beyond stdin/stdout/stderr (which the caller redirects): a
# daemon that outlives us must not keep a caller's flock for good, nor the pipe of
# `make ... | tee log` open (the pipe would never close). $! is CMD's PID.
detach() {
  (
    for fd in /proc/self/fd/*; do
      fd="${fd##*/}"
      if (( fd > 2 )); then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    exec setsid "$@"
  ) &
}
