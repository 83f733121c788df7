-- Sliding log, exact: per rate, one string key (KEYS[i]) holding a ring
-- buffer of admitted times, one entry per unit of cost.
-- Layout: a 16-byte header (newest time: 8 bytes, head: 4, count: 4, all
-- little-endian) then `cap` entries of 6 bytes: a time in us modulo 2^48.
-- Every entry lies in (newest - W, newest] and W < 2^48 us, so an entry is
-- newest - ((newest - entry) mod 2^48), exactly. Entries are in time order:
-- expiry is a galloping search (O(log k) reads for k expired), the k-th oldest one read, a
-- record one or two SETRANGEs: never O(L) per call. The buffer grows by
-- doubling up to L entries and shrinks when a quarter full.
-- A buffer of at most SMALL entries is read whole by the first GETRANGE (a
-- bounded 1.5 KB), and its reads are then string.byte, not Redis calls:
-- each redis.call costs about as much as the rest of a decision.
local A = {}
local HEADER = 16
local WIDTH = 6
local WRAP = 281474976710656 -- 2^48
local SMALL = 256

-- Little-endian unsigned integers of `width` bytes, by Redis's struct
-- library (exact for integers below 2^53; a loop of divmods in Lua costs
-- several times as much).
local function enc(x, width)
  return struct.pack('<I' .. width, x)
end

local function dec(raw, from, width)
  return (struct.unpack('<I' .. width, raw, from))
end

function A.load(P, n)
  local states = {}
  for i = 1, n do
    local raw = redis.call('GETRANGE', KEYS[i], 0, HEADER + SMALL * WIDTH - 1)
    local s = {newest = 0, head = 0, count = 0, cap = 0, changed = false}
    if #raw >= HEADER then
      s.newest, s.head, s.count = dec(raw, 1, 8), dec(raw, 9, 4), dec(raw, 13, 4)
      if #raw < HEADER + SMALL * WIDTH then
        -- The whole buffer (it may have exactly SMALL entries: then STRLEN).
        s.cap, s.raw = (#raw - HEADER) / WIDTH, raw
      else
        s.cap = (redis.call('STRLEN', KEYS[i]) - HEADER) / WIDTH
        if s.cap == SMALL then s.raw = raw end
      end
    end
    states[i] = s
  end
  return states
end

-- The j-th oldest entry (0-based).
local function entry(s, key, j)
  local _, pos = divmod(s.head + j, s.cap)
  local at = HEADER + pos * WIDTH
  local stored
  if s.raw then
    stored = dec(s.raw, at + 1, WIDTH)
  else
    stored = dec(redis.call('GETRANGE', key, at, at + WIDTH - 1), 1, WIDTH)
  end
  local _, back = divmod(s.newest - stored, WRAP)
  return s.newest - back
end

function A.capacity(p) return p.L end

function A.advance(p, s, now, i)
  if s.count == 0 then return now end
  local t = now
  if s.newest > t then t = s.newest end
  local horizon = t - p.W
  if horizon < 0 then return t end
  if s.newest <= horizon then
    s.count = 0
    return t
  end
  -- The first entry after the horizon (the newest one is): usually none or
  -- a few expire, so gallop from the oldest (1, 2, 4... entries: O(log k)
  -- reads for k expired, one when none is) before the binary search.
  local key = KEYS[i]
  if entry(s, key, 0) > horizon then return t end
  local lo, hi = 0, 1
  while hi < s.count - 1 and entry(s, key, hi) <= horizon do
    lo, hi = hi, math.min(2 * hi + 1, s.count - 1)
  end
  lo = lo + 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if entry(s, key, mid) > horizon then hi = mid else lo = mid + 1 end
  end
  local _, head = divmod(s.head + lo, s.cap)
  s.head, s.count = head, s.count - lo
  return t
end

function A.check(p, s, t, cost, i)
  if cost > p.L then return NEVER end
  if s.count + cost <= p.L then return nil end
  local k = s.count + cost - p.L
  return us(entry(s, KEYS[i], k - 1) + p.W - t)
end

-- Rewrites the key with room for `cap` entries, the live ones first.
local function rebuild(s, key, cap)
  local live = ''
  if s.count > 0 then
    local first = math.min(s.count, s.cap - s.head)
    local at = HEADER + s.head * WIDTH
    live = redis.call('GETRANGE', key, at, at + first * WIDTH - 1)
    if first < s.count then
      live = live .. redis.call('GETRANGE', key, HEADER, HEADER + (s.count - first) * WIDTH - 1)
    end
  end
  local pad = string.rep('\0', (cap - s.count) * WIDTH)
  redis.call('SET', key, string.rep('\0', HEADER) .. live .. pad)
  s.head, s.cap, s.raw = 0, cap, nil
end

function A.record(p, s, t, cost, i)
  local key = KEYS[i]
  local need = s.count + cost
  if need > s.cap then
    local cap = math.max(need, 2 * s.cap, 4)
    cap = math.max(math.min(cap, p.L), need)
    rebuild(s, key, cap)
  end
  local one = enc(select(2, divmod(t, WRAP)), WIDTH)
  local _, pos = divmod(s.head + s.count, s.cap)
  local first = math.min(cost, s.cap - pos)
  redis.call('SETRANGE', key, HEADER + pos * WIDTH, string.rep(one, first))
  if first < cost then redis.call('SETRANGE', key, HEADER, string.rep(one, cost - first)) end
  -- The copy read at load no longer holds what is in Redis.
  s.count, s.newest, s.changed, s.raw = need, t, true, nil
end

function A.delay() return ZERO end
function A.remaining(p, s) return p.L - s.count end

function A.reset(p, s, t)
  if s.count == 0 then return ZERO end
  return us(s.newest + p.W - t)
end

function A.save(P, S, resets, floor)
  for i, s in ipairs(S) do
    if s.changed then
      local key = KEYS[i]
      if s.cap > 16 and s.count < s.cap / 4 then rebuild(s, key, s.count * 2) end
      redis.call('SETRANGE', key, 0, enc(s.newest, 8) .. enc(s.head, 4) .. enc(s.count, 4))
      redis.call('PEXPIRE', key, ttl_ms(resets[i], floor))
    end
  end
end
