# Sourced by the daemon benches (launch.sh, ceiling.sh, switch.sh): start
# and stop `outrider daemon`, and time a command (timed). The caller sets
# $bin (the binary), $conf (its configuration), $work (where its log
# goes) and $me (its name, for messages).
daemon_pid=""
stop_daemon() {
  [ -n "$daemon_pid" ] || return 0
  kill -TERM "$daemon_pid" 2> /dev/null || true
  wait "$daemon_pid" 2> /dev/null || true
  daemon_pid=""
}
status() { "$bin" status --json --config "$conf"; }
# Returns once `outrider status` says it runs.
start_daemon() {
  "$bin" daemon --config "$conf" 2>> "$work/daemon.log" &
  daemon_pid=$!
  local k
  for k in $(seq 300); do
    status 2> /dev/null | grep -q '"running": true' && return 0
    sleep 0.05
  done
  echo "$me: the daemon did not start: $(tail -3 "$work/daemon.log")" >&2
  exit 1
}
# Run "$@", its output discarded; its wall time, seconds, in $WALL.
timed() {
  local t0=$EPOCHREALTIME
  "$@" > /dev/null 2>&1 || true
  WALL=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.6f", b - a }')
}
