
---------------------------------------------------------------------------
-- The sliding log, worked on in place: a list of entries plus their total.
-- The list keeps core's insertion order exactly, so trimming stops where
-- core's does even if a clock stepped back. The total and the newest entry
-- are cached in the table l; the total is written back at the end.

local function parse(entry)
  local i = find(entry, ':', 1, true)
  return tonumber(sub(entry, 1, i - 1)), tonumber(sub(entry, i + 1))
end

local logs = {} -- by key, for the whole script

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
  cost = min(cost, MAX_WINDOW_COUNT - l.total)
  if cost <= 0 then
    return -- the count is at its bound (core.MaxWindowCount)
  end
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

-- flushLog writes the total back and sets the expiry, and forgets l: the
-- next operation on the key reads it afresh.
local function flushLog(l, period)
  logs[l.key] = nil
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

LOG = {load = loadLog, take = takeLog, status = statusLog, adjust = adjustLog, flush = flushLog, all = logs}
