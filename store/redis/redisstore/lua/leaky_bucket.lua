
---------------------------------------------------------------------------
-- Leaky bucket (meter): "level:last".

local function leak(p, s)
  if not s then
    return 0, now
  end
  local level, last = s[1], s[2]
  if now > last then
    local n = floor((now - last) / p.interval)
    if n >= level then
      return 0, now
    end
    level, last = level - n, last + n * p.interval
  end
  return level, last
end

STEP[LEAKY_BUCKET] = function(p, s, cost) -- core's leakyBucket
  local level, last = leak(p, s)
  local since = now - last
  local allowed = cost <= p.burst and level + cost <= p.burst
  local retry = 0
  if allowed then
    level = level + cost
  elseif cost <= p.burst then
    retry = (level + cost - p.burst) * p.interval - since
  end
  local reset = 0
  if level > 0 then
    reset = level * p.interval - since
  end
  return decision(p, allowed, cost, p.burst - level, reset, retry), allowed and {level, last}
end

if ADJUST then
  ADJUST[LEAKY_BUCKET] = function(p, s, delta)
    local level, last = leak(p, s)
    level = min(level + delta, max(level, p.burst + floor(MAX_DEBT / p.interval)))
    return {max(level, 0), last}
  end
end
