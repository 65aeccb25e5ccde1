

---------------------------------------------------------------------------
-- The states of the algorithms other than the log: strings of integers.

local function decode(raw)
  local v = tonumber(raw) -- one integer: GCRA
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

-- write stores p's state s in key if it differs from raw, what the key
-- held, expiring when the state is back to full; or deletes the key if the
-- state already is.
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

---------------------------------------------------------------------------
-- The operations, in order.

local out, o = {}, 0

local function put(d)
  if d[5] and d[5] > 0 then
    out[o + 1], out[o + 2], out[o + 3], out[o + 4] = 3, d[2], d[3], d[5]
  else
    out[o + 1], out[o + 2], out[o + 3], out[o + 4] = d[1], d[2], d[3], d[4]
  end
  o = o + 4
end

-- take is core's Take on one layer, the common case, with nothing to cache
-- or undo.
local function take(p)
  if p.alg == SLIDING_LOG then
    local l = LOG.load(p.key)
    local d = LOG.take(p, l, p.cost)
    LOG.flush(l, p.period)
    return d
  end
  local raw = call('GET', p.key)
  local d, s = STEP[p.alg](p, raw and decode(raw), p.cost)
  if s then
    -- A take that allows changes the state and leaves it short of full;
    -- its reset-after is the new state's, at the same now.
    local full = d[3]
    if FULL and FULL[p.alg] then
      full = FULL[p.alg](p, s)
    end
    call('SET', p.key, encode(s), 'PX', ttl(full))
  end
  return d
end

-- lease takes as many units of p's key as are left, up to size but at least
-- p.cost, and reports the units granted as the fourth value (the retry-after
-- of a take, which an allowed decision does not have). When fewer than
-- p.cost are left, it decides as a take of p.cost would: a denial, or
-- Impossible.
local function lease(p, size)
  local l, raw, s, avail
  if p.alg == SLIDING_LOG then
    l = LOG.load(p.key)
    avail = LOG.status(p, l)[2]
  else
    raw = call('GET', p.key)
    s = raw and decode(raw)
    avail = STEP[p.alg](p, s, 0)[2]
  end
  if p.cost > p.burst or avail < p.cost then
    if l then
      local d = LOG.take(p, l, p.cost)
      LOG.flush(l, p.period)
      return d
    end
    return (STEP[p.alg](p, s, p.cost))
  end
  p.cost = min(max(size, p.cost), avail)
  local d = take(p)
  d[4] = p.cost
  return d
end

-- several decides an operation on several layers, or an adjustment. Its
-- states are read once, kept for the whole operation (so that layers
-- repeating a key see each other's takes) and written back once at its end.
local function several(op)
  local layers, n = op.layers, #op.layers
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

  -- status is the standing of p's key without a request (core's Status).
  local function status(p)
    if p.alg == SLIDING_LOG then
      return LOG.status(p, LOG.load(p.key))
    end
    return (STEP[p.alg](p, stateOf(p).s, 0))
  end

  local ds = {}
  if op.kind == 't' then
    -- core's TakeAll, exactly as store/memory does it: take in order until
    -- a layer denies; then decide the rest without taking, undo the takes
    -- in reverse, and report each layer that passed by its standing.
    local undo, denied = {}, false
    for i = 1, n do
      local p = layers[i]
      if i == op.peekFrom then
        denied = true
      end
      local d
      if p.alg == SLIDING_LOG then
        local l = LOG.load(p.key)
        d = LOG.take(p, l, p.cost)
        if d[1] == 1 then
          if denied then
            LOG.adjust(p, l, -p.cost) -- only a peek
          else
            undo[#undo + 1] = {p = p}
          end
        end
      else
        local e = stateOf(p)
        local s
        d, s = STEP[p.alg](p, e.s, p.cost)
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
          LOG.adjust(u.p, LOG.load(u.p.key), -u.p.cost)
        end
      end
      for i = 1, n do
        if ds[i][1] == 1 then
          ds[i] = status(layers[i])
          ds[i][1] = 1
        end
      end
    end
  else
    -- core's Adjust on each layer in order, then each one's standing.
    for i = 1, n do
      local p = layers[i]
      if p.alg == SLIDING_LOG then
        LOG.adjust(p, LOG.load(p.key), p.cost)
      elseif p.turn then
        local e = stateOf(p)
        e.s = TURN(p, e.s, -p.cost, p.turn)
      else
        local e = stateOf(p)
        e.s = ADJUST[p.alg](p, e.s, p.cost)
      end
    end
    for i = 1, n do
      ds[i] = status(layers[i])
    end
  end

  for key, e in pairs(states) do
    write(key, e.p, e.s, e.raw)
  end
  if LOG then
    for i = 1, n do
      local p = layers[i]
      local l = LOG.all[p.key]
      if l then
        LOG.flush(l, p.period)
      end
    end
  end
  for i = 1, n do
    put(ds[i])
  end
end

local ZERO = {0, 0, 0, 0}

for _, op in ipairs(ops) do
  if op.now then
    now = op.now
  end
  if op.kind == 'r' then
    for _, p in ipairs(op.layers) do
      call('DEL', p.key)
      put(ZERO)
    end
  elseif op.kind == 't' and #op.layers == 1 and op.peekFrom == 0 then
    put(take(op.layers[1]))
  elseif op.kind == 'l' then
    put(lease(op.layers[1], op.size))
  elseif op.kind == 't' or op.kind == 'a' then
    several(op)
  else
    return redis.error_reply('sluice: unknown operation ' .. tostring(op.kind))
  end
end
return out
