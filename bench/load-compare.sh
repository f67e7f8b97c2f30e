#!/usr/bin/env bash
# load-compare builds the worker at two revisions (or runs one build with
# two sets of flags) and runs convload against each in turn, PAIRS
# times, alternating, each time against a fresh worker with an embedded
# server and an empty store. One load generator, built from this
# checkout, drives both. Each run prints the worker process's CPU time
# (user + system), its minor page faults and its peak resident memory,
# and how much of its memory was on huge pages at the end, read from /proc (Linux only;
# docs/operations.md, "Huge pages"), then the summary lines of the load, with
# how many of the worker process's garbage collections ended in each
# half-peak run (a worker built with --pprof; convload --worker-pprof:
# a mark in a run decides its tail on these machines). A summary at the
# end gives, for each side, the sequences that met the p99 goal and the
# half-peak rounds' p99 with and without a collection. On the
# shared 2-core machines absolute figures drift from hour to hour; two
# builds are compared by runs that alternate in one sitting
# (bench/EXPERIMENTS.md).
#
# usage: bench/load-compare.sh [-n PAIRS] [-A "worker flags"] [-B "worker flags"]
#            [-T MODE_A,MODE_B] [-o DIR] REV_A REV_B [convload flags...]
#
#   REV_A, REV_B  git revisions; "." is this checkout as it is, uncommitted
#                 changes included; "echo" is bench/echoworker of this
#                 checkout: the floor under any worker (it answers each
#                 event with a delta and acknowledges it, nothing more)
#   -n PAIRS      runs of each (default 3)
#   -A, -B        extra worker flags for A or B, e.g. -B "--gc-percent 200"
#   -T A,B        the machine's transparent huge page mode for A's runs and
#                 for B's, e.g. -T always,madvise: written to
#                 /sys/kernel/mm/transparent_hugepage/enabled before each
#                 run (root only; the mode found is put back at the end).
#   -o DIR        where each run's full output goes (default: a new
#                 temporary directory, kept)
#   load flags    default: --quiet --warmup --rounds 3 (what `make -C bench
#                 load LOAD_ARGS="--quiet --warmup --rounds 3"` runs)
#
# Example: bench/load-compare.sh HEAD~1 . ; bench/load-compare.sh -n 5 -B "--gc-percent 200" . .
#          bench/load-compare.sh echo HEAD --quiet --warmup --rounds 3 --half-rate 10000
set -euo pipefail

pairs=3 flags_a="" flags_b="" out="" thp_a="" thp_b=""
thp_file=/sys/kernel/mm/transparent_hugepage/enabled
while getopts "n:A:B:T:o:h" opt; do
	case $opt in
	n) pairs=$OPTARG ;;
	A) flags_a=$OPTARG ;;
	B) flags_b=$OPTARG ;;
	T) thp_a=${OPTARG%%,*} thp_b=${OPTARG#*,} ;;
	o) out=$OPTARG ;;
	*) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -lt 2 ]; then
	echo "usage: $0 [-n PAIRS] [-A flags] [-B flags] [-o DIR] REV_A REV_B [convload flags...]" >&2
	exit 2
fi
rev_a=$1 rev_b=$2
shift 2
load_args=("$@")
[ ${#load_args[@]} -gt 0 ] || load_args=(--quiet --warmup --rounds 3)
[ -r /proc/self/stat ] || { echo "load-compare reads /proc: Linux only" >&2; exit 2; }
thp_found=""
if [ -n "$thp_a$thp_b" ]; then
	for m in "$thp_a" "$thp_b"; do
		case $m in always | madvise | never) ;; *) echo "-T: modes are always, madvise or never, not \"$m\"" >&2; exit 2 ;; esac
	done
	[ -w "$thp_file" ] || { echo "-T: $thp_file is not writable (root only)" >&2; exit 2; }
	thp_found=$(sed 's/.*\[\(.*\)\].*/\1/' "$thp_file")
fi

root=$(git rev-parse --show-toplevel)
go=${GO:-go}
port=${LOAD_PORT:-14222}
http=${LOAD_HTTP:-18222}
pprof=${LOAD_PPROF:-16060}
tmp=$(mktemp -d)
out=${out:-$(mktemp -d -t load-compare.XXXX)}
mkdir -p "$out"
pid=""
cleanup() {
	[ -z "$pid" ] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; }
	for wt in "$tmp"/src-*; do [ -d "$wt" ] && git -C "$root" worktree remove --force "$wt" 2>/dev/null; done
	rm -rf "$tmp"
	[ -z "$thp_found" ] || echo "$thp_found" >"$thp_file"
}
trap cleanup EXIT

# build REV DIR puts the worker of REV into DIR.
build() {
	local rev=$1 dir=$2 src
	mkdir -p "$dir"
	if [ "$rev" = "echo" ]; then
		(cd "$root/bench" && "$go" build -o "$dir/worker" ./echoworker)
		touch "$dir/echo"
		echo "$(basename "$dir"): echo (bench/echoworker of this checkout, at $(git -C "$root" rev-parse --short HEAD))"
		return
	fi
	if [ "$rev" = "." ]; then
		src=$root
	else
		src="$tmp/src-$(basename "$dir")"
		git -C "$root" worktree add --quiet --detach "$src" "$rev"
	fi
	(cd "$src" && "$go" build -o "$dir/worker" ./cmd/worker)
	echo "$(basename "$dir"): $rev ($(git -C "$src" rev-parse --short HEAD)$([ "$rev" = "." ] && ! git -C "$root" diff --quiet HEAD && echo ", with uncommitted changes"))"
}
build "$rev_a" "$tmp/A"
build "$rev_b" "$tmp/B"
(cd "$root/bench" && "$go" build -o "$tmp/convload" ./cmd/convload)
echo "load: convload ${load_args[*]}; runs in $out"

