-- sluice: one atomic step over the layers of one request.
--
-- KEYS[i]    the state of layer i (layouts below); a key may repeat
-- ARGV[1]    now, µs since the Unix epoch; 0 means the server's TIME
-- ARGV[2]    grace, ms added to every TTL (caller clocks), 0 otherwise
-- ARGV[3]    "t": take every layer or none, as core's TakeAll does (a single
--            Take is its one-layer case); "a": adjust every layer in order,
--            then report each layer's standing (core's Adjust)
-- ARGV[4..]  six per layer: algorithm (core.Algorithm), burst, interval µs,
--            quota, period µs, cost ("t") or delta ("a")
--
-- Returns four integers per layer: outcome (0 denied, 1 allowed,
-- 2 impossible), remaining, reset-after µs, retry-after µs.
--
-- Every function below mirrors the Go function of the same name in core
-- (algorithms.go, log.go) step for step, so that both decide alike to the
-- microsecond. Lua numbers are doubles: core's policy limits keep every value
-- an integer below 2^53, where + - * are exact and floor(a / b) is the exact
-- integer quotient. The sliding counter's weighting is a float product, taken
-- in the same order as in Go, so both round alike.
--
-- State layouts, one key per layer:
--   token bucket     string "tokens:last"
--   gcra             string "tat"
--   leaky bucket     string "level:last"
--   fixed window     string "end:count"
--   sliding counter  string "end:curr:prev"
--   sliding log      list of "at:cost" entries, oldest first, followed by
--                    one element holding the sum of their costs
-- A missing key is core's zero state: full. Every key expires when its state
-- is back to full (the standing's reset-after, rounded up to the ms, plus the
-- grace) and is deleted at once when it already is.

local TOKEN_BUCKET, GCRA, LEAKY_BUCKET, FIXED_WINDOW, SLIDING_LOG, SLIDING_COUNTER = 1, 2, 3, 4, 5, 6
local floor, max, min, ceil = math.floor, math.max, math.min, math.ceil
local call, format, find, sub = redis.call, string.format, string.find, string.sub

local now = tonumber(ARGV[1])
if now == 0 then
  if redis.replicate_commands then
    redis.replicate_commands() -- Redis < 7: replicate effects, not the script
  end
  local t = call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local grace = tonumber(ARGV[2])
local op = ARGV[3]

local layers = {}
for i = 1, #KEYS do
  local o = 3 + (i - 1) * 6
  layers[i] = {
    key = KEYS[i],
    alg = tonumber(ARGV[o + 1]),
    burst = tonumber(ARGV[o + 2]),
    interval = tonumber(ARGV[o + 3]),
    quota = tonumber(ARGV[o + 4]),
    period = tonumber(ARGV[o + 5]),
    cost = tonumber(ARGV[o + 6]),
  }
end

-- decision fills the fields every algorithm reports the same way.
local function decision(p, allowed, cost, remaining, reset, retry)
  remaining, reset = max(remaining, 0), max(reset, 0)
  if cost > p.burst then
    return {2, remaining, reset, 0}
  elseif not allowed then
    return {0, remaining, reset, max(retry, 1)}
  end
  return {1, remaining, reset, 0}
end

---------------------------------------------------------------------------
-- The five algorithms whose state is a few integers. Each step function
-- takes the state (a table of integers, nil for the zero state) and returns
-- the decision and, when it allows, the state after the take.

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

local function tokenBucket(p, s, cost)
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

local function gcra(p, s, cost)
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

local function leakyBucket(p, s, cost)
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

local function window(p, s)
  local e = now - now % p.period + p.period
  if s and s[1] >= e then
    return s[1], s[2]
  end
  return e, 0
end

local function fixedWindow(p, s, cost)
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

local function slidingCounter(p, s, cost)
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
    reset = p.period + firstFit(p, curr, 0, 0) - elapsed
  elseif prev > 0 then
    reset = firstFit(p, prev, 0, elapsed) - elapsed
  end
  return decision(p, allowed, cost, p.quota - count, reset, retry), allowed and {e, curr, prev}
end

local steps = {
  [TOKEN_BUCKET] = tokenBucket,
  [GCRA] = gcra,
  [LEAKY_BUCKET] = leakyBucket,
  [FIXED_WINDOW] = fixedWindow,
  [SLIDING_COUNTER] = slidingCounter,
}

