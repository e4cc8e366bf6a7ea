#!/bin/sh
# in-cgroup.sh DIR CMD...: runs CMD in the cgroup v1 memory group DIR, as the
# local node runs a container with a memory limit.
dir=$1
shift
echo $$ >"$dir/cgroup.procs"
exec "$@"
