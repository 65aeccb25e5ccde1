
---------------------------------------------------------------------------
-- GCRA: "tat", the theoretical arrival time.

STEP[GCRA] = function(p, s, cost) -- core's gcra
  local tat = max(s and s[1] or 0, now)
  local span = p.burst * p.interval
  local allowed = cost <= p.burst and tat + cost * p.interval - span <= now
  local retry = 0
  if allowed then
    tat = tat + cost * p.interval
  elseif cost <= p.burst then
    retry = tat + cost * p.interval - span - now
  end
  return decision(p, allowed, cost, floor((span - (tat - now)) / p.interval), tat - now, retry), allowed and {tat}
end

if ADJUST then
  ADJUST[GCRA] = function(p, s, delta)
    local tat = max(s and s[1] or 0, now)
    if delta > 0 then
      local debt = floor(MAX_DEBT / p.interval) * p.interval
      delta = min(delta, floor(max(p.burst * p.interval + debt - (tat - now), 0) / p.interval))
    else
      delta = max(delta, -(floor((tat - now) / p.interval) + 1))
    end
    return {max(tat + delta * p.interval, now)}
  end
end