-- adjust is core's (*Policy).Adjust without the standing: the state after.
local function adjust(p, s, delta)
  local a = p.alg
  if a == TOKEN_BUCKET then
    local tokens, last = refill(p, s)
    tokens = tokens - delta
    if tokens >= p.burst then
      tokens, last = p.burst, now
    end
    return {tokens, last}
  elseif a == GCRA then
    local tat = max(s and s[1] or 0, now) + delta * p.interval
    return {max(tat, now)}
  elseif a == LEAKY_BUCKET then
    local level, last = leak(p, s)
    return {max(level + delta, 0), last}
  elseif a == FIXED_WINDOW then
    local e, count = window(p, s)
    return {e, min(max(count + delta, 0), 4611686018427387903)}
  end
  local e, curr, prev = counters(p, s)
  return {e, min(max(curr + delta, 0), 2147483647), prev}
end

-- States are cached per key for the whole script, so that layers repeating
-- a key see each other's takes, and written back once at the end.
local states = {}

local function state(p)
  local e = states[p.key]
  if not e then
    local raw = call('GET', p.key)
    local s
    if raw then
      s = {}
      for part in string.gmatch(raw, '[^:]+') do
        s[#s + 1] = tonumber(part)
      end
    end
    e = {p = p, raw = raw, s = s}
    states[p.key] = e
  end
  return e
end

local function encode(s)
  if not s then
    return false
  end
  local parts = {}
  for i = 1, #s do
    parts[i] = format('%d', s[i])
  end
  return table.concat(parts, ':')
end

-- ttl converts a reset-after in µs to a TTL in ms: rounded up, plus the grace.
local function ttl(us)
  return max(ceil(us / 1000), 1) + grace
end

local function flushState(key, e)
  local v = encode(e.s)
  if v == e.raw then
    return
  end
  local reset = 0
  if e.s then
    reset = steps[e.p.alg](e.p, e.s, 0)[3]
  end
  if reset == 0 then
    if e.raw then
      call('DEL', key)
    end
  else
    call('SET', key, v, 'PX', ttl(reset))
  end
end

---------------------------------------------------------------------------
-- The sliding log, worked on in place: a list of entries plus their total.
-- The list keeps core's insertion order exactly, so trimming stops where
-- core's does even if a clock stepped back. The total and the newest entry
-- are cached in the table l; the total is written back at the end.

local logs = {}

local function parse(entry)
  local i = find(entry, ':', 1, true)
  return tonumber(sub(entry, 1, i - 1)), tonumber(sub(entry, i + 1))
end

local function loadLog(key)
  local l = logs[key]
  if not l then
    l = {key = key, count = 0, total = 0, exists = false, dirty = false}
    local n = call('LLEN', key)
    if n > 0 then
      l.exists, l.count, l.total = true, n - 1, tonumber(call('LINDEX', key, -1))
    end
    logs[key] = l
  end
  return l
end

local function newest(l)
  if not l.nat then
    l.nat, l.ncost = parse(call('LINDEX', l.key, -2))
  end
  return l.nat, l.ncost
end

-- trim drops the entries at or before cutoff, oldest first.
local function trim(l, cutoff)
  local size = 1
  while l.count > 0 do
    local chunk = call('LRANGE', l.key, 0, min(l.count, size) - 1)
    local k = 0
    for i = 1, #chunk do
      local at, cost = parse(chunk[i])
      if at > cutoff then
        break
      end
      l.total = l.total - cost
      k = i
    end
    if k == 0 then
      return
    end
    call('LTRIM', l.key, k, -1)
    l.count, l.dirty = l.count - k, true
    if l.count == 0 then
      l.nat = nil
    end
    if k < #chunk then
      return
    end
    size = min(size * 4, 256)
  end
end

-- push logs cost at at, merging into the newest entry when it has the same
-- time or the log already holds limit entries.
local function push(l, at, cost, limit)
  l.total, l.dirty = l.total + cost, true
  if l.count > 0 then
    local nat, ncost = newest(l)
    if l.count >= limit or nat == at then
      l.nat, l.ncost = max(nat, at), ncost + cost
      call('LSET', l.key, -2, format('%d:%d', l.nat, l.ncost))
      return
    end
  end
  local entry = format('%d:%d', at, cost)
  if l.exists then
    call('LSET', l.key, -1, entry) -- over the old total...
    call('RPUSH', l.key, '0')      -- ...which moves one place on
  else
    call('RPUSH', l.key, entry, '0')
    l.exists = true
  end
  l.count, l.nat, l.ncost = l.count + 1, at, cost
end

-- unwind removes n units from the newest entries.
local function unwind(l, n)
  while n > 0 and l.count > 0 do
    local nat, ncost = newest(l)
    local take = min(n, ncost)
    ncost, l.total, n, l.dirty = ncost - take, l.total - take, n - take, true
    if ncost == 0 then
      call('LSET', l.key, -2, '0') -- the entry becomes the total...
      call('RPOP', l.key)          -- ...and the old total goes
      l.count, l.nat = l.count - 1, nil
    else
      l.ncost = ncost
      call('LSET', l.key, -2, format('%d:%d', nat, ncost))
    end
  end
end

-- freedAt: the time of the entry whose departure frees need units, or of the
-- newest if need is more than the log holds; 0 if the log is empty.
local function freedAt(l, need)
  local freed, i = 0, 0
  while i < l.count do
    local chunk = call('LRANGE', l.key, i, min(l.count, i + 64) - 1)
    for j = 1, #chunk do
      local at, cost = parse(chunk[j])
      freed = freed + cost
      if freed >= need then
        return at
      end
    end
    i = i + #chunk
  end
  if l.count > 0 then
    return (newest(l))
  end
  return 0
end

local function resetAt(l, period)
  if l.count == 0 then
    return 0
  end
  return (newest(l)) + period
end

local function takeLog(p, l, cost)
  trim(l, now - p.period)
  local allowed = cost <= p.quota and l.total + cost <= p.quota
  local retry = 0
  if allowed then
    push(l, now, cost, p.quota)
  elseif cost <= p.quota then
    retry = freedAt(l, l.total + cost - p.quota) + p.period - now
  end
  return decision(p, allowed, cost, p.quota - l.total, resetAt(l, p.period) - now, retry)
end

local function statusLog(p, l)
  trim(l, now - p.period)
  local allowed = l.total <= p.quota
  local retry = 0
  if not allowed then
    retry = freedAt(l, l.total - p.quota) + p.period - now
  end
  return decision(p, allowed, 0, p.quota - l.total, resetAt(l, p.period) - now, retry)
end

local function adjustLog(p, l, delta)
  trim(l, now - p.period)
  if delta > 0 then
    push(l, now, delta, p.quota)
  else
    unwind(l, -delta)
  end
end

local function flushLog(l, period)
  if not l.dirty then
    return
  end
  if l.count == 0 then
    call('DEL', l.key)
  else
    call('LSET', l.key, -1, format('%d', l.total))
    call('PEXPIRE', l.key, ttl(resetAt(l, period) - now))
  end
end

---------------------------------------------------------------------------
-- The operations.

-- status is the standing of p's key without a request.
local function status(p)
  if p.alg == SLIDING_LOG then
    return statusLog(p, loadLog(p.key))
  end
  return (steps[p.alg](p, state(p).s, 0))
end

local out = {}
local n = #layers

local function put(i, d)
  local b = (i - 1) * 4
  out[b + 1], out[b + 2], out[b + 3], out[b + 4] = d[1], d[2], d[3], d[4]
end

if op == 't' then
  -- core's TakeAll, exactly as store/memory does it: take in order until a
  -- layer denies; then decide the rest without taking, undo the takes in
  -- reverse, and report each layer that passed by its standing.
  local ds, undo, denied = {}, {}, false
  for i = 1, n do
    local p = layers[i]
    local d
    if p.alg == SLIDING_LOG then
      local l = loadLog(p.key)
      d = takeLog(p, l, p.cost)
      if d[1] == 1 then
        if denied then
          adjustLog(p, l, -p.cost) -- only a peek
        else
          undo[#undo + 1] = {p = p}
        end
      end
    else
      local e = state(p)
      local s
      d, s = steps[p.alg](p, e.s, p.cost)
      if s and not denied then
        undo[#undo + 1] = {p = p, e = e, prev = e.s}
        e.s = s
      end
    end
    if d[1] ~= 1 then
      denied = true
    end
    ds[i] = d
  end
  if denied then
    for j = #undo, 1, -1 do
      local u = undo[j]
      if u.e then
        u.e.s = u.prev
      else
        adjustLog(u.p, loadLog(u.p.key), -u.p.cost)
      end
    end
    for i = 1, n do
      if ds[i][1] == 1 then
        ds[i] = status(layers[i])
        ds[i][1] = 1
      end
    end
  end
  for i = 1, n do
    put(i, ds[i])
  end
elseif op == 'a' then
  for i = 1, n do
    local p = layers[i]
    if p.alg == SLIDING_LOG then
      adjustLog(p, loadLog(p.key), p.cost)
    else
      local e = state(p)
      e.s = adjust(p, e.s, p.cost)
    end
  end
  for i = 1, n do
    put(i, status(layers[i]))
  end
else
  return redis.error_reply('sluice: unknown operation ' .. tostring(op))
end

for key, e in pairs(states) do
  flushState(key, e)
end
for i = 1, n do
  local p = layers[i]
  local l = logs[p.key]
  if l then
    flushLog(l, p.period)
    logs[p.key] = nil
  end
end
return out
