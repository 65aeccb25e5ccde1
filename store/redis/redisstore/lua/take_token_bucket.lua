-- sluice: Take on one token-bucket key, the common case, hand-inlined from
-- prelude.lua, token_bucket.lua and main.lua. Every function and table a
-- script makes is made anew on each call, and here that would almost double
-- what a decision costs Redis; this script makes one table, its reply. It
-- decides exactly as the step scripts (the differential and conformance
-- tests hold both to core's decisions).
--
-- KEYS[1]  the state, "tokens:last"
-- ARGV     the algorithm (1), burst, interval µs, cost; then, only with the
--          caller's clock, now in µs since the Unix epoch and a grace in ms
--          added to the TTL
-- Returns outcome (0 denied, 1 allowed, 2 impossible), remaining,
-- reset-after µs, retry-after µs.

-- (take_header.lua, prepended, reads the arguments and the time.)

-- core's refill
local tokens, last = burst, now
local raw = redis.call('GET', KEYS[1])
if raw then
  local i = string.find(raw, ':', 1, true)
  tokens, last = tonumber(string.sub(raw, 1, i - 1)), tonumber(string.sub(raw, i + 1))
  if now > last then
    local n = floor((now - last) / interval)
    if n >= burst - tokens then
      tokens, last = burst, now
    else
      tokens, last = tokens + n, last + n * interval
    end
  end
end

-- core's tokenBucket
local since = now - last
local allowed = cost <= burst and tokens >= cost
local retry = 0
if allowed then
  tokens = tokens - cost
elseif cost <= burst then
  retry = (cost - tokens) * interval - since
end
local reset = 0
if tokens < burst then
  reset = (burst - tokens) * interval - since
end
if allowed then
  -- the key expires when the state is back to full: at the reset
  redis.call('SET', KEYS[1], string.format('%d:%d', tokens, last), 'PX', max(ceil(reset / 1000), 1) + grace)
end

-- core's decision
tokens, reset = max(tokens, 0), max(reset, 0)
if cost > burst then
  return {2, tokens, reset, 0}
elseif not allowed then
  return {0, tokens, reset, max(retry, 1)}
end
return {1, tokens, reset, 0}
