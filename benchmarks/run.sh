#!/usr/bin/env bash
# Runs every benchmark of this module in interleaved rounds, so that a noisy
# neighbour slows every library alike, then writes the tables of README.md.
#
#   ./run.sh                 6 rounds (7 to 10 minutes on a busy 2-core VM)
#   ./run.sh -quick          1 short round: a smoke run
#   ./run.sh -rounds 10      more rounds
#   ./run.sh -shared-redis   use the Redis at REDIS_ADDR instead of a private one
#   ./run.sh -profile REGEX  afterwards, CPU-profile the benchmarks REGEX matches
#                            (for example 'BenchmarkMemory/work=hotkey/lib=sluice$')
#
# Redis: by default the script starts a redis-server of its own on a free
# port, so that the script calls counted per decision are the benchmarks'
# alone and no other client shares the server; it stops it on exit. Without
# redis-server installed, or with -shared-redis, it uses REDIS_ADDR (default
# 127.0.0.1:6379), which must answer.
#
# Output, in results/: raw.txt (every round, as go test printed it),
# raw-<family>.txt, benchstat.txt, loads.txt (uptime before and after each
# round), machine.txt, tables.md; README.md's results section is replaced
# with tables.md, which is also printed.
set -euo pipefail
cd "$(dirname "$0")"

rounds=6 quick=0 shared=0 profile=""
while [ $# -gt 0 ]; do
	case "$1" in
	-quick) quick=1 rounds=1 ;;
	-rounds) rounds="$2"; shift ;;
	-shared-redis) shared=1 ;;
	-profile) profile="$2"; shift ;;
	*) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done

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
	if [ -n "$redis_pid" ]; then
		kill "$redis_pid" 2>/dev/null || true
	fi
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

if [ "$shared" = 0 ] && command -v redis-server >/dev/null; then
	for _ in $(seq 20); do
		port=$((20000 + RANDOM % 20000))
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			continue # taken
		fi
		redis-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no \
			--daemonize yes --pidfile "$tmp/redis.pid" --dir "$tmp" --logfile "$tmp/redis.log"
		for _ in $(seq 50); do
			redis_ping 127.0.0.1 "$port" && break
			sleep 0.1
		done
		if redis_ping 127.0.0.1 "$port" && [ -s "$tmp/redis.pid" ]; then
			redis_pid=$(cat "$tmp/redis.pid")
			export REDIS_ADDR="127.0.0.1:$port"
			break
		fi
	done
	[ -n "$redis_pid" ] || { echo "run.sh: could not start redis-server" >&2; cat "$tmp/redis.log" >&2 || true; exit 1; }
	redis_note="redis: $(redis-server --version | cut -d' ' -f3), a private server started by run.sh"
else
	export REDIS_ADDR="${REDIS_ADDR:-127.0.0.1:6379}"
	redis_ping "${REDIS_ADDR%:*}" "${REDIS_ADDR##*:}" || { echo "run.sh: no Redis answers at $REDIS_ADDR" >&2; exit 1; }
	redis_note="redis: the shared server at $REDIS_ADDR (script calls per decision count other clients' too)"
fi
echo "run.sh: Redis at $REDIS_ADDR"

# benchstat, into a local bin if the machine has none.
if command -v benchstat >/dev/null; then
	benchstat=$(command -v benchstat)
else
	benchstat="$PWD/.bin/benchstat"
	[ -x "$benchstat" ] || GOBIN="$PWD/.bin" go install golang.org/x/perf/cmd/benchstat@latest
fi

go test -c -o "$tmp/bench.test" .

# Every contender must hold the shared policy before anything is timed.
"$tmp/bench.test" -test.run 'HoldThePolicy|AccuracyCases' -test.count 1 >"$tmp/tests.txt" 2>&1 ||
	{ cat "$tmp/tests.txt" >&2; echo "run.sh: a contender does not hold the policy" >&2; exit 1; }

mkdir -p results
rm -f results/raw*.txt results/loads.txt results/benchstat.txt
{
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') ($(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB)"
	echo "go: $(go version | cut -d' ' -f3-)"
	# The results and this README are rewritten by every run: not changes to what runs.
	echo "sluice: commit $(git -C .. rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C .. diff --quiet HEAD -- . ':!benchmarks/results' ':!benchmarks/README.md' 2>/dev/null || echo ', with changes not committed')"
	echo "$redis_note"
	echo "libraries: $(go list -m -f '{{.Path}} {{.Version}}' golang.org/x/time github.com/sethvargo/go-limiter github.com/throttled/throttled/v2 github.com/ulule/limiter/v3 github.com/go-redis/redis_rate/v10 github.com/labstack/echo/v4 github.com/gofiber/fiber/v2 github.com/gin-gonic/gin | paste -sd, | sed 's/,/, /g')"
	echo "command: ./run.sh $([ "$quick" = 1 ] && echo -quick)$([ "$quick" = 0 ] && echo "-rounds $rounds"), on $(date -u '+%Y-%m-%d %H:%M UTC')"
} >results/machine.txt

# family NAME BENCH BENCHTIME [FLAGS]: one family's benchmarks, appended to
# raw.txt.
failed=0
family() {
	"$tmp/bench.test" -test.run '^$' -test.bench "^$2\$" -test.benchmem -test.benchtime "$3" -test.count 1 "${@:4}" \
		>"$tmp/out.txt" 2>&1 || { failed=1; echo "run.sh: $2 failed:" >&2; grep -v '^Benchmark' "$tmp/out.txt" | tail -20 >&2; }
	grep '^Benchmark' "$tmp/out.txt" | tee -a results/raw.txt >>"results/raw-$1.txt" || true
}

start=$(date +%s)
for round in $(seq "$rounds"); do
	echo "round $round before: $(uptime)" | tee -a results/loads.txt
	family memory BenchmarkMemory "$memory_n"
	if [ "$round" = 1 ]; then # a weight, not a time: once is enough
		family heap BenchmarkHeapPerKey 1x -heapkeys "$heap_keys"
	fi
	family redis BenchmarkRedis "$redis_n"
	family http BenchmarkHTTP "$http_n"
	family accuracy BenchmarkAccuracy 1x
	echo "round $round after: $(uptime)" | tee -a results/loads.txt
done
echo "run.sh: $rounds rounds in $(($(date +%s) - start))s"

for f in memory heap redis http accuracy; do
	[ -s "results/raw-$f.txt" ] || continue
	echo "## $f"
	"$benchstat" -col /lib "results/raw-$f.txt"
	echo
done >results/benchstat.txt 2>&1 || true

go run ./report -dir results -readme README.md
cat results/tables.md

if [ -n "$profile" ]; then
	"$tmp/bench.test" -test.run '^$' -test.bench "$profile" -test.benchmem -test.benchtime "$memory_n" \
		-test.cpuprofile "$tmp/cpu.pprof" >/dev/null
	go tool pprof -top -nodecount=30 "$tmp/bench.test" "$tmp/cpu.pprof" 2>/dev/null | tee results/profile.txt
fi

exit "$failed"
