
---------------------------------------------------------------------------
-- States and holds: strings of integers.

local function decode(raw)
  local v = tonumber(raw)
  if v then
    return {v}
  end
  local i = find(raw, ':', 1, true)
  local j = find(raw, ':', i + 1, true)
  if not j then
    return {tonumber(sub(raw, 1, i - 1)), tonumber(sub(raw, i + 1))}
  end
  return {tonumber(sub(raw, 1, i - 1)), tonumber(sub(raw, i + 1, j - 1)), tonumber(sub(raw, j + 1))}
end

local function encode(s)
  if not s then
    return false
  elseif #s == 1 then
    return format('%d', s[1])
  elseif #s == 2 then
    return format('%d:%d', s[1], s[2])
  end
  return format('%d:%d:%d', s[1], s[2], s[3])
end

-- write is the step script's: the state back in its key, expiring when
-- full, or the key deleted if it is full already.
local function write(key, p, s, raw)
  local v = encode(s)
  if v == raw then
    return
  end
  local full = 0
  if s and FULL and FULL[p.alg] then
    full = FULL[p.alg](p, s)
  elseif s then
    full = STEP[p.alg](p, s, 0)[3]
  end
  if full > 0 then
    call('SET', key, v, 'PX', ttl(full))
  elseif raw then
    call('DEL', key)
  end
end

local op, id, life = ARGV[3], ARGV[4], tonumber(ARGV[5])
local layers = {}
do
  local a, k = 6, 1
  while a <= #ARGV do
    local alg, capacity, span = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
    local p = {field = id .. '\0' .. ARGV[a], alg = alg, burst = capacity, most = capacity,
      key = KEYS[k], holds = KEYS[k + 1], exps = KEYS[k + 2], cost = tonumber(ARGV[a + 4])}
    if alg <= LEAKY_BUCKET then
      p.interval = span
    else
      p.quota, p.period = capacity, span
    end
    layers[#layers + 1] = p
    a, k = a + 5, k + 3
  end
end

local states = {}
local function stateOf(p)
  local e = states[p.key]
  if not e then
    local raw = call('GET', p.key)
    e = {p = p, raw = raw, s = raw and decode(raw)}
    states[p.key] = e
  end
  return e
end

local function status(p)
  return (STEP[p.alg](p, stateOf(p).s, 0))
end

local function adjust(p, delta)
  local e = stateOf(p)
  e.s = ADJUST[p.alg](p, e.s, delta)
end

local touched = {} -- the hold keys written: expiries -> holds
local function hold(p, h, exp)
  call('HSET', p.holds, p.field, format('%d:%d:%d', h[1], h[2], h[3]))
  call('ZADD', p.exps, format('%d', exp), p.field)
  touched[p.exps] = p.holds
end
local function unhold(p)
  call('HDEL', p.holds, p.field)
  call('ZREM', p.exps, p.field)
  touched[p.exps] = p.holds
end

-- reclaim gives back what the expired holds of p's key hold beyond their
-- usage (Hold.Reclaim), the oldest first, at most MAX_RECLAIMS of them.
local function reclaim(p)
  local fs = call('ZRANGEBYSCORE', p.exps, '-inf', format('%d', now), 'LIMIT', 0, MAX_RECLAIMS)
  for _, f in ipairs(fs) do
    local v = call('HGET', p.holds, f)
    if v then
      local h = decode(v)
      local back = min(h[2] - h[3], 0)
      if back ~= 0 then
        adjust(p, back)
      end
      call('HDEL', p.holds, f)
    end
    call('ZREM', p.exps, f)
    touched[p.exps] = p.holds
  end
end

local out = {1}
local function put(d)
  local o = #out
  out[o + 1], out[o + 2], out[o + 3], out[o + 4] = d[1], d[2], d[3], d[4]
end

local ds = {}
if op == 'r' then
  for _, p in ipairs(layers) do
    reclaim(p)
  end
  for _, p in ipairs(layers) do
    if call('HEXISTS', p.holds, p.field) == 1 then
      out[1] = -1
    end
  end
  if out[1] == 1 then
    -- core's TakeAll, as the step script decides it.
    local undo, denied = {}, false
    for i, p in ipairs(layers) do
      local e = stateOf(p)
      local d, s = STEP[p.alg](p, e.s, p.cost)
      if s and not denied then
        undo[#undo + 1] = {e = e, prev = e.s}
        e.s = s
      end
      if d[1] ~= 1 then
        denied = true
      end
      ds[i] = d
    end
    if denied then
      for j = #undo, 1, -1 do
        undo[j].e.s = undo[j].prev
      end
      for i, p in ipairs(layers) do
        if ds[i][1] == 1 then
          ds[i] = status(p)
        end
      end
    else
      for _, p in ipairs(layers) do
        hold(p, {p.cost, 0, p.cost}, now + life)
      end
    end
  end
else
  out[1] = 0
  for i, p in ipairs(layers) do
    reclaim(p)
    local v = call('HGET', p.holds, p.field)
    if not v then
      ds[i] = status(p)
    else
      out[1] = 1
      local h = decode(v) -- estimate, used, held
      h[2] = max(h[2], p.cost)
      if op == 'f' then
        local delta = h[2] - h[3]
        if delta ~= 0 then
          adjust(p, delta)
        end
        ds[i] = status(p)
        unhold(p)
      else
        local need = min(max(h[2] + h[1] - h[3], 0), MAX_COST)
        if need > 0 then
          local e = stateOf(p)
          local d, s = STEP[p.alg](p, e.s, need)
          if s then
            e.s = s
            h[3] = h[3] + need
          else
            local over = max(h[2] - h[3], 0)
            if over > 0 then
              h[3] = h[3] + over
              adjust(p, over)
            end
          end
          ds[i] = d
        else
          ds[i] = status(p)
        end
        hold(p, h, now + life)
      end
    end
  end
end

if out[1] == -1 then
  for i, p in ipairs(layers) do
    ds[i] = status(p)
  end
end
for key, e in pairs(states) do
  write(key, e.p, e.s, e.raw)
end
-- The hold keys live as long as their latest hold, and as long again, for
-- the next call on the key to reclaim what they hold.
for exps, holds in pairs(touched) do
  local last = call('ZRANGE', exps, -1, -1, 'WITHSCORES')
  if #last == 0 then
    call('DEL', exps, holds)
  else
    local ms = ttl(2 * max(tonumber(last[2]) - now, 1))
    call('PEXPIRE', exps, ms)
    call('PEXPIRE', holds, ms)
  end
end
for i = 1, #layers do
  put(ds[i])
end
return out
