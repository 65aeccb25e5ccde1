
---------------------------------------------------------------------------
-- Sliding counter: "end:curr:prev".

local function counters(p, s)
  local e = now - now % p.period + p.period
  if s then
    if s[1] >= e then
      return s[1], s[2], s[3]
    elseif s[1] == e - p.period then
      return e, 0, s[2]
    end
  end
  return e, 0, 0
end

local function weigh(p, prev, elapsed)
  if prev == 0 then
    return 0
  end
  elapsed = min(max(elapsed, 0), p.period)
  return floor(prev * (p.period - elapsed) / p.period)
end

-- firstFit: the smallest elapsed e in [from, period) with weigh(prev, e) <= room, or -1.
local function firstFit(p, prev, room, from)
  if room < 0 then
    return -1
  end
  if weigh(p, prev, from) <= room then
    return from
  end
  local lo, hi = from, p.period
  while hi - lo > 1 do
    local mid = lo + floor((hi - lo) / 2)
    if weigh(p, prev, mid) <= room then
      hi = mid
    else
      lo = mid
    end
  end
  if hi == p.period then
    return -1
  end
  return hi
end

-- zeroAt: the elapsed time from which count, as the previous window, weighs
-- nothing; the period when it never does within the window.
local function zeroAt(p, count, from)
  local e = firstFit(p, count, 0, from)
  if e < 0 then
    return p.period
  end
  return e
end

local function counterRetry(p, curr, prev, elapsed, cost)
  local room = p.quota - curr - cost
  if room >= 0 then
    local e = firstFit(p, prev, room, elapsed)
    if e >= 0 then
      return e
    end
  end
  local e = firstFit(p, curr, p.quota - cost, 0)
  if e >= 0 then
    return p.period + e
  end
  return 2 * p.period
end

STEP[SLIDING_COUNTER] = function(p, s, cost) -- core's slidingCounter
  local e, curr, prev = counters(p, s)
  local elapsed = now - (e - p.period)
  local count = weigh(p, prev, elapsed) + curr
  local allowed = cost <= p.quota and count + cost <= p.quota
  local retry = 0
  if allowed then
    curr, count = curr + cost, count + cost
  elseif cost <= p.quota then
    retry = counterRetry(p, curr, prev, elapsed, cost) - elapsed
  end
  local reset = 0
  if curr > 0 then
    reset = p.period + zeroAt(p, curr, 0) - elapsed
  elseif prev > 0 then
    reset = zeroAt(p, prev, elapsed) - elapsed
  end
  return decision(p, allowed, cost, p.quota - count, reset, retry), allowed and {e, curr, prev}
end

if ADJUST then
  ADJUST[SLIDING_COUNTER] = function(p, s, delta)
    local e, curr, prev = counters(p, s)
    return {e, min(max(curr + delta, 0), 2147483647), prev}
  end
end

-- The time until the estimate is zero for good, from which on the state
-- decides as the zero state does: the standing's reset-after.
FULL = FULL or {}
FULL[SLIDING_COUNTER] = function(p, s)
  local e, curr, prev = counters(p, s)
  local start = e - p.period
  if curr > 0 then
    return e + zeroAt(p, curr, 0) - now
  elseif prev > 0 then
    return start + zeroAt(p, prev, now - start) - now
  end
  return 0
end
