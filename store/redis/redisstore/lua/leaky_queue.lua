
---------------------------------------------------------------------------
-- Leaky queue: "tat", the time the queue drains (GCRA's state).

STEP[LEAKY_QUEUE] = function(p, s, cost) -- core's leakyQueue
  local tat = max(s and s[1] or 0, now)
  local span = p.burst * p.interval
  local allowed, wait, retry = false, 0, 0
  if cost <= p.most then -- a larger cost is Impossible
    local nxt = tat + cost * p.interval
    wait = max(nxt - now - span, 0)
    allowed = wait <= p.bound
    if allowed then
      tat = nxt
    else
      retry = wait - p.bound
    end
  end
  local d = decision(p, allowed, cost, floor((span - (tat - now)) / p.interval), tat - now, retry)
  if allowed and cost > 0 then
    d[5] = wait
  end
  return d, allowed and {tat}
end

if ADJUST then
  ADJUST[LEAKY_QUEUE] = function(p, s, delta) -- core's Adjust, GCRA's with the bound
    local tat = max(s and s[1] or 0, now)
    if delta > 0 then
      local debt = floor(MAX_DEBT / p.interval) * p.interval
      delta = min(delta, floor(max(p.burst * p.interval + p.bound + debt - (tat - now), 0) / p.interval))
    else
      delta = max(delta, -(floor((tat - now) / p.interval) + 1))
    end
    return {max(tat + delta * p.interval, now)}
  end
end
