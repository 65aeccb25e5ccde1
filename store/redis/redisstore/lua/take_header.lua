-- sluice: the head of the single-key fast scripts (take_gcra.lua,
-- take_token_bucket.lua): their shared arguments and the time, the caller's
-- when given, else the Redis server's TIME in µs.
local max, floor, ceil = math.max, math.floor, math.ceil
local burst, interval, cost = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local now, grace = tonumber(ARGV[5]), tonumber(ARGV[6])
if not now then
  if not redis.REDIS_VERSION_NUM then
    redis.replicate_commands() -- before Redis 5 (7 has the version number)
  end
  local t = redis.call('TIME')
  now, grace = tonumber(t[1]) * 1000000 + tonumber(t[2]), 0
end
