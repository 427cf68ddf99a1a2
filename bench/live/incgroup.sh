#!/bin/sh
# incgroup.sh CGROUP_DIR CMD [ARGS...]: move this process into the cgroup
# (cgroup.procs), then exec CMD there — a stand-in for cgexec.
set -e
echo $$ > "$1/cgroup.procs"
shift
exec "$@"
