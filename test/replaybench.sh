#!/usr/bin/env bash
# replaybench.sh: what carddrift replay costs per question, on recorded demo
# stores, in one run. It records a 400-agent demo store of 30 s and one of
# 60 s (or reuses REPLAYBENCH_STORES=dir30,dir60), serves a copy of each with
# a standalone nats-server, and times `carddrift replay` (wall, peak RSS) for
# everything, one agent, a 2 s window and one task, online and offline
# (--data-dir on the original, checked byte-identical afterwards), then
# prints the bars of issue 24 as ratios against the full replay of the same
# run. Not part of go test: it takes minutes.
#
#   test/replaybench.sh                     # build, record, measure
#   CARDDRIFT_BIN=/tmp/cd test/replaybench.sh   # measure another binary
#   REPLAYBENCH_STORES=/tmp/D30,/tmp/D60 test/replaybench.sh
#
# Needs /usr/bin/time, jq and nats-server (CARDDRIFT_NATS_SERVER_BIN, default
# /work/tools/nats-server or on PATH).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/replaybench.XXXXXX")
srv_pid=""
cleanup() {
	if [ -n "$srv_pid" ]; then kill "$srv_pid" 2>/dev/null || true; wait "$srv_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

natsd=${CARDDRIFT_NATS_SERVER_BIN:-/work/tools/nats-server}
[ -x "$natsd" ] || natsd=$(command -v nats-server)
bin=${CARDDRIFT_BIN:-}
built="given"
if [ -z "$bin" ]; then
	bin=$work/carddrift
	(cd "$root" && go build -o "$bin" ./cmd/carddrift)
	built="built from $(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo '?')"
fi
agents=${REPLAYBENCH_AGENTS:-400}

record() { # duration dir
	echo "recording a ${agents}-agent demo store of $1 in $2 ..." >&2
	"$bin" demo --agents "$agents" --duration "$1" --seed 2 --data-dir "$2" >/dev/null 2>&1 || true
	[ -d "$2/jetstream" ] || { echo "demo wrote no store in $2" >&2; exit 1; }
}

if [ -n "${REPLAYBENCH_STORES:-}" ]; then
	IFS=, read -r d30 d60 <<<"$REPLAYBENCH_STORES"
else
	d30=$work/D30 d60=$work/D60
	record 30s "$d30"
	record 60s "$d60"
fi

# timed NAME ARGS...: runs carddrift, records wall seconds and peak RSS (MB),
# output lines and the summary on stderr.
declare -A wall rss lines
timed() {
	local name=$1; shift
	/usr/bin/time -f "%e %M" -o "$work/time" "$bin" "$@" >"$work/out" 2>"$work/err" || { echo "$name: carddrift $* failed:" >&2; cat "$work/err" >&2; exit 1; }
	read -r w k <"$work/time"
	wall[$name]=$w rss[$name]=$((k / 1024)) lines[$name]=$(wc -l <"$work/out")
	local said; said=$(grep -h "^carddrift replay:.*read" "$work/out" "$work/err" | tail -1 || true)
	printf '  %-22s %8s s %6s MB %9s lines   %s\n' "$name" "$w" "${rss[$name]}" "${lines[$name]}" "$said"
}

serve() { # dir port
	rm -rf "$work/served"; cp -r "$1" "$work/served"
	"$natsd" -js -sd "$work/served" -p "$2" -a 127.0.0.1 >"$work/natsd.log" 2>&1 &
	srv_pid=$!
	for _ in $(seq 100); do
		# A server that exited (its port taken) must not let another
		# server on that port answer for it.
		kill -0 "$srv_pid" 2>/dev/null || { echo "nats-server on $1 exited:" >&2; cat "$work/natsd.log" >&2; exit 1; }
		"$bin" replay --nats-url "nats://127.0.0.1:$2" --task no-such-task >/dev/null 2>&1 && kill -0 "$srv_pid" 2>/dev/null && return 0
		sleep 0.2
	done
	echo "nats-server on $1 did not come up" >&2; cat "$work/natsd.log" >&2; exit 1
}
unserve() { kill "$srv_pid"; wait "$srv_pid" 2>/dev/null || true; srv_pid=""; }

port=$((20000 + RANDOM % 20000))
echo "load: $(uptime)"
echo "binary: $bin ($built)"
for store in 30 60; do
	dir=d$store; dir=${!dir}
	echo
	echo "store ${store}s: $dir ($(du -sh "$dir" | cut -f1))"
	serve "$dir" "$port"
	url=nats://127.0.0.1:$port
	timed "full-$store" replay --nats-url "$url"
	timed "full-json-$store" replay --nats-url "$url" --format json
	[ "$store" = 60 ] && { unserve; continue; }
	# The question's parameters come from the history itself: the first
	# verdict's agent and task, a 2 s window in the middle of the store.
	"$bin" replay --nats-url "$url" --format json >"$work/all.jsonl" 2>/dev/null
	agent=$(jq -rn 'first(inputs | select(.kind=="verdict") | .agentUrl)' "$work/all.jsonl")
	task=$(jq -rn 'first(inputs | select(.kind=="verdict") | .taskId)' "$work/all.jsonl")
	first=$(jq -rn 'first(inputs | .time)' "$work/all.jsonl")
	since=$(date -u -d "$first + 14 seconds" +%Y-%m-%dT%H:%M:%S.%3NZ)
	until=$(date -u -d "$first + 16 seconds" +%Y-%m-%dT%H:%M:%S.%3NZ)
	rm -f "$work/all.jsonl"
	echo "  agent $agent, task $task, window $since .. $until"
	timed agent replay --nats-url "$url" --agent "$agent"
	timed window replay --nats-url "$url" --since "$since" --until "$until"
	timed task replay --nats-url "$url" --task "$task"
	unserve
	before=$(cd "$dir" && find . -type f -exec sha256sum {} + | sort | sha256sum)
	timed off-full replay --data-dir "$dir"
	timed off-agent replay --data-dir "$dir" --agent "$agent"
	timed off-window replay --data-dir "$dir" --since "$since" --until "$until"
	timed off-html replay --data-dir "$dir" --format html --out "$work/page.html"
	echo "  (html page $(du -h "$work/page.html" | cut -f1))"
	after=$(cd "$dir" && find . -type f -exec sha256sum {} + | sort | sha256sum)
	if [ "$before" = "$after" ]; then echo "  store files byte-identical after the offline replays"; else echo "  STORE CHANGED by an offline replay" >&2; exit 1; fi
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f%%", 100 * a / b }'; }
echo
echo "bars (issue 24), against the full replay of this run:"
echo "  --agent wall      $(ratio "${wall[agent]}" "${wall[full-30]}") of full (bar ≤ 10%), RSS ${rss[agent]} MB (bar ≤ 100 MB)"
echo "  2 s window wall   $(ratio "${wall[window]}" "${wall[full-30]}") of full (bar ≤ 20%)"
echo "  full RSS 60s/30s  text $(ratio "${rss[full-60]}" "${rss[full-30]}"), json $(ratio "${rss[full-json-60]}" "${rss[full-json-30]}") (bar ≤ 110%)"
