-- Sliding log, exact, for a rule of any number of rates: per rate, one
-- string key (KEYS[i]) holding a ring buffer of the admitted requests.
-- Rules of one rate run sliding_log_1.lua instead: keep the two in step.
-- This file is the ring's functions: sliding_log_decide.lua decides with
-- them, sliding_log_settle.lua settles.
-- ARGV and answer as driver.lua's: now (us, or '' for Redis TIME), cost,
-- record (1; 2 records a denial too, which a log does not keep) or peek
-- (0), the ttl floor in ms, n, then n x (L, W in us, burst); the answer
-- is now, then per rate allowed, remaining, never, and (us, adj) pairs for
-- retry, reset, refill and delay, as packed doubles.
--
-- Layout of a key: a 28-byte header (newest time: 8 bytes, head: 4,
-- entries: 4, total: 6, units: 6; little-endian) then `cap` entries of
-- v + w bytes: a time in us modulo 256^v, then the running total of units
-- admitted up to and including that entry, modulo 256^w, with v and w the
-- fewest bytes for which 256^v > W and 256^w > L. `total` is the newest
-- entry's running total and `units` the live units.
-- Why this layout:
-- - An entry per admitted request, not per unit: its running total carries
--   its cost, so a request of any cost is one entry and a few writes, and
--   the unit a denied request waits for (the k-th oldest live one) is found
--   by a binary search on the totals, which never looks outside the entries
--   that can hold it (so none when every cost is one).
-- - Live totals differ by at most L, so modulo 256^w they still order
--   exactly; and every live entry lies in (newest - W, newest], so an
--   entry is newest - ((newest - entry) mod 256^v), exactly. The widths
--   follow the rate: an entry is as small as the rate allows, and a rule
--   whose costs are all one pays a byte or two for carrying costs.
-- - A request at the newest entry's time joins that entry: they expire
--   together.
-- Expiry gallops from the oldest entry (O(log k) reads for k expired, one
-- when none is), then binary-searches. The buffer grows by doubling up to
-- L entries and shrinks when a quarter full. A small buffer is read whole
-- by the first GETRANGE and its reads are then string unpacks, not Redis
-- calls: each redis.call costs about as much as the rest of a decision.
local HEADER, SMALL = 28, 1536
local HEAD_FORMAT = '<I8<I4<I4<I6<I6'
-- 256^w for w = 1..6, the widths a time or a running total can take
-- (windows and limits in Redis are below 2^48), and their formats.
local POW = {256, 65536, 16777216, 4294967296, 1099511627776, 281474976710656}
local WIDTH = {'<I1', '<I2', '<I3', '<I4', '<I5', '<I6'}

local cost = tonumber(ARGV[2])
local record = ARGV[3] ~= '0'
local floor = tonumber(ARGV[4])
local n = tonumber(ARGV[5])

-- Rate i's key, read: its header, and the whole buffer when it is small.
local function load(i)
  local b = 5 + (i - 1) * 3
  local L, W = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2])
  local v, w = 1, 1
  while POW[v] <= W do v = v + 1 end
  while POW[w] <= L do w = w + 1 end
  -- Every field named here, so that the table is sized once.
  local s = {
    key = KEYS[i], L = L, W = W, v = v, E = v + w, P = POW[v], M = POW[w],
    fmt = WIDTH[v] .. WIDTH[w], total_fmt = WIDTH[w],
    newest = 0, head = 0, count = 0, total = 0, units = 0, cap = 0,
    raw = false, low = 0, t = 0, oldest = 0,
  }
  local raw = redis.call('GETRANGE', s.key, 0, HEADER + SMALL - 1)
  if #raw >= HEADER then
    s.newest, s.head, s.count, s.total, s.units = struct.unpack(HEAD_FORMAT, raw)
    local len = #raw
    if len == HEADER + SMALL then len = redis.call('STRLEN', s.key) end
    if len == #raw then s.raw = raw end
    s.cap = (len - HEADER) / s.E
    local _, low = divmod(s.newest, s.P)
    s.low = low
  end
  return s
end

-- The time of an entry written as time modulo 256^v: every live entry
-- lies in (newest - W, newest].
local function unwrap(s, time)
  local back = s.low - time
  if back < 0 then back = back + s.P end
  return s.newest - back
end

-- The j-th oldest entry (0-based): its time and running total.
local function entry(s, j)
  local pos = s.head + j
  if pos >= s.cap then pos = pos - s.cap end
  local at = HEADER + pos * s.E
  local time, total
  if s.raw then
    time, total = struct.unpack(s.fmt, s.raw, at + 1)
  else
    time, total = struct.unpack(s.fmt, redis.call('GETRANGE', s.key, at, at + s.E - 1))
  end
  return unwrap(s, time), total
