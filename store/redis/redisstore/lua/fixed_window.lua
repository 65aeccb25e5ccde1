
---------------------------------------------------------------------------
-- Fixed window: "end:count".

local function window(p, s)
  local e = now - now % p.period + p.period
  if s and s[1] >= e then
    return s[1], s[2]
  end
  return e, 0
end

STEP[FIXED_WINDOW] = function(p, s, cost) -- core's fixedWindow
  local e, count = window(p, s)
  local allowed = cost <= p.quota and count + cost <= p.quota
  if allowed then
    count = count + cost
  end
  local reset = 0
  if count > 0 then
    reset = e - now
  end
  return decision(p, allowed, cost, p.quota - count, reset, e - now), allowed and {e, count}
end

if ADJUST then
  ADJUST[FIXED_WINDOW] = function(p, s, delta)
    local e, count = window(p, s)
    return {e, min(max(count + delta, 0), max(count, MAX_WINDOW_COUNT))}
  end
end
