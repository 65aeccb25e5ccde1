-- sluice: Take on one GCRA key, the common case, hand-inlined from
-- prelude.lua, gcra.lua and main.lua. Every function and table a script
-- makes is made anew on each call, and here that would almost double what a
-- decision costs Redis; this script makes one table, its reply. It decides
-- exactly as the step scripts (the differential and conformance tests hold
-- both to core's decisions).
--
-- KEYS[1]  the state, "tat"
-- ARGV     the algorithm (2), burst, interval µs, cost; then, only with the
--          caller's clock, now in µs since the Unix epoch and a grace in ms
--          added to the TTL
-- Returns outcome (0 denied, 1 allowed, 2 impossible), remaining,
-- reset-after µs, retry-after µs.

-- (take_header.lua, prepended, reads the arguments and the time.)

-- core's gcra
local tat = max(tonumber(redis.call('GET', KEYS[1])) or 0, now)
local span = burst * interval
local allowed = cost <= burst and tat + cost * interval - span <= now
local retry = 0
if allowed then
  tat = tat + cost * interval
  -- the key expires when the state is back to full: at the TAT
  redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', max(ceil((tat - now) / 1000), 1) + grace)
elseif cost <= burst then
  retry = tat + cost * interval - span - now
end

-- core's decision
local remaining, reset = max(floor((span - (tat - now)) / interval), 0), max(tat - now, 0)
if cost > burst then
  return {2, remaining, reset, 0}
elseif not allowed then
  return {0, remaining, reset, max(retry, 1)}
end
return {1, remaining, reset, 0}
