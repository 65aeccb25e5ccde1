-- sluice: one atomic step over the layers of one request.
--
-- This script is assembled from store/redis/lua/: prelude.lua, the files
-- of the algorithms it serves (one, or all of them), and main.lua. A script
-- serving one algorithm creates only that algorithm's functions on each
-- call, which keeps the common case cheap for Redis.
--
-- KEYS[i]    the state of layer i (layouts below); a key may repeat
-- ARGV       four per layer: algorithm (core.Algorithm); capacity (burst,
--            or quota for the window algorithms); interval µs, or period µs
--            for the window algorithms; cost (take) or delta (adjust);
--            then an optional tail:
--              [op] [now grace]
--            op (absent: "t"):
--              "t"   take every layer or none, as core's TakeAll does (a
--                    single Take is its one-layer case);
--              "tN"  the same, deciding the layers from the Nth on as if an
--                    earlier layer had denied (the Cluster path uses it to
--                    replay core's order across slots);
--              "a"   adjust every layer in order (core's Adjust), then
--                    report each layer's standing;
--            now and grace, only with the caller's clock: now in µs since
--            the Unix epoch, and a grace in ms added to every TTL. Without
--            them the time is the server's TIME and there is no grace.
--
-- Returns four integers per layer: outcome (0 denied, 1 allowed,
-- 2 impossible), remaining, reset-after µs, retry-after µs.
--
-- Every function mirrors the Go function of the same name in core
-- (algorithms.go, log.go) step for step, so that both decide alike to the
-- microsecond. Lua numbers are doubles: core's policy limits keep every value
-- an integer below 2^53, where + - * are exact and floor(a / b) is the exact
-- integer quotient. The sliding counter's weighting is a float product, taken
-- in the same order as in Go, so both round alike.
--
-- State layouts, one key per layer:
--   token bucket     string "tokens:last"
--   gcra             string "tat"
--   leaky bucket     string "level:last"
--   fixed window     string "end:count"
--   sliding counter  string "end:curr:prev"
--   sliding log      list of "at:cost" entries, oldest first, followed by
--                    one element holding the sum of their costs
-- A missing key is core's zero state: full. Every key expires when its state
-- is back to full (rounded up to the ms, plus the grace) and is deleted at
-- once when it already is.

local TOKEN_BUCKET, GCRA, LEAKY_BUCKET, FIXED_WINDOW, SLIDING_LOG, SLIDING_COUNTER = 1, 2, 3, 4, 5, 6
-- core.MaxDebt in µs and core.MaxWindowCount: the bounds of a key's debt.
local MAX_DEBT, MAX_WINDOW_COUNT = 31622400000000, 1125899906842624
local floor, max, min, ceil = math.floor, math.max, math.min, math.ceil
local call, format, find, sub = redis.call, string.format, string.find, string.sub

local n = #KEYS
local tail = #ARGV - 4 * n
local op, peekFrom = 't', 0
if tail % 2 == 1 then
  op = ARGV[4 * n + 1]
  if #op > 1 then
    op, peekFrom = 't', tonumber(sub(op, 2))
  end
end

local now, grace
if tail >= 2 then
  now, grace = tonumber(ARGV[#ARGV - 1]), tonumber(ARGV[#ARGV])
else
  if not redis.REDIS_VERSION_NUM then
    redis.replicate_commands() -- before Redis 5 (7 has the version number)
  end
  local t = call('TIME')
  now, grace = tonumber(t[1]) * 1000000 + tonumber(t[2]), 0
end

-- A layer p: its key, algorithm, burst (the quota for the window
-- algorithms), interval or quota and period, and cost.
local layers = {}
for i = 1, n do
  local o = (i - 1) * 4
  local alg, capacity, span = tonumber(ARGV[o + 1]), tonumber(ARGV[o + 2]), tonumber(ARGV[o + 3])
  if alg <= LEAKY_BUCKET then
    layers[i] = {key = KEYS[i], alg = alg, burst = capacity, interval = span, cost = tonumber(ARGV[o + 4])}
  else
    layers[i] = {key = KEYS[i], alg = alg, burst = capacity, quota = capacity, period = span, cost = tonumber(ARGV[o + 4])}
  end
end

-- decision fills the fields every algorithm reports the same way.
local function decision(p, allowed, cost, remaining, reset, retry)
  remaining, reset = max(remaining, 0), max(reset, 0)
  if cost > p.burst then
    return {2, remaining, reset, 0}
  elseif not allowed then
    return {0, remaining, reset, max(retry, 1)}
  end
  return {1, remaining, reset, 0}
end

-- The algorithm files register their functions here, by algorithm:
--   STEP[a](p, s, cost)    core's step: the decision, and the state after
--                          the take when it allows (false otherwise); s is
--                          a table of integers, nil for the zero state
--   ADJUST[a](p, s, delta) core's Adjust: the state after
--   FULL[a](p, s)          µs until s is back to full, when that is not its
--                          standing's reset-after
-- and the sliding log's file fills LOG. Every table and function a script
-- makes is made anew on each call, so ADJUST exists only when adjusting
-- and FULL only where an algorithm needs it.
local STEP, FULL, LOG = {}, nil, nil
local ADJUST = op == 'a' and {} or nil

-- ttl converts the µs until a state is full to a TTL in ms: rounded up,
-- plus the grace.
local function ttl(us)
  return max(ceil(us / 1000), 1) + grace
end
