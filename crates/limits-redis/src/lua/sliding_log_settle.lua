-- Settles a request (after sliding_log.lua, whose functions it takes), as
-- the core's refund, charge and renewal on every rate. ARGV as
-- settle.lua's: now, units, 'refund', 'charge' or 'renew', the ttl floor
-- in ms, n, the rates, then the request's time `at` (us). A refund takes
-- the units back from each rate's entry of time `at` while it is live; a
-- charge records them at s.t, up to the limit, as an admitted cost is
-- recorded; a renewal does the one, then the other. Returns the time it
-- settled at (us), as settle.lua does.
local units = cost
local how = ARGV[3]
local at = tonumber(ARGV[6 + 3 * n])

-- Takes units from the entry of time `at`, and writes the key anew: the
-- running totals after it include them, and an entry left without a unit
-- is dropped (the waits and the expiry count on every entry holding one
-- unit or more), the newest kept naming the header's time. No entry left:
-- the key is full, and goes.
local function refund(s)
  if s.count == 0 or at < s.oldest or at > s.newest then return end
  local bytes = live_bytes(s)
  local before = s.total - s.units
  if before < 0 then before = before + s.M end
  local parts, kept, newest, found = {}, 0, 0, false
  for j = 0, s.count - 1 do
    local low, total = struct.unpack(s.fmt, bytes, j * s.E + 1)
    local c = total - before
    if c < 0 then c = c + s.M end
    before = total
    local time = unwrap(s, low)
    if time == at then
      c = c - math.min(units, c)
      found = true
    end
    if c > 0 then
      kept = kept + c
      parts[#parts + 1] = struct.pack(s.fmt, low, kept)
      newest = time
    end
  end
  if not found then return end
  if #parts == 0 then
    redis.call('DEL', s.key)
    return
  end
  local spare = string.rep('\0', (s.cap - #parts) * s.E)
  redis.call('SET', s.key, struct.pack(HEAD_FORMAT, newest, 0, #parts, kept, kept) .. table.concat(parts) .. spare)
  expire(s)
end

local latest = now
for i = 1, n do
  local s = load(i)
  advance(s)
  if how ~= 'charge' then
    refund(s)
    -- The charge reads the log as the refund wrote it.
    if how == 'renew' then
      s = load(i)
      advance(s)
    end
  end
  if how ~= 'refund' then
    cost = math.min(units, s.L - s.units)
    if cost > 0 then write(s) end
  end
  if s.t > latest then latest = s.t end
end
return latest
