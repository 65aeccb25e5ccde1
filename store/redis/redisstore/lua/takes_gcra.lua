-- sluice: a batch of lone Takes on GCRA keys (see takes_header.lua,
-- prepended), each decided as take_gcra.lua decides it.
--
-- held[key] is the key's stored TAT (0 if missing), ttl[key] the TTL in ms
-- of its newest write, if a Take changed it;
-- dirty the keys changed, in the order they first were.
local held, ttl, dirty = {}, {}, {}
for k = 1, #KEYS do
  local key = KEYS[k]
  local burst, interval, cost = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  if step == 4 then
    now = tonumber(ARGV[a + 3])
  end
  a = a + step
  local stored = held[key]
  if not stored then
    stored = tonumber(call('GET', key)) or 0
    held[key] = stored
  end

  -- core's gcra
  local tat = max(stored, now)
  local span = burst * interval
  local allowed = cost <= burst and tat + cost * interval - span <= now
  local retry = 0
  if allowed then
    tat = tat + cost * interval
    if not ttl[key] then
      dirty[#dirty + 1] = key
    end
    held[key], ttl[key] = tat, max(ceil((tat - now) / 1000), 1) + grace
  elseif cost <= burst then
    retry = tat + cost * interval - span - now
  end

  -- core's decision
  local o = 4 * k
  out[o - 3], out[o - 2], out[o - 1] = 1, max(floor((span - (tat - now)) / interval), 0), max(tat - now, 0)
  out[o] = 0
  if cost > burst then
    out[o - 3] = 2
  elseif not allowed then
    out[o - 3], out[o] = 0, max(retry, 1)
  end
end
for _, key in ipairs(dirty) do
  call('SET', key, format('%d', held[key]), 'PX', ttl[key])
end
return out
