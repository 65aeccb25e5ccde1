-- sluice: a reservation a Redis store keeps (core.Reserver), made or
-- settled on the layers of one hash slot, in one atomic step.
--
-- This script is assembled from store/redis/lua/: reserve_head.lua, the
-- files of the algorithms a reservation serves (every one but the leaky
-- queue and the sliding log) and reserve.lua.
--
-- KEYS       three per layer: its state, its holds (a hash: field -> hold)
--            and their expiries (a sorted set: field by µs since the epoch)
-- ARGV[1]    the TTL grace in ms when the caller's clock is used, or "s":
--            the server's TIME, and no grace
-- ARGV[2]    now, µs since the Unix epoch (with the caller's clock)
-- ARGV[3]    "r" reserve, "s" settle, "f" settle for good
-- ARGV[4]    the reservation's id
-- ARGV[5]    its time to live, µs
-- then five per layer: its index in the reservation, algorithm, capacity,
--            interval µs (period µs for a window), cost (an estimate to
--            reserve, a running total to settle)
--
-- Returns a flag (reserve: 1, or -1 when the id is held already and
-- nothing was done; settle: 1 if the id was held, 0 if not), then four
-- integers per layer as the step script returns them.
--
-- A hold is "estimate:used:held", the fields of storekit.Hold, whose
-- methods the code below mirrors step for step.

local TOKEN_BUCKET, GCRA, LEAKY_BUCKET, FIXED_WINDOW, SLIDING_LOG, SLIDING_COUNTER, LEAKY_QUEUE = 1, 2, 3, 4, 5, 6, 7
local MAX_DEBT, MAX_WINDOW_COUNT = 31622400000000, 1125899906842624
-- storekit.MaxCost and storekit.MaxReclaims
local MAX_COST, MAX_RECLAIMS = 1099511627776, 16
local floor, max, min, ceil = math.floor, math.max, math.min, math.ceil
local call, format, find, sub = redis.call, string.format, string.find, string.sub

local serverClock = ARGV[1] == 's'
local grace = serverClock and 0 or tonumber(ARGV[1])
local now = tonumber(ARGV[2])
if serverClock then
  if not redis.REDIS_VERSION_NUM then
    redis.replicate_commands()
  end
  local t = call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function decision(p, allowed, cost, remaining, reset, retry)
  remaining, reset = max(remaining, 0), max(reset, 0)
  if cost > p.most then
    return {2, remaining, reset, 0}
  elseif not allowed then
    return {0, remaining, reset, max(retry, 1)}
  end
  return {1, remaining, reset, 0}
end

local STEP, FULL, ADJUST = {}, nil, {}

local function ttl(us)
  return max(ceil(us / 1000), 1) + grace
end
