
---------------------------------------------------------------------------
-- Leaky queue: "tat", the time the queue drains (GCRA's state), or
-- "tat:gaps" while turns before it were given back (core's queue.go): gaps
-- is a set of gapBits bits, bit k for the unit whose turn ends k intervals
-- before the end, kept as an integer below 2^52, exact in a double.

local GAP_BITS = 52
local GAP_SPAN = 2 ^ GAP_BITS

-- queueAt is core's: the queue's end and the gaps whose turns have not come.
local function queueAt(p, s)
  local tat = s and s[1] or 0
  if tat <= now then
    return now, 0
  end
  local ahead = tat - p.burst * p.interval - now
  if ahead < 0 then
    return tat, 0
  end
  local gaps = (s[2] or 0) % GAP_SPAN
  local k = floor(ahead / p.interval)
  if k < GAP_BITS - 1 then
    gaps = gaps % (2 ^ (k + 1))
  end
  return tat, gaps
end

local function shiftGaps(gaps, n)
  if n >= GAP_BITS then
    return 0
  end
  return (gaps % (2 ^ (GAP_BITS - n))) * 2 ^ n
end

local function shorten(p, tat, gaps, n)
  n = min(n, floor((tat - now) / p.interval) + 1)
  tat = max(tat - n * p.interval, now)
  if n >= GAP_BITS then
    return tat, 0
  end
  gaps = floor(gaps / 2 ^ n)
  while gaps % 2 == 1 and tat > now do
    tat, gaps = tat - p.interval, (gaps - 1) / 2
  end
  return tat, gaps
end

local function queueState(tat, gaps)
  if gaps == 0 then
    return {tat}
  end
  return {tat, gaps}
end

-- ones counts the bits of gaps.
local function ones(gaps)
  local n = 0
  while gaps > 0 do
    n, gaps = n + gaps % 2, floor(gaps / 2)
  end
  return n
end

STEP[LEAKY_QUEUE] = function(p, s, cost) -- core's leakyQueue
  local tat, gaps = queueAt(p, s)
  local span = p.burst * p.interval
  if cost > 0 and cost <= p.most and gaps > 0 and cost <= ones(gaps) then
    -- the earliest cost gaps: the highest bits
    local rest, left, last = gaps, cost, 0
    for k = GAP_BITS - 1, 0, -1 do
      if left == 0 then
        break
      end
      local bit = 2 ^ k
      if floor(rest / bit) % 2 == 1 then
        rest, last, left = rest - bit, k, left - 1
      end
    end
    local d = decision(p, true, cost, floor((span - (tat - now)) / p.interval), tat - now, 0)
    d[5] = tat - last * p.interval - span - now
    return d, queueState(tat, rest)
  end
  local allowed, wait, retry = false, 0, 0
  if cost <= p.most then -- a larger cost is Impossible
    local nxt = tat + cost * p.interval
    wait = max(nxt - now - span, 0)
    allowed = wait <= p.bound
    if allowed then
      tat, gaps = nxt, shiftGaps(gaps, cost)
    else
      retry = wait - p.bound
    end
  end
  local d = decision(p, allowed, cost, floor((span - (tat - now)) / p.interval), tat - now, retry)
  if allowed and cost > 0 then
    d[5] = wait
  end
  return d, allowed and queueState(tat, gaps)
end

if ADJUST then
  ADJUST[LEAKY_QUEUE] = function(p, s, delta) -- core's adjustQueue
    local tat, gaps = queueAt(p, s)
    if delta > 0 then
      local debt = floor(MAX_DEBT / p.interval) * p.interval
      delta = min(delta, floor(max(p.burst * p.interval + p.bound + debt - (tat - now), 0) / p.interval))
    else
      delta = max(delta, -(floor((tat - now) / p.interval) + 1))
    end
    if delta >= 0 then
      return queueState(tat + delta * p.interval, shiftGaps(gaps, delta))
    end
    return queueState(shorten(p, tat, gaps, -delta))
  end

  -- TURN is core's ReturnTurn: cost units whose turn comes in in µs.
  TURN = function(p, s, cost, in_)
    local tat, gaps = queueAt(p, s)
    local span = p.burst * p.interval
    local waiting = tat - span > now
    local k = floor((tat - (now + in_ + span) + floor(p.interval / 2)) / p.interval)
    if in_ <= 0 and waiting then
      return queueState(tat, gaps)
    elseif in_ <= 0 or k <= 0 then
      return queueState(shorten(p, tat, gaps, cost))
    end
    local j = k
    while j < k + cost and j < GAP_BITS do
      if floor(gaps / 2 ^ j) % 2 == 0 then
        gaps = gaps + 2 ^ j
      end
      j = j + 1
    end
    return queueState(tat, gaps)
  end
end