# run SIDE N runs one load against a fresh worker of SIDE.
run() {
	local side=$1 n=$2 flags data stat status line thp huge="" gc=()
	[ "$side" = A ] && flags=$flags_a || flags=$flags_b
	[ "$side" = A ] && thp=$thp_a || thp=$thp_b
	[ -z "$thp" ] || echo "$thp" >"$thp_file"
	data="$tmp/data-$side-$n"
	# grep reads all of it: grep -q could close the pipe on the worker, and
	# with pipefail its SIGPIPE would read as "no --pprof".
	if "$tmp/$side/worker" --help 2>&1 | grep -- '-pprof' >/dev/null; then
		flags="$flags --pprof 127.0.0.1:$pprof"
		gc=(--worker-pprof "http://127.0.0.1:$pprof")
	fi
	# The echo side has no health endpoint and no log levels: it is ready
	# once it logs that it consumes.
	local extra=(--http "127.0.0.1:$http" --log-level warn)
	[ -e "$tmp/$side/echo" ] && extra=()
	# shellcheck disable=SC2086 # flags are words
	"$tmp/$side/worker" --data-dir "$data" --listen "127.0.0.1:$port" "${extra[@]}" \
		$flags >"$out/worker-$side-$n.log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		if [ -e "$tmp/$side/echo" ]; then
			grep -q "echoworker consuming" "$out/worker-$side-$n.log" && break
		else
			curl -sf "http://127.0.0.1:$http/readyz" >/dev/null && break
		fi
		sleep 0.1
	done
	"$tmp/convload" --nats-url "nats://127.0.0.1:$port" "${gc[@]}" "${load_args[@]}" >"$out/load-$side-$n.txt" 2>&1 || true
	huge=$(awk '/^AnonHugePages/ { printf ", %d MB on huge pages%s", $2/1024, mode }' mode="${thp:+ ($thp)}" "/proc/$pid/smaps_rollup" 2>/dev/null || true)
	if ! stat=$(cat "/proc/$pid/stat" 2>/dev/null) || ! status=$(cat "/proc/$pid/status" 2>/dev/null); then
		echo "== $side run $n: the worker exited early; its log:" >&2
		tail -20 "$out/worker-$side-$n.log" >&2
		pid=""
		exit 1
	fi
	kill -INT "$pid"
	wait "$pid" 2>/dev/null || true
	pid=""
	rm -rf "$data"
	line=$(echo "$stat" | awk -v hz="$(getconf CLK_TCK)" '{ printf "cpu %.2f s (user %.2f, system %.2f), %d page faults", ($14+$15)/hz, $14/hz, $15/hz, $10 }')
	line="$line, peak $(echo "$status" | awk '/^VmHWM/ { printf "%d MB", $2/1024 }')$huge"
	echo "== $side run $n: $line"
	# The medians of a run in rounds, or else the worker's line of a single run.
	grep -E "by round" "$out/load-$side-$n.txt" | sed 's/^/   /' ||
		grep -E "^worker " "$out/load-$side-$n.txt" | sed 's/^/   /' ||
		echo "   (no summary: see $out/load-$side-$n.txt)"
}
for n in $(seq "$pairs"); do
	run A "$n"
	run B "$n"
done

# sums up SIDE: its half-peak rounds split by whether a collection of the
# worker process ended in them (when counted), the sequences whose
# median p99 at half of peak was under 20 ms, and raw JetStream's p99 in
# the rounds at those rates (the machine's and the server's own tail).
sums() {
	local side=$1
	cat "$out"/load-"$side"-*.txt 2>/dev/null | awk -v side="$side" '
		function ms(s) { sub(/ms$/, "", s); return s + 0 }
		function median(a, n,   i, j, t) {
			for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
			return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
		}
		/^worker p99 at .* by round: / {
			sub(/.* by round: /, ""); sub(/ \(median .*/, "")
			np = split($0, p, ", ")
			for (i = 1; i <= np; i++) p[i] = ms(p[i])
			seqs++
			for (i = 1; i <= np; i++) q[i] = p[i]
			if (median(q, np) < 20) met++
			next
		}
		/^raw JetStream p99 at that rate by round: / {
			sub(/.* by round: /, ""); sub(/ \(median .*/, "")
			nr = split($0, r, ", ")
			for (i = 1; i <= nr; i++) { raw[++nraw] = ms(r[i]); if (ms(r[i]) > 20) rover++ }
			next
		}
		/^worker process collections in those runs by round: / {
			sub(/.* by round: /, "")
			ng = split($0, g, ", ")
			for (i = 1; i <= ng && i <= np; i++) {
				if (g[i] > 0) { hit[++nh] = p[i]; if (p[i] > 20) hover++ } else { free[++nf] = p[i]; if (p[i] > 20) fover++ }
			}
		}
		END {
			if (!seqs) exit
			printf "%s: p99 goal (median under 20 ms) met in %d of %d sequences", side, met, seqs
			if (nh + nf) {
				printf "; half-peak rounds with a collection %d", nh
				if (nh) printf " (p99 median %.1f ms, %d over 20 ms)", median(hit, nh), hover
				printf ", without %d", nf
				if (nf) printf " (p99 median %.1f ms, %d over 20 ms)", median(free, nf), fover
			}
			if (nraw) printf "; raw JetStream at the same rates: p99 median %.1f ms, %d of %d over 20 ms", median(raw, nraw), rover, nraw
			printf "\n"
		}'
}
echo "== summary"
sums A
sums B
