#!/usr/bin/env bash
# iofloor.sh: serve's CPU per 1,000 events of the 400-agent mix against the
# floor of its round trips, as deployed, in one run. Each round starts a
# standalone nats-server, then either `carddrift serve --nats-url` or
# test/iofloor (the same per-event I/O — acks, pin puts, lease puts, card
# fetches, card events — with none of carddrift's logic), drives the same
# traffic into it with `carddrift simulate` (the demo's leases; --metrics-url
# reads the process's CPU, --nats-server-pid the server's) and prints the
# cost figures. Rounds alternate serve and the floor. MODE=embedded: no
# nats-server; serve embeds its server (no --nats-url) and so does the floor
# (-data-dir), each reaching it in process, and the process's CPU includes
# the server's. Not part of go test: each round takes ~40 s.
#
#   test/iofloor.sh                  # 2 rounds, 400 agents, 30 s, standalone
#   MODE=embedded test/iofloor.sh
#   ROUNDS=3 AGENTS=400 DURATION=30s IOFLOOR_LEASE=1.4s test/iofloor.sh
#
# IOFLOOR_LEASE is the floor's fetch period per agent: set it so that the
# floor's fetch count (printed) is about serve's (printed beside it).
# Needs curl and python3; builds carddrift, iofloor and nats-server into a
# temporary directory unless CARDDRIFT_BIN / CARDDRIFT_NATS_SERVER_BIN are set.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/iofloor.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

mode=${MODE:-standalone}
case $mode in standalone|embedded) ;; *) echo "iofloor.sh: MODE is standalone or embedded, not $mode" >&2; exit 2 ;; esac
rounds=${ROUNDS:-2}
agents=${AGENTS:-400}
duration=${DURATION:-30s}
lease=${IOFLOOR_LEASE:-1.4s}
leases=(--min-lease 1s --default-lease 2s --max-lease 10s --full-fetch-interval 10s)

bin=${CARDDRIFT_BIN:-}
if [ -z "$bin" ]; then
	bin=$work/carddrift
	(cd "$root" && go build -o "$bin" ./cmd/carddrift)
fi
natsd=${CARDDRIFT_NATS_SERVER_BIN:-}
if [ -z "$natsd" ]; then
	natsd=$work/nats-server
	(cd "$root" && go build -o "$natsd" github.com/nats-io/nats-server/v2)
fi
floor=$work/iofloor
(cd "$root" && go build -o "$floor" ./test/iofloor)

port() { echo $((20000 + RANDOM % 20000)); }

# one KIND (serve|floor): one round; prints a line of figures.
one() {
	local kind=$1 d np hp sp ns="" where=() pidflag=()
	d=$(mktemp -d "$work/$kind.XXXX")
	np=$(port)
	hp=$((np + 1))
	if [ "$mode" = standalone ]; then
		"$natsd" -js -sd "$d/ns" -a 127.0.0.1 -p "$np" >"$d/ns.log" 2>&1 &
		ns=$!
		pids+=("$ns")
		for _ in $(seq 1 50); do (exec 3<>/dev/tcp/127.0.0.1/"$np") 2>/dev/null && break; sleep 0.1; done
		pidflag=(--nats-server-pid "$ns")
	fi
	if [ "$kind" = serve ]; then
		if [ "$mode" = standalone ]; then where=(--nats-url "nats://127.0.0.1:$np"); else where=(--data-dir "$d/data" --nats-port "$np"); fi
		"$bin" serve "${where[@]}" --fetch-allow 127.0.0.0/8 "${leases[@]}" \
			--http-addr "127.0.0.1:$hp" --log-level warn >"$d/proc.log" 2>&1 &
	else
		if [ "$mode" = standalone ]; then where=(-nats-url "nats://127.0.0.1:$np"); else where=(-data-dir "$d/data" -nats-port "$np"); fi
		"$floor" "${where[@]}" -http-addr "127.0.0.1:$hp" -lease "$lease" >"$d/proc.log" 2>&1 &
	fi
	sp=$!
	pids+=("$sp")
	for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$hp/readyz" >/dev/null && break; sleep 0.2; done
	"$bin" simulate --nats-url "nats://127.0.0.1:$np" --agents "$agents" --duration "$duration" --seed 1 "${leases[@]}" \
		--metrics-url "http://127.0.0.1:$hp/metrics" "${pidflag[@]}" --json >"$d/sim.json" 2>"$d/sim.err" || true
	local fetches=""
	if [ "$kind" = serve ]; then
		fetches=$(curl -sf "http://127.0.0.1:$hp/metrics" | awk '/^carddrift_fetch_duration_seconds_count/{print $2}')
	fi
	kill -INT "$sp" 2>/dev/null || true
	wait "$sp" 2>/dev/null || true
	if [ -n "$ns" ]; then
		kill "$ns" 2>/dev/null || true
		wait "$ns" 2>/dev/null || true
	fi
	if [ "$kind" = floor ]; then
		fetches=$(sed -n 's/.*fetches \([0-9]*\),.*/\1/p' "$d/proc.log")
	fi
	python3 - "$d/sim.json" "$kind" "$fetches" <<'PY'
import json, sys
path, kind, fetches = sys.argv[1:4]
c = json.load(open(path)).get("cost") or {}
server = (f"server {c['serverCpuMsPer1000Events']:.0f} ms per 1,000" if "serverCpuMsPer1000Events" in c
          else "server in the process")
print(f"{kind:5}  events {c.get('events')}  fetches {fetches or '?'}  own {c.get('serveCpuMsPer1000Events', 0):.0f} ms per 1,000  "
      f"{server}  load before {' '.join(str(x) for x in c.get('loadBefore', []))}")
PY
}

echo "iofloor: $rounds rounds of serve and the floor, $mode server, $agents agents, $duration, floor lease $lease"
for r in $(seq 1 "$rounds"); do
	one serve
	one floor
done
