-- Shared by every limiter's script. Lua numbers are doubles: every value
-- here is an integer below 2^53 (the store refuses rules that could pass it),
-- and every division goes through divmod, exact for such integers.
-- Times are microseconds; durations are returned as {us, adj}, meaning
-- us * 1000 + adj nanoseconds, so that the waits the core rounds up to the
-- nanosecond (W / L is rarely whole) come out exactly the same.

local function ceil_div(a, b)
  local q, r = divmod(a, b)
  if r > 0 then q = q + 1 end
  return q
end

-- ceil(x * 1000 / d) nanoseconds, for x scaled by d (x in us * d).
local function ceil_ns(x, d)
  local q, r = divmod(x, d)
  return {q, ceil_div(r * 1000, d)}
end

local ZERO = {0, 0}
local NEVER = 'never'

local function us(x)
  if x < 0 then x = 0 end
  return {x, 0}
end

-- The key's time to live in ms for a state back to full after `reset`:
-- rounded up, one ms to spare, never below `floor` (explicit-time mode).
local function ttl_ms(reset, floor)
  local whole_us = reset[1]
  if reset[2] > 0 then whole_us = whole_us + 1 end
  local ms = ceil_div(whole_us, 1000) + 1
  if ms < floor then ms = floor end
  return ms
end

-- Counter limiters keep every rate's state in one string key (KEYS[1]):
-- `fields` numbers per rate, each a little-endian double (exact: integers
-- below 2^53).
local function load_counters(n, fields)
  local raw = redis.call('GET', KEYS[1])
  local per = #fields
  local states = {}
  if raw and #raw == 8 * n * per then
    local nums = {struct.unpack(string.rep('<d', n * per), raw)}
    for i = 1, n do
      local s = {}
      for j = 1, per do s[fields[j]] = nums[(i - 1) * per + j] end
      states[i] = s
    end
  else
    for i = 1, n do
      local s = {}
      for j = 1, per do s[fields[j]] = 0 end
      states[i] = s
    end
  end
  return states
end

local function save_counters(states, fields, resets, floor)
  local parts = {}
  local longest = ZERO
  for i = 1, #states do
    local s = states[i]
    for j = 1, #fields do parts[#parts + 1] = s[fields[j]] end
    local r = resets[i]
    if r[1] * 1000 + r[2] > longest[1] * 1000 + longest[2] then longest = r end
  end
  redis.call('SET', KEYS[1], struct.pack(string.rep('<d', #parts), unpack(parts)), 'PX', ttl_ms(longest, floor))
end

-- The buckets' settled levels (settle.lua), as the core's refunded and
-- charged: a level d (us times L: a debt, or a queue) set at t as q * L + r.
local function set_level(p, s, t, d)
  local q, r = divmod(d, p.L)
  s.q, s.r = t + q, r
end

-- The level d after a charge of units: d + units * W, at most 2 L W (what
-- the store checked stays below 2^53), compared so that nothing passes it.
local function charged(d, units, p)
  local most = 2 * p.L * p.W
  if d >= most then return most end
  local add = math.min(units, 2 * p.L) * p.W
  if add > most - d then return most end
  return d + add
end

-- A bucket's settling, on its level at t (`level`: its debt, or its
-- queue): a refund lowers the level by units (at most `most(p)`, the most
-- a request is counted for), never below empty; a charge raises it, at
-- most 2 L W; a settled key lives until the bucket is full again.
local function settles_by_level(A, level, most)
  function A.refund(p, s, t, at, units)
    local d = level(p, s, t)
    if d == 0 then return false end
    set_level(p, s, t, d - math.min(d, math.min(units, most(p)) * p.W))
    return true
  end
  function A.charge(p, s, t, units)
    set_level(p, s, t, charged(level(p, s, t), units, p))
  end
  A.hold = A.reset
end
