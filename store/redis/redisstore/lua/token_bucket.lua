
---------------------------------------------------------------------------
-- Token bucket: "tokens:last".

local function refill(p, s)
  if not s then
    return p.burst, now
  end
  local tokens, last = s[1], s[2]
  if now > last then
    local n = floor((now - last) / p.interval)
    if n >= p.burst - tokens then
      return p.burst, now
    end
    tokens, last = tokens + n, last + n * p.interval
  end
  return tokens, last
end

STEP[TOKEN_BUCKET] = function(p, s, cost) -- core's tokenBucket
  local tokens, last = refill(p, s)
  local since = now - last
  local allowed = cost <= p.burst and tokens >= cost
  local retry = 0
  if allowed then
    tokens = tokens - cost
  elseif cost <= p.burst then
    retry = (cost - tokens) * p.interval - since
  end
  local reset = 0
  if tokens < p.burst then
    reset = (p.burst - tokens) * p.interval - since
  end
  return decision(p, allowed, cost, tokens, reset, retry), allowed and {tokens, last}
end

if ADJUST then
  ADJUST[TOKEN_BUCKET] = function(p, s, delta)
    local tokens, last = refill(p, s)
    tokens = max(tokens - delta, min(tokens, -floor(MAX_DEBT / p.interval)))
    if tokens >= p.burst then
      tokens, last = p.burst, now
    end
    return {tokens, last}
  end
end
