-- sluice: the decisions of one batch, each an atomic step over the layers
-- of one request, in order.
--
-- This script is assembled from store/redis/lua/: prelude.lua, the files
-- of the algorithms it serves (one, or all of them), and main.lua. A script
-- serving one algorithm creates only that algorithm's functions on each
-- call, which keeps the common case cheap for Redis.
--
-- KEYS       the state of every layer of every operation, in order; a key
--            may repeat, within an operation or across operations
-- ARGV[1]    the TTL grace in ms when the caller's clock is used, or "s":
--            the server's TIME, and no grace
-- then, for each operation:
--   kind     "t"   take every layer or none, as core's TakeAll does (a
--                  single Take is its one-layer case);
--            "tN"  the same, deciding the layers from the Nth on as if an
--                  earlier layer had denied (the Cluster path uses it to
--                  replay core's order across slots);
--            "a"   adjust every layer in order (core's Adjust), then report
--                  each layer's standing;
--            "r"   forget every layer's state (core's Reset);
--            "lN"  lease: take as many units as are left, up to N but at
--                  least the (one) layer's cost, for an instance to spend
--                  locally; the units granted are the reply's fourth value
--   n        the number of layers
--   now      µs since the Unix epoch, only with the caller's clock
--   four per layer: algorithm (core.Algorithm); capacity (burst, or quota
--            for the window algorithms); interval µs, or period µs for the
--            window algorithms; cost (take) or delta (adjust). A leaky
--            queue's layer has five: its bound on waiting (core's
--            Policy.MaxDelay) in µs comes before the cost.
--
-- Returns four integers per layer of every operation: outcome (0 denied,
-- 1 allowed, 2 impossible, 3 allowed after a delay), remaining, reset-after
-- µs, and retry-after µs, or for outcome 3 the delay µs (a grant has no
-- retry-after); all zero for a reset. Operations run one after the other,
-- each on the state the ones before it left, exactly as if each were its
-- own call.
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
--   leaky queue      string "tat"
--   leaky bucket     string "level:last"
--   fixed window     string "end:count"
--   sliding counter  string "end:curr:prev"
--   sliding log      list of "at:cost" entries, oldest first, followed by
--                    one element holding the sum of their costs
-- A missing key is core's zero state: full. Every key expires when its state
-- is back to full (rounded up to the ms, plus the grace) and is deleted at
-- once when it already is.

local TOKEN_BUCKET, GCRA, LEAKY_BUCKET, FIXED_WINDOW, SLIDING_LOG, SLIDING_COUNTER, LEAKY_QUEUE = 1, 2, 3, 4, 5, 6, 7
-- storekit.MaxDebt in µs and storekit.MaxWindowCount: the bounds of a key's debt.
local MAX_DEBT, MAX_WINDOW_COUNT = 31622400000000, 1125899906842624
local floor, max, min, ceil = math.floor, math.max, math.min, math.ceil
local call, format, find, sub = redis.call, string.format, string.find, string.sub

-- The operations, parsed up front: a layer p has its key, algorithm, burst
-- (the quota for the window algorithms), interval or quota and period, and
-- cost; most, the largest cost it can grant (its burst, and a queue's
-- waiting units beyond); and a queue's bound.
local serverClock = ARGV[1] == 's'
local grace = serverClock and 0 or tonumber(ARGV[1])
local ops, adjusting = {}, false
do
  local a, k = 2, 1
  while a <= #ARGV do
    local kind, n = ARGV[a], tonumber(ARGV[a + 1])
    local op = {kind = kind, peekFrom = 0, layers = {}}
    a = a + 2
    if sub(kind, 1, 1) == 'l' then
      op.kind, op.size = 'l', tonumber(sub(kind, 2))
    elseif #kind > 1 then
      op.kind, op.peekFrom = 't', tonumber(sub(kind, 2))
    end
    adjusting = adjusting or op.kind == 'a'
    if not serverClock then
      op.now, a = tonumber(ARGV[a]), a + 1
    end
    for i = 1, n do
      local alg, capacity, span = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
      local p = {key = KEYS[k], alg = alg, burst = capacity, most = capacity}
      if alg == LEAKY_QUEUE then
        p.interval, p.bound = span, tonumber(ARGV[a + 3])
        p.most, a = capacity + floor(p.bound / span), a + 1
      elseif alg <= LEAKY_BUCKET then
        p.interval = span
      else
        p.quota, p.period = capacity, span
      end
      p.cost = tonumber(ARGV[a + 3])
      op.layers[i] = p
      a, k = a + 4, k + 1
    end
    ops[#ops + 1] = op
  end
end

-- now is the time of the operation being decided: the server's, or each
-- operation's own.
local now = 0
if serverClock then
  if not redis.REDIS_VERSION_NUM then
    redis.replicate_commands() -- before Redis 5 (7 has the version number)
  end
  local t = call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- decision fills the fields every algorithm reports the same way. A leaky
-- queue's grant adds a fifth, its delay, which put sends in the place of
-- the retry-after.
local function decision(p, allowed, cost, remaining, reset, retry)
  remaining, reset = max(remaining, 0), max(reset, 0)
  if cost > p.most then
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
-- makes is made anew on each call, so ADJUST exists only when some
-- operation adjusts and FULL only where an algorithm needs it.
local STEP, FULL, LOG = {}, nil, nil
local ADJUST = adjusting and {} or nil

-- ttl converts the µs until a state is full to a TTL in ms: rounded up,
-- plus the grace.
local function ttl(us)
  return max(ceil(us / 1000), 1) + grace
end
