-- Sliding log, one rate (see sliding_log.lua: the same layout, growth,
-- expiry and arithmetic), straight-line: KEYS[1] is the ring buffer, a
-- 16-byte header (newest time: 8 bytes, head: 4, count: 4) then `cap`
-- entries of 6 bytes, times in us modulo 2^48, oldest at `head`.
local HEADER, WIDTH, WRAP, SMALL = 16, 6, 281474976710656, 256
local key = KEYS[1]
local raw = redis.call('GETRANGE', key, 0, HEADER + SMALL * WIDTH - 1)
local newest, head, count, cap = 0, 0, 0, 0
if #raw >= HEADER then
  newest, head, count = struct.unpack('<I8<I4<I4', raw)
  if #raw < HEADER + SMALL * WIDTH then
    cap = (#raw - HEADER) / WIDTH
  else
    cap = (redis.call('STRLEN', key) - HEADER) / WIDTH
    if cap ~= SMALL then raw = nil end
  end
end
-- newest modulo 2^48: an entry e is newest - ((newest - e) mod 2^48).
local _, newest_low = divmod(newest, WRAP)

-- The j-th oldest entry (0-based): from the copy read whole when the buffer
-- is small, else one GETRANGE.
local function entry(j)
  local pos = head + j
  if pos >= cap then pos = pos - cap end
  local at = HEADER + pos * WIDTH
  local stored
  if raw then
    stored = struct.unpack('<I6', raw, at + 1)
  else
    stored = struct.unpack('<I6', redis.call('GETRANGE', key, at, at + WIDTH - 1))
  end
  local back = newest_low - stored
  if back < 0 then back = back + WRAP end
  return newest - back
end

-- Expiry: drop the entries at or before t - W, galloping from the oldest
-- (one read when none expires).
local t = now
local oldest
if count > 0 then
  if newest > t then t = newest end
  local horizon = t - W
  if horizon >= 0 then
    if newest <= horizon then
      count = 0
    else
      oldest = entry(0)
      if oldest <= horizon then
        oldest = nil
        local lo, hi = 0, 1
        while hi < count - 1 and entry(hi) <= horizon do
          lo, hi = hi, math.min(2 * hi + 1, count - 1)
        end
        lo = lo + 1
        while lo < hi do
          local mid = math.floor((lo + hi) / 2)
          if entry(mid) > horizon then hi = mid else lo = mid + 1 end
        end
        head = head + lo
        if head >= cap then head = head - cap end
        count = count - lo
      end
    end
  end
end
if count > 0 and not oldest then oldest = entry(0) end

local allowed, never, retry = 1, 0, 0
if cost > L then
  allowed, never = 0, 1
elseif cost > 0 and count + cost > L then
  allowed = 0
  retry = entry(count + cost - L - 1) + W - t
  if retry < 0 then retry = 0 end
end

-- Rewrites the key with room for `size` entries, the live ones first.
local function rebuild(size)
  local live = ''
  if count > 0 then
    local first = math.min(count, cap - head)
    local at = HEADER + head * WIDTH
    live = redis.call('GETRANGE', key, at, at + first * WIDTH - 1)
    if first < count then
      live = live .. redis.call('GETRANGE', key, HEADER, HEADER + (count - first) * WIDTH - 1)
    end
  end
  redis.call('SET', key, string.rep('\0', HEADER) .. live .. string.rep('\0', (size - count) * WIDTH))
  head, cap, raw = 0, size, nil
end

if allowed == 1 and cost > 0 and record then
  local need = count + cost
  if need > cap then
    local size = math.max(need, 2 * cap, 4)
    rebuild(math.max(math.min(size, L), need))
  end
  local _, low = divmod(t, WRAP)
  local one = struct.pack('<I6', low)
  local pos = head + count
  if pos >= cap then pos = pos - cap end
  local first = math.min(cost, cap - pos)
  redis.call('SETRANGE', key, HEADER + pos * WIDTH, string.rep(one, first))
  if first < cost then redis.call('SETRANGE', key, HEADER, string.rep(one, cost - first)) end
  if count == 0 then oldest = t end
  count, newest = need, t
  if cap > 16 and count < cap / 4 then rebuild(count * 2) end
  redis.call('SETRANGE', key, 0, struct.pack('<I8<I4<I4', newest, head, count))
  redis.call('PEXPIRE', key, ttl_ms(W, 0))
end

local reset, refill = 0, 0
if count > 0 then
  reset = newest + W - t
  if reset < 0 then reset = 0 end
  -- One more unit of room when the oldest entry expires.
  refill = oldest + W - t
  if refill < 0 then refill = 0 end
end
return struct.pack(ANSWER, now, allowed, L - count, never, retry, 0, reset, 0, refill, 0, 0, 0)
