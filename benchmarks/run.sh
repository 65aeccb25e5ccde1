#!/usr/bin/env bash
# Runs this module's benchmarks as full runs of interleaved rounds, so that a
# noisy neighbour slows every library of a round alike and a figure can be
# given as the median over runs with its range, then writes the tables of
# README.md.
#
#   ./run.sh                       3 runs of 5 rounds (about 20 to 25 minutes on the
#                                  project's 2-core VM at low load)
#   ./run.sh -runs 5 -rounds 8     more of either
#   ./run.sh -quick                1 run of 1 round, small iteration counts: a smoke run
#   ./run.sh -quick -runs 2        2 such runs: a smoke test of the aggregation
#   ./run.sh -families memory,redis
#                                  only those families (memory, heap, redis, http,
#                                  http-recorder, accuracy; default all)
#   ./run.sh -out DIR              write the runs to DIR instead of results
#   ./run.sh -shared-redis         use the Redis at REDIS_ADDR instead of private ones
#   ./run.sh -profile REGEX        afterwards, CPU-profile the benchmarks REGEX matches
#                                  (for example 'BenchmarkMemory/work=hotkey/lib=sluice$')
#
# A run is every chosen family once per round, for each round; the heap is
# weighed in a run's first round only (a weight does not vary with the
# load). Each run keeps its own directory, DIR/run-K: raw.txt (every round,
# as go test printed it, each round after a line "# round N"),
# raw-<family>.txt, loads.txt (uptime before and after each round) and
# machine.txt (the run's start, commit, load, machine and libraries).
# DIR/benchstat.txt is benchstat over every round of every run, and
# DIR/tables.md the tables (go run ./report), which also replace README.md's
# results section, but only after a run of every family that is not -quick,
# into results.
#
# Redis: by default each run starts a redis-server of its own on a free
# port, and stops it at the run's end, so that every run starts on an empty
# server with its counters at zero, and the script calls counted per
# decision are the benchmarks' alone. Without redis-server installed, or
# with -shared-redis, every run uses REDIS_ADDR (default 127.0.0.1:6379),
# which must answer; it is neither flushed nor restarted, since others may
# use it.
set -euo pipefail
cd "$(dirname "$0")"

runs="" rounds="" quick=0 shared=0 profile="" families="" out=results
all_families="memory heap redis http http-recorder accuracy"
while [ $# -gt 0 ]; do
	case "$1" in
	-quick) quick=1 ;;
	-runs) runs="$2"; shift ;;
	-rounds) rounds="$2"; shift ;;
	-families) families="$2"; shift ;;
	-out) out="$2"; shift ;;
	-shared-redis) shared=1 ;;
	-profile) profile="$2"; shift ;;
	*) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
if [ "$quick" = 1 ]; then
	runs=${runs:-1} rounds=${rounds:-1}
else
	runs=${runs:-3} rounds=${rounds:-5}
