-- Sliding log, one rate (see sliding_log.lua: the same layout, growth,
-- expiry and arithmetic), straight-line: KEYS[1] is the ring buffer, a
-- 28-byte header (newest time: 8 bytes, head: 4, entries: 4, total: 6,
-- units: 6) then `cap` entries of v + w bytes, a time in us modulo
-- 256^v > W and the running total of units up to it modulo 256^w > L,
-- oldest at `head`. Written apart from the general script because its per-rate
-- tables and functions cost Redis more than the rule's decision itself
-- (BENCHMARKS.md).
local HEADER, SMALL = 28, 1536
local HEAD_FORMAT = '<I8<I4<I4<I6<I6'
local POW = {256, 65536, 16777216, 4294967296, 1099511627776, 281474976710656}
local WIDTH = {'<I1', '<I2', '<I3', '<I4', '<I5', '<I6'}
local v, w = 1, 1
while POW[v] <= W do v = v + 1 end
while POW[w] <= L do w = w + 1 end
local E, P, M = v + w, POW[v], POW[w]
local ENTRY, TOTALF = WIDTH[v] .. WIDTH[w], WIDTH[w]
local key = KEYS[1]
local raw = redis.call('GETRANGE', key, 0, HEADER + SMALL - 1)
local newest, head, count, total, units, cap, low = 0, 0, 0, 0, 0, 0, 0
if #raw >= HEADER then
  newest, head, count, total, units = struct.unpack(HEAD_FORMAT, raw)
  local len = #raw
  if len == HEADER + SMALL then len = redis.call('STRLEN', key) end
  if len ~= #raw then raw = nil end
  cap = (len - HEADER) / E
  local _, l = divmod(newest, P)
  low = l
end
-- newest modulo 256^v (low): an entry e is newest - ((low - e) mod 256^v).
-- The j-th oldest entry (0-based), its time and running total: from the
-- copy read whole when the buffer is small, else one GETRANGE.
local function entry(j)
  local pos = head + j
  if pos >= cap then pos = pos - cap end
  local at = HEADER + pos * E
  local time, tot
  if raw then
    time, tot = struct.unpack(ENTRY, raw, at + 1)
  else
    time, tot = struct.unpack(ENTRY, redis.call('GETRANGE', key, at, at + E - 1))
  end
  local back = low - time
  if back < 0 then back = back + P end
  return newest - back, tot
end
-- Expiry: drop the entries at or before t - W, galloping from the oldest
-- (one read when none expires); entry lo is at or before the horizon, hi
-- after it.
local t = now
local oldest = 0
if count > 0 then
  if newest > now then t = newest end
  local horizon = t - W
  if horizon >= 0 and newest <= horizon then
    count, units = 0, 0
  else
    local first, first_total = entry(0)
    if first > horizon then
      oldest = first
    else
      local lo, lo_total, hi, hi_time = 0, first_total, 1, nil
      while hi < count - 1 do
        local at, tot = entry(hi)
        if at > horizon then hi_time = at break end
        lo, lo_total, hi = hi, tot, math.min(2 * hi + 1, count - 1)
      end
      if not hi_time then hi_time = newest end
      while hi - lo > 1 do
        local mid = math.floor((lo + hi) / 2)
        local at, tot = entry(mid)
        if at > horizon then hi, hi_time = mid, at else lo, lo_total = mid, tot end
      end
      head = head + hi
      if head >= cap then head = head - cap end
      count = count - hi
      units = total - lo_total
      if units < 0 then units = units + M end
      oldest = hi_time
    end
  end
end
local allowed, never, retry = 1, 0, 0
if cost > L then
  allowed, never = 0, 1
elseif cost > 0 and units + cost > L then
  allowed = 0
  -- The entry holding the k-th oldest unit: at most the k-th entry, at
  -- least the (count - units + k)-th, as every entry holds a unit or more.
  local k = units + cost - L
  local lo, hi = count - 1 - (units - k), k - 1
  if lo < 0 then lo = 0 end
  if hi > count - 1 then hi = count - 1 end
  local base = total - units
  if base < 0 then base = base + M end
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local _, tot = entry(mid)
    local upto = tot - base
    if upto < 0 then upto = upto + M end
    if upto >= k then hi = mid else lo = mid + 1 end
  end
  retry = entry(lo) + W - t
  if retry < 0 then retry = 0 end
end
-- Rewrites the key with room for `size` entries, the live ones first.
local function rebuild(size)
  local live = ''
  if count > 0 then
    local first = math.min(count, cap - head)
    local at = HEADER + head * E
    live = redis.call('GETRANGE', key, at, at + first * E - 1)
    if first < count then
      live = live .. redis.call('GETRANGE', key, HEADER, HEADER + (count - first) * E - 1)
    end
  end
  redis.call('SET', key, string.rep('\0', HEADER) .. live .. string.rep('\0', (size - count) * E))
  head, cap, raw = 0, size, nil
end
if allowed == 1 and cost > 0 and record then
  total = total + cost
  if total >= M then total = total - M end
  if count > 0 and newest == t then
    -- Joins the newest entry: they expire together.
    local pos = head + count - 1
    if pos >= cap then pos = pos - cap end
    redis.call('SETRANGE', key, HEADER + pos * E + v, struct.pack(TOTALF, total))
  else
    if count == 0 then oldest = t end
    local need = count + 1
    if need > cap then rebuild(math.max(math.min(math.max(2 * cap, 4), L), need)) end
    local pos = head + count
    if pos >= cap then pos = pos - cap end
    local _, l = divmod(t, P)
    redis.call('SETRANGE', key, HEADER + pos * E, struct.pack(ENTRY, l, total))
    count = need
  end
  units, newest = units + cost, t
  if cap > 16 and count < cap / 4 then rebuild(count * 2) end
  redis.call('SETRANGE', key, 0, struct.pack(HEAD_FORMAT, t, head, count, total, units))
  redis.call('PEXPIRE', key, ttl_ms(W, 0))
end
local reset, refill = 0, 0
if units > 0 then
  reset = newest + W - t
  if reset < 0 then reset = 0 end
  -- One more unit of room when the oldest entry expires.
  refill = oldest + W - t
  if refill < 0 then refill = 0 end
end
return struct.pack(ANSWER, t, allowed, L - units, never, retry, 0, reset, 0, refill, 0, 0, 0)