end

-- Expiry at now: drops the entries at or before t - W, where t is now or
-- the newest entry's time if later (s.t), and reads the oldest entry left.
local function advance(s)
  s.t = now
  if s.count == 0 then return end
  if s.newest > now then s.t = s.newest end
  local horizon = s.t - s.W
  if horizon >= 0 and s.newest <= horizon then
    s.count, s.units = 0, 0
    return
  end
  local first, first_total = entry(s, 0)
  if first > horizon then
    s.oldest = first
    return
  end
  -- Entry lo is at or before the horizon, entry hi after it (the newest is).
  local lo, lo_total, hi, hi_time = 0, first_total, 1, nil
  while hi < s.count - 1 do
    local at, total = entry(s, hi)
    if at > horizon then
      hi_time = at
      break
    end
    lo, lo_total, hi = hi, total, math.min(2 * hi + 1, s.count - 1)
  end
  -- Not read: hi is the newest entry.
  if not hi_time then hi_time = s.newest end
  while hi - lo > 1 do
    local mid = math.floor((lo + hi) / 2)
    local at, total = entry(s, mid)
    if at > horizon then hi, hi_time = mid, at else lo, lo_total = mid, total end
  end
  s.head = s.head + hi
  if s.head >= s.cap then s.head = s.head - s.cap end
  s.count = s.count - hi
  local units = s.total - lo_total
  if units < 0 then units = units + s.M end
  s.units, s.oldest = units, hi_time
end

-- The time of the entry holding the k-th oldest live unit (1 <= k <=
-- units). Every entry holds at least one unit, so it is at most the k-th
-- entry and at least the (count - units + k)-th.
local function unit_time(s, k)
  local lo, hi = s.count - 1 - (s.units - k), k - 1
  if lo < 0 then lo = 0 end
  if hi > s.count - 1 then hi = s.count - 1 end
  local base = s.total - s.units
  if base < 0 then base = base + s.M end
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local _, total = entry(s, mid)
    local upto = total - base
    if upto < 0 then upto = upto + s.M end
    if upto >= k then hi = mid else lo = mid + 1 end
  end
  return (entry(s, lo))
end

-- The live entries' bytes, oldest first (the ring unrolled).
local function live_bytes(s)
  if s.count == 0 then return '' end
  local first = math.min(s.count, s.cap - s.head)
  local at = HEADER + s.head * s.E
  local live = redis.call('GETRANGE', s.key, at, at + first * s.E - 1)
  if first < s.count then
    live = live .. redis.call('GETRANGE', s.key, HEADER, HEADER + (s.count - first) * s.E - 1)
  end
  return live
end

-- Rewrites the key with room for `size` entries, the live ones first.
local function rebuild(s, size)
  local live = live_bytes(s)
  redis.call('SET', s.key, string.rep('\0', HEADER) .. live .. string.rep('\0', (size - s.count) * s.E))
  s.head, s.cap, s.raw = 0, size, false
end

-- The key's expiry: back to full W after its newest entry (at s.t or
-- before), rounded up, one ms to spare.
local function expire(s)
  local ms, r = divmod(s.W, 1000)
  if r > 0 then ms = ms + 1 end
  ms = ms + 1
  if ms < floor then ms = floor end
  redis.call('PEXPIRE', s.key, ms)
end

-- Records the admitted cost at s.t, and the key's expiry.
local function write(s)
  local t = s.t
  local total = s.total + cost
  if total >= s.M then total = total - s.M end
  if s.count > 0 and s.newest == t then
    local pos = s.head + s.count - 1
    if pos >= s.cap then pos = pos - s.cap end
    redis.call('SETRANGE', s.key, HEADER + pos * s.E + s.v, struct.pack(s.total_fmt, total))
  else
    if s.count == 0 then s.oldest = t end
    local need = s.count + 1
    if need > s.cap then rebuild(s, math.max(math.min(math.max(2 * s.cap, 4), s.L), need)) end
    local pos = s.head + s.count
    if pos >= s.cap then pos = pos - s.cap end
    local _, low = divmod(t, s.P)
    redis.call('SETRANGE', s.key, HEADER + pos * s.E, struct.pack(s.fmt, low, total))
    s.count = need
  end
  s.total, s.units, s.newest = total, s.units + cost, t
  if s.cap > 16 and s.count < s.cap / 4 then rebuild(s, s.count * 2) end
  redis.call('SETRANGE', s.key, 0, struct.pack(HEAD_FORMAT, t, s.head, s.count, total, s.units))
  expire(s)
end