fi
for n in "$runs" "$rounds"; do
	[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: -runs and -rounds take a positive number, not $n" >&2; exit 2; }
done
families=${families:-$all_families}
families=${families//,/ }
for f in $families; do
	[[ " $all_families " == *" $f "* ]] || { echo "run.sh: unknown family $f (want some of: $all_families)" >&2; exit 2; }
done
every_family=1
for f in $all_families; do
	[[ " $families " == *" $f "* ]] || every_family=0
done
uses_redis=0
[[ " $families " == *" redis "* || " $families " == *" accuracy "* ]] && uses_redis=1

# Iterations per benchmark, by family: fixed counts, so that every library
# does the same work and no time goes to calibrating b.N.
if [ "$quick" = 1 ]; then
	memory_n=100000x redis_n=2000x http_n=30000x heap_keys=100000
else
	memory_n=1000000x redis_n=20000x http_n=300000x heap_keys=1000000
fi

tmp=$(mktemp -d)
redis_pid=""
cleanup() {
	stop_redis
	rm -rf "$tmp"
}
trap cleanup EXIT

# redis_ping HOST PORT: whether a Redis answers PONG there.
redis_ping() {
	(
		exec 3<>"/dev/tcp/$1/$2" || exit 1
		printf 'PING\r\n' >&3
		read -r -t 2 reply <&3 || exit 1
		[[ "$reply" == +PONG* ]]
	) 2>/dev/null
}

private=0
if [ "$shared" = 0 ] && command -v redis-server >/dev/null; then
	private=1
fi

# start_redis: a private redis-server on a free port, as REDIS_ADDR; or,
# without one, the check that REDIS_ADDR answers.
start_redis() {
	[ "$uses_redis" = 1 ] || return 0
	if [ "$private" = 0 ]; then
		export REDIS_ADDR="${REDIS_ADDR:-127.0.0.1:6379}"
		redis_ping "${REDIS_ADDR%:*}" "${REDIS_ADDR##*:}" || { echo "run.sh: no Redis answers at $REDIS_ADDR" >&2; exit 1; }
		return 0
	fi
	local port
	for _ in $(seq 20); do
		port=$((20000 + RANDOM % 20000))
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			continue # taken
		fi
		rm -f "$tmp/redis.pid"
		redis-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no \
			--daemonize yes --pidfile "$tmp/redis.pid" --dir "$tmp" --logfile "$tmp/redis.log"
		for _ in $(seq 50); do
			redis_ping 127.0.0.1 "$port" && break
			sleep 0.1
		done
		if redis_ping 127.0.0.1 "$port" && [ -s "$tmp/redis.pid" ]; then
			redis_pid=$(cat "$tmp/redis.pid")
			export REDIS_ADDR="127.0.0.1:$port"
			return 0
		fi
	done
	echo "run.sh: could not start redis-server" >&2
	cat "$tmp/redis.log" >&2 || true
	exit 1
}

# stop_redis: stops the private server, if one runs, and waits until it
# has gone, so that the next run's server has the machine to itself.
stop_redis() {
	[ -n "$redis_pid" ] || return 0
	kill "$redis_pid" 2>/dev/null || true
	for _ in $(seq 50); do
		kill -0 "$redis_pid" 2>/dev/null || break
		sleep 0.1
	done
	redis_pid=""
}

if [ "$uses_redis" = 0 ]; then
	redis_note="redis: not used"
elif [ "$private" = 1 ]; then
	redis_note="redis: $(redis-server --version | cut -d' ' -f3), a private server started afresh for each run"
else
	redis_note="redis: the shared server at ${REDIS_ADDR:-127.0.0.1:6379}, not restarted between runs (script calls per decision count other clients' too)"
fi

# benchstat, into a local bin if the machine has none.
if command -v benchstat >/dev/null; then
	benchstat=$(command -v benchstat)
else
	benchstat="$PWD/.bin/benchstat"
	[ -x "$benchstat" ] || GOBIN="$PWD/.bin" go install golang.org/x/perf/cmd/benchstat@latest
fi

go test -c -o "$tmp/bench.test" .

# Every contender must hold the shared policy before anything is timed.
start_redis
"$tmp/bench.test" -test.run 'HoldThePolicy|AccuracyCases' -test.count 1 >"$tmp/tests.txt" 2>&1 ||
	{ cat "$tmp/tests.txt" >&2; echo "run.sh: a contender does not hold the policy" >&2; exit 1; }
stop_redis

# The facts every run shares, and the command that made them.
commit="$(git -C .. rev-parse --short HEAD 2>/dev/null || echo unknown)"
# The results and README.md are rewritten by every run: not changes to what runs.
git -C .. diff --quiet HEAD -- . ':!benchmarks/results' ':!benchmarks/README.md' 2>/dev/null ||
	commit="$commit, with changes not committed"
cpu="cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') ($(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB)"
gover="go: $(go version | cut -d' ' -f3-)"
libs="libraries: $(go list -m -f '{{if and (not .Indirect) (not .Main)}}{{.Path}} {{.Version}}{{end}}' all |
	grep -v -e '^github.com/sluice-go/sluice ' -e testify -e goleak | paste -sd, | sed 's/,/, /g')"
command="command: ./run.sh"
[ "$quick" = 0 ] || command="$command -quick"
command="$command -runs $runs -rounds $rounds"
[ "$every_family" = 1 ] || command="$command -families ${families// /,}"
counts="iterations: memory $memory_n, redis $redis_n, http $http_n, heap $heap_keys keys"

mkdir -p "$out"
# The older layout kept one run in $out itself; every run replaces all runs.
rm -rf "$out"/run-[0-9]*
rm -f "$out"/raw*.txt "$out"/loads.txt "$out"/machine.txt "$out"/benchstat.txt "$out"/tables.md "$out"/profile.txt

# family DIR ROUND NAME BENCH BENCHTIME [FLAGS]: one family's benchmarks,
# appended to DIR/raw.txt and DIR/raw-NAME.txt.
failed=0
family() {
	local dir=$1 round=$2 name=$3 bench=$4 benchtime=$5
	shift 5
	"$tmp/bench.test" -test.run '^$' -test.bench "^$bench\$" -test.benchmem -test.benchtime "$benchtime" -test.count 1 "$@" \
		>"$tmp/out.txt" 2>&1 || { failed=1; echo "run.sh: $bench failed:" >&2; grep -v '^Benchmark' "$tmp/out.txt" | tail -20 >&2; }
	if ! grep -q '^Benchmark' "$tmp/out.txt"; then
		echo "run.sh: $bench reported nothing" >&2
		return 0
	fi
	echo "# round $round" >>"$dir/raw-$name.txt"
	grep '^Benchmark' "$tmp/out.txt" | tee -a "$dir/raw.txt" >>"$dir/raw-$name.txt"
}

has() { [[ " $families " == *" $1 "* ]]; }

start=$(date +%s)
for k in $(seq "$runs"); do
	dir="$out/run-$k"
	mkdir -p "$dir"
	run_start=$(date +%s)
	start_redis
	{
		echo "started: $(date -u '+%Y-%m-%d %H:%M UTC')"
		echo "commit: $commit"
		echo "load at start: $(uptime | sed 's/.*load average: //')"
		echo "$cpu"
		echo "$gover"
		echo "$redis_note"
		echo "$libs"
		echo "$counts"
		echo "$command"
	} >"$dir/machine.txt"
	for round in $(seq "$rounds"); do
		echo "run $k round $round before: $(uptime)"
		echo "round $round before: $(uptime)" >>"$dir/loads.txt"
		echo "# round $round" >>"$dir/raw.txt"
		has memory && family "$dir" "$round" memory "BenchmarkMemory(FirstSight)?" "$memory_n"
		if [ "$round" = 1 ] && has heap; then
			family "$dir" "$round" heap BenchmarkHeapPerKey 1x -heapkeys "$heap_keys"
		fi
		has redis && family "$dir" "$round" redis BenchmarkRedis "$redis_n"
		has http && family "$dir" "$round" http BenchmarkHTTP "$http_n"
		has http-recorder && family "$dir" "$round" http-recorder BenchmarkHTTPRecorder "$http_n"
		has accuracy && family "$dir" "$round" accuracy BenchmarkAccuracy 1x
		echo "round $round after: $(uptime)" >>"$dir/loads.txt"
	done
	stop_redis
	echo "run.sh: run $k: $rounds rounds in $(($(date +%s) - run_start))s"
done
echo "run.sh: $runs runs in $(($(date +%s) - start))s"

for f in $all_families; do
	compgen -G "$out/run-*/raw-$f.txt" >/dev/null || continue
	cat "$out"/run-*/raw-"$f".txt >"$tmp/all-$f.txt"
	echo "## $f, every round of every run"
	"$benchstat" -col /lib "$tmp/all-$f.txt"
	echo
done >"$out/benchstat.txt" 2>&1 || true

if [ "$every_family" = 1 ] && [ "$quick" = 0 ] && [ "$out" = results ]; then
	go run ./report -dir "$out" -readme README.md
else
	go run ./report -dir "$out"
	echo "run.sh: README.md left as it was (only a full run of every family into results rewrites it)"
fi
cat "$out/tables.md"

if [ -n "$profile" ]; then
	start_redis
	"$tmp/bench.test" -test.run '^$' -test.bench "$profile" -test.benchmem -test.benchtime "$memory_n" \
		-test.cpuprofile "$tmp/cpu.pprof" >/dev/null
	stop_redis
	go tool pprof -top -nodecount=30 "$tmp/bench.test" "$tmp/cpu.pprof" 2>/dev/null | tee "$out/profile.txt"
fi

exit "$failed"
