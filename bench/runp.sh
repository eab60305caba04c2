#!/usr/bin/env bash
# Wall time and peak RSS of one whole `switchboard run -p` turn: the
# scripted two-step turn (Bash `echo hi`, then the answer) against a local
# fake model, in unrestricted mode, on a fresh SWITCHBOARD_HOME and on an
# existing one. Prints the median wall time (ms) and the largest maximum
# RSS (KiB) over RUNS runs of each (default 5).
#
#   bench/runp.sh            (from the repository root or anywhere)
#   RUNS=11 bench/runp.sh
set -euo pipefail

runs=${RUNS:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
server_pid=
cleanup() {
	if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

[ -x /usr/bin/time ] || { echo "runp.sh: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }

(cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$work/switchboard" ./cmd/switchboard)
(cd "$root" && go build -o "$work/fakemodel-server" ./bench/fakemodel-server)

"$work/fakemodel-server" >"$work/url" &
server_pid=$!
for _ in $(seq 1 100); do
	[ -s "$work/url" ] && break
	sleep 0.05
done
url=$(head -n1 "$work/url")
[ -n "$url" ] || { echo "runp.sh: the fake model did not start" >&2; exit 1; }

mkdir -p "$work/ws"
cd "$work/ws"

# one HOME: run once with SWITCHBOARD_HOME=HOME, print "wall_ms rss_kib".
one() {
	local home=$1 start end
	start=$(date +%s%N)
	env -i PATH="$PATH" HOME="$work" SWITCHBOARD_HOME="$home" \
		OPENAI_BASE_URL="$url" SWITCHBOARD_MODEL=bench-model \
		/usr/bin/time -v -o "$work/time.txt" \
		"$work/switchboard" run -p "say hi" --permission-mode unrestricted --output-format json >"$work/out.json" 2>"$work/err.txt" ||
		{ echo "runp.sh: run failed:" >&2; cat "$work/out.json" "$work/err.txt" >&2; exit 1; }
	end=$(date +%s%N)
	grep -q '"subtype":"success"' "$work/out.json" || { echo "runp.sh: unexpected result: $(cat "$work/out.json")" >&2; exit 1; }
	echo "$(( (end - start) / 1000000 )) $(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")"
}

# report LABEL: read "wall rss" lines, print median wall and max RSS.
report() {
	sort -n | awk -v label="$1" '
		{ wall[NR] = $1; if ($2 > rss) rss = $2; all = all " " $1 }
		END {
			med = (NR % 2) ? wall[(NR + 1) / 2] : (wall[NR / 2] + wall[NR / 2 + 1]) / 2
			printf "%-9s median wall %d ms  max RSS %d KiB (%.1f MiB)  runs (ms):%s\n", label, med, rss, rss / 1024, all
		}'
}

for i in $(seq 1 "$runs"); do one "$work/fresh-$i"; done | report fresh
one "$work/existing" >/dev/null # create it
for _ in $(seq 1 "$runs"); do one "$work/existing"; done | report existing
