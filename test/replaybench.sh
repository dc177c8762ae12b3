#!/usr/bin/env bash
# replaybench.sh: what carddrift replay costs per question, on recorded demo
# stores, in one run. It records a 400-agent demo store of 30 s and one of
# 60 s (or reuses REPLAYBENCH_STORES=dir30,dir60), serves a copy of each with
# a standalone nats-server (both at once), and times `carddrift replay`
# (wall, peak RSS) for everything, one agent, a 2 s window and one task of
# the 30 s store, everything and the same window position (twice as far in)
# of the 60 s store, then offline (--data-dir on the original, checked
# byte-identical afterwards), and prints the bars of issues 24 and 34 as
# ratios against the full replay of the same round. The online questions
# run REPLAYBENCH_ROUNDS times (default 1), each round every question of
# every binary in turn (CARDDRIFT_BIN may name several, comma-separated:
# before and after under the same load); with several rounds each figure is
# the median of the rounds (a ratio's median is of the per-round ratios).
# Not part of go test: it takes minutes.
#
#   test/replaybench.sh                     # build, record, measure
#   CARDDRIFT_BIN=/tmp/cd test/replaybench.sh   # measure another binary
#   REPLAYBENCH_STORES=/tmp/D30,/tmp/D60 REPLAYBENCH_ROUNDS=5 \
#     CARDDRIFT_BIN=/tmp/before,/tmp/after test/replaybench.sh
#
# Needs /usr/bin/time, jq and nats-server (CARDDRIFT_NATS_SERVER_BIN, default
# /work/tools/nats-server or on PATH).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/replaybench.XXXXXX")
srv_pids=()
cleanup() {
	for pid in "${srv_pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

natsd=${CARDDRIFT_NATS_SERVER_BIN:-/work/tools/nats-server}
[ -x "$natsd" ] || natsd=$(command -v nats-server)
IFS=, read -r -a bins <<<"${CARDDRIFT_BIN:-}"
built="given"
if [ "${#bins[@]}" -eq 0 ]; then
	bins=("$work/carddrift")
	(cd "$root" && go build -o "${bins[0]}" ./cmd/carddrift)
	built="built from $(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo '?')"
fi
bin=${bins[0]}
rounds=${REPLAYBENCH_ROUNDS:-1}
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

# timed KEY ARGS...: runs carddrift ($b), records wall seconds and peak RSS
# (MB) of the round under KEY, output lines and the summary on stderr.
declare -A wall rss lines
timed() {
	local key=$1; shift
	/usr/bin/time -f "%e %M" -o "$work/time" "$b" "$@" >"$work/out" 2>"$work/err" || { echo "$key: carddrift $* failed:" >&2; cat "$work/err" >&2; exit 1; }
	read -r w k <"$work/time"
	wall[$key]=$w rss[$key]=$((k / 1024)) lines[$key]=$(wc -l <"$work/out")
	local said; said=$(grep -h "^carddrift replay:.*read" "$work/out" "$work/err" | tail -1 || true)
	printf '  %-28s %8s s %6s MB %9s lines   %s\n' "$key" "$w" "${rss[$key]}" "${lines[$key]}" "$said"
}

# serve DIR: serves a copy of DIR with a nats-server of its own on a free
# port and prints its URL.
serve() {
	local copy=$work/served-$(basename "$1") port=$((20000 + RANDOM % 20000))
	rm -rf "$copy"; cp -r "$1" "$copy"
	"$natsd" -js -sd "$copy" -p "$port" -a 127.0.0.1 >"$copy.log" 2>&1 &
	local pid=$!
	srv_pids+=("$pid")
	for _ in $(seq 100); do
		# A server that exited (its port taken) must not let another
		# server on that port answer for it.
		kill -0 "$pid" 2>/dev/null || { echo "nats-server on $1 exited:" >&2; cat "$copy.log" >&2; exit 1; }
		"$bin" replay --nats-url "nats://127.0.0.1:$port" --task no-such-task >/dev/null 2>&1 && kill -0 "$pid" 2>/dev/null && { url=nats://127.0.0.1:$port; return 0; }
		sleep 0.2
	done
	echo "nats-server on $1 did not come up" >&2; cat "$copy.log" >&2; exit 1
}

echo "load: $(uptime)"
for b in "${bins[@]}"; do echo "binary: $b ($built)"; done
echo "store 30s: $d30 ($(du -sh "$d30" | cut -f1)); store 60s: $d60 ($(du -sh "$d60" | cut -f1))"
serve "$d30"; url30=$url
serve "$d60"; url60=$url

# The questions' parameters come from the history itself: the first
# verdict's agent and task, a 2 s window 14 s after the first entry of the
# 30 s store, and 28 s after it in the 60 s store.
"$bin" replay --nats-url "$url30" --format json >"$work/all.jsonl" 2>/dev/null
agent=$(jq -rn 'first(inputs | select(.kind=="verdict") | .agentUrl)' "$work/all.jsonl")
task=$(jq -rn 'first(inputs | select(.kind=="verdict") | .taskId)' "$work/all.jsonl")
first=$(jq -rn 'first(inputs | .time)' "$work/all.jsonl")
rm -f "$work/all.jsonl"
"$bin" replay --nats-url "$url60" --format json >"$work/all.jsonl" 2>/dev/null
first60=$(jq -rn 'first(inputs | .time)' "$work/all.jsonl")
rm -f "$work/all.jsonl"
win() { echo --since "$(date -u -d "$1 + $2 seconds" +%Y-%m-%dT%H:%M:%S.%3NZ)" --until "$(date -u -d "$1 + $(($2 + 2)) seconds" +%Y-%m-%dT%H:%M:%S.%3NZ)"; }
read -r -a win30 <<<"$(win "$first" 14)"
read -r -a win60 <<<"$(win "$first60" 28)"
echo "agent $agent, task $task; window ${win30[*]} (30s store), ${win60[*]} (60s store)"

declare -A samples # KEY → the rounds' values, space-separated
sample() { samples[$1]="${samples[$1]:-} $2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", 100 * a / b }'; }
for r in $(seq "$rounds"); do
	echo
	echo "round $r of $rounds (load: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime))"
	for i in "${!bins[@]}"; do
		b=${bins[$i]}
		timed "$i/full-30" replay --nats-url "$url30"
		timed "$i/window-30" replay --nats-url "$url30" "${win30[@]}"
		timed "$i/agent" replay --nats-url "$url30" --agent "$agent"
		timed "$i/task" replay --nats-url "$url30" --task "$task"
		timed "$i/full-json-30" replay --nats-url "$url30" --format json
		timed "$i/full-60" replay --nats-url "$url60"
		timed "$i/window-60" replay --nats-url "$url60" "${win60[@]}"
		timed "$i/full-json-60" replay --nats-url "$url60" --format json
		for k in full-30 window-30 agent task full-60 window-60; do sample "$i/$k-wall" "${wall[$i/$k]}"; done
		sample "$i/window-%" "$(ratio "${wall[$i/window-30]}" "${wall[$i/full-30]}")"
		sample "$i/agent-%" "$(ratio "${wall[$i/agent]}" "${wall[$i/full-30]}")"
		sample "$i/agent-rss" "${rss[$i/agent]}"
		sample "$i/full-rss-%" "$(ratio "${rss[$i/full-60]}" "${rss[$i/full-30]}")"
		sample "$i/full-json-rss-%" "$(ratio "${rss[$i/full-json-60]}" "${rss[$i/full-json-30]}")"
		sample "$i/window-rss-%" "$(ratio "${rss[$i/window-60]}" "${rss[$i/window-30]}")"
		sample "$i/window-rss" "${rss[$i/window-30]}"
	done
done
for pid in "${srv_pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
srv_pids=()

# med KEY: the median of the rounds' values (and the range with more than one).
med() {
	tr ' ' '\n' <<<"${samples[$1]}" | grep . | sort -g | awk '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		if (NR > 1) printf "%g (%g–%g)", m, v[1], v[NR]; else printf "%g", m }'
}
echo
echo "load: $(uptime)"
echo "bars (issues 24 and 34), each ratio against the full replay of its round, medians of $rounds round(s):"
for i in "${!bins[@]}"; do
	echo " ${bins[$i]}:"
	echo "  walls (s): full $(med "$i/full-30-wall"), window $(med "$i/window-30-wall"), agent $(med "$i/agent-wall"), task $(med "$i/task-wall"); 60s store full $(med "$i/full-60-wall"), window $(med "$i/window-60-wall")"
	echo "  --agent wall      $(med "$i/agent-%")% of full (bar ≤ 10%), RSS $(med "$i/agent-rss") MB (bar ≤ 100 MB)"
	echo "  2 s window wall   $(med "$i/window-%")% of full (bar ≤ 20%), RSS $(med "$i/window-rss") MB"
	echo "  RSS 60s/30s       full text $(med "$i/full-rss-%")%, json $(med "$i/full-json-rss-%")%, window $(med "$i/window-rss-%")% (bar ≤ 110%)"
done

echo
b=${bins[${#bins[@]}-1]}
echo "offline, $b:"
dir=$d30
before=$(cd "$dir" && find . -type f -exec sha256sum {} + | sort | sha256sum)
timed off-full replay --data-dir "$dir"
timed off-agent replay --data-dir "$dir" --agent "$agent"
timed off-window replay --data-dir "$dir" "${win30[@]}"
timed off-html replay --data-dir "$dir" --format html --out "$work/page.html"
echo "  (html page $(du -h "$work/page.html" | cut -f1))"
after=$(cd "$dir" && find . -type f -exec sha256sum {} + | sort | sha256sum)
if [ "$before" = "$after" ]; then echo "  store files byte-identical after the offline replays"; else echo "  STORE CHANGED by an offline replay" >&2; exit 1; fi
