#!/usr/bin/env bash
# Runs a small Paddle program as the processes of a PaddleJob would run it, on
# loopback, with the environment the operator gives each pod
# (docs/env-contract.md), and keeps the last lines of one process's output as
# the kubelet keeps them for FallbackToLogsOnError (80 lines, 2048 bytes).
#
#   capture.sh RELEASE MODE SERVERS WORKERS PROCESS OUT PROGRAM [ARGS...]
#
# RELEASE  2.6.2 or 3.0.0: the runtime ~/.cache/paddlejob/paddle-runtime/paddle-RELEASE-*
# MODE     ps (spec.ps and spec.worker) or collective (spec.worker only)
# PROCESS  whose output to keep: ps-N or worker-N
# OUT      the file the last lines go to (it prints the process's exit code)
#
# Extra variables for every process come from the caller's EXTRA_ENV
# ("NAME=value NAME=value"), as a template's env would give them; GLOO sets
# spec.withGloo (0 by default). The trainers start once every server listens,
# as the operator starts them, unless UNORDERED=1. Each process is bounded by
# TIMEOUT seconds (120). WRAP is a command every process runs under (a
# sandbox making a directory read-only, a memory cgroup).
set -euo pipefail

release=$1 mode=$2 servers=$3 workers=$4 keep=$5 out=$6
shift 6
python=$(ls -d "$HOME"/.cache/paddlejob/paddle-runtime/paddle-"$release"-py*/ | grep -v '\.[0-9]*/$' | head -1)bin/python
[ -x "$python" ] || { echo "no runtime for Paddle $release" >&2; exit 2; }
gloo=${GLOO:-0}
timeout=${TIMEOUT:-120}
base=$((20000 + RANDOM % 20000))

endpoints() { # role count
	local list="" i
	for ((i = 0; i < $2; i++)); do
		list+="${list:+,}127.0.0.1:$(port "$1" "$i")"
	done
	echo "$list"
}
port() { # role index: every pod its own port, as every pod its own address
	case $1 in ps) echo $((base + $2 * 4)) ;; worker) echo $((base + 400 + $2 * 4)) ;; esac
}

trainer_eps=$(endpoints worker "$workers")
total=$workers
[ "$mode" = ps ] && total=$((servers + workers))
rdv=worker
[ "$mode" = ps ] && rdv=ps
master="127.0.0.1:$(($(port $rdv 0) + 2))"

penv() { # role index: the pod's environment
	local role=$1 i=$2 r
	r=TRAINER
	[ "$role" = ps ] && r=PSERVER
	echo PADDLE_JOB_ID=default-explain PADDLE_TRAINING_ROLE=$r TRAINING_ROLE=$r \
		PADDLE_TRAINER_ID=$i TRAINER_ID=$i POD_IP=127.0.0.1 PADDLE_PORT="$(port "$role" "$i")" \
		PADDLE_PORTS_NUM=1 TRAINER_PORTS_NUM=1 \
		TRAINERS="$workers" PADDLE_TRAINERS_NUM="$workers" PADDLE_TRAINER_ENDPOINTS="$trainer_eps" \
		PADDLE_TRAINERS="$(echo "$trainer_eps" | sed 's/:[0-9]*//g')" \
		PADDLE_NNODES=$total PADDLE_MASTER=$master PADDLE_WITH_GLOO="$gloo"
	if [ "$mode" = ps ]; then
		echo PADDLE_PSERVERS_IP_PORT_LIST="$(endpoints ps "$servers")" PADDLE_SERVERS_ENDPOINTS="$(endpoints ps "$servers")" \
			PADDLE_TRAINERS_ENDPOINTS="$trainer_eps" FLAGS_enable_pir_api=0
	else
		echo PADDLE_CURRENT_ENDPOINT=127.0.0.1:"$(port "$role" "$i")" PADDLE_RANK_IN_NODE=0 PADDLE_DISTRI_BACKEND=gloo
	fi
	if [ "$gloo" != 0 ]; then
		echo PADDLE_GLOO_RENDEZVOUS=3 SYS_JOB_ID=default-explain PADDLE_GLOO_HTTP_ENDPOINT="127.0.0.1:$(($(port $rdv 0) + 1))"
		[ "$mode" = ps ] && echo PADDLE_GLOO_PORT=$(($(port $rdv 0) + 1))
	fi
	echo "${EXTRA_ENV:-}"
}

set -m # every process in a process group of its own, stopped as a whole
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
prog=("$@")
run() { # role index
	local role=$1 i=$2
	# SKIP names processes that never start, as pods that stay Pending.
	case " ${SKIP:-} " in *" $role-$i "*) return ;; esac
	# shellcheck disable=SC2046
	(cd "$(dirname "${prog[0]}")" && exec env -i PATH=/usr/bin:/bin HOME="$dir" $(penv "$role" "$i") \
		timeout -s KILL "$timeout" ${WRAP:-} "$python" "$(basename "${prog[0]}")" "${prog[@]:1}") >"$dir/$role-$i.log" 2>&1 &
	eval "pid_${role}_$i=$!"
}
listening() { # port
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
if [ "$mode" = ps ]; then
	for ((i = 0; i < servers; i++)); do run ps $i; done
	# The operator starts the trainers once every server listens (its
	# readiness probe); UNORDERED=1 starts them at once, as a plain Job does.
	if [ "${UNORDERED:-0}" != 1 ]; then
		for ((i = 0; i < servers; i++)); do
			for ((t = 0; t < timeout * 10; t++)); do
				listening "$(port ps "$i")" && break
				v="pid_ps_$i"
				kill -0 "${!v}" 2>/dev/null || break # it failed: the trainers start anyway
				sleep 0.1
			done
		done
	fi
fi
for ((i = 0; i < workers; i++)); do run worker $i; done
keep_var="pid_${keep/-/_}"
set +e
wait "${!keep_var}"
code=$?
set -e
# The others are stopped as a job's other pods are.
for v in $(compgen -v pid_ || true); do
	kill -KILL -- -"${!v}" 2>/dev/null || true
done
wait 2>/dev/null || true
echo "$keep exited with code $code"
# The kubelet's FallbackToLogsOnError: the last 80 lines, at most 2048 bytes of them.
tail -n 80 "$dir/$keep.log" | tail -c 2048 >"$out"
# FULL=DIR keeps every process's whole log there.
if [ -n "${FULL:-}" ]; then mkdir -p "$FULL" && cp "$dir"/*.log "$FULL"/; fi
