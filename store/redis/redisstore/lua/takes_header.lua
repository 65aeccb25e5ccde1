-- sluice: the head of the batched single-key scripts (takes_gcra.lua,
-- takes_token_bucket.lua), which decide a batch of lone Takes under one
-- algorithm, the common batch. The step scripts (main.lua) build a table
-- for every operation, layer and decision of a batch; these build none but
-- their reply and one cache entry per key, and read and write each key
-- once: a batch on one hot key reads it once and writes it at most once.
--
-- KEYS       the state of each Take's key, in order; a key may repeat
-- ARGV[1]    the TTL grace in ms when the caller's clock is used, or "s":
--            the server's TIME, and no grace
-- then, for each Take: burst, interval µs, cost, and only with the
-- caller's clock, now in µs since the Unix epoch
-- Returns four integers per Take: outcome (0 denied, 1 allowed, 2
-- impossible), remaining, reset-after µs, retry-after µs.
--
-- Takes run one after the other, each on the state the ones before it left,
-- exactly as if each were its own call (take_gcra.lua's or
-- take_token_bucket.lua's): a key's state is kept here from its first read,
-- and written once at the end, as the last Take that changed it would have
-- written it (the same value and TTL); the script is atomic, so nobody sees
-- the states between.
local max, floor, ceil, call, format = math.max, math.floor, math.ceil, redis.call, string.format
local serverClock = ARGV[1] == 's'
local grace, now, step = 0, 0, 3
if serverClock then
  if not redis.REDIS_VERSION_NUM then
    redis.replicate_commands() -- before Redis 5 (7 has the version number)
  end
  local t = call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  grace, step = tonumber(ARGV[1]), 4
end
local out, a = {}, 2
