-- sluice: a batch of lone Takes on token-bucket keys (see
-- takes_header.lua, prepended), each decided as take_token_bucket.lua
-- decides it.
--
-- tokens[key] and last[key] are the key's stored state (tokens false if
-- missing), ttl[key] the TTL in ms of its newest write, if a Take changed
-- it; dirty the keys changed, in the order they first were.
local tokensOf, lastOf, ttl, dirty = {}, {}, {}, {}
local find, sub = string.find, string.sub
for k = 1, #KEYS do
  local key = KEYS[k]
  local burst, interval, cost = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  if step == 4 then
    now = tonumber(ARGV[a + 3])
  end
  a = a + step
  local held = tokensOf[key]
  if held == nil then
    local raw = call('GET', key)
    held = false
    if raw then
      local i = find(raw, ':', 1, true)
      held, lastOf[key] = tonumber(sub(raw, 1, i - 1)), tonumber(sub(raw, i + 1))
    end
    tokensOf[key] = held
  end

  -- core's refill
  local tokens, last = burst, now
  if held then
    tokens, last = held, lastOf[key]
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
    if not ttl[key] then
      dirty[#dirty + 1] = key
    end
    tokensOf[key], lastOf[key], ttl[key] = tokens, last, max(ceil(reset / 1000), 1) + grace
  end

  -- core's decision
  local o = 4 * k
  out[o - 3], out[o - 2], out[o - 1], out[o] = 1, max(tokens, 0), max(reset, 0), 0
  if cost > burst then
    out[o - 3] = 2
  elseif not allowed then
    out[o - 3], out[o] = 0, max(retry, 1)
  end
end
for _, key in ipairs(dirty) do
  call('SET', key, format('%d:%d', tokensOf[key], lastOf[key]), 'PX', ttl[key])
end
return out
