-- The sliding log's decision (after sliding_log.lua, whose ARGV, answer
-- and functions it takes): every rate looks, all or nothing, then each
-- records. The answer's time is the latest s.t, where the request's entry
-- is (its receipt's time).
local S = {}
local allowed = true
for i = 1, n do
  local s = load(i)
  advance(s)
  S[i] = s
  if cost > 0 and s.units + cost > s.L then allowed = false end
end

local at = now
for i = 1, n do
  if S[i].t > at then at = S[i].t end
end
local out = {at}
for i = 1, n do
  local s = S[i]
  local never, retry = 0, 0
  if not allowed then
    if cost > s.L then
      never = 1
    elseif s.units + cost > s.L then
      retry = unit_time(s, s.units + cost - s.L) + s.W - s.t
      if retry < 0 then retry = 0 end
    end
  elseif cost > 0 and record then
    write(s)
  end
  local reset, refill = 0, 0
  if s.units > 0 then
    reset = s.newest + s.W - s.t
    if reset < 0 then reset = 0 end
    -- One more unit of room when the oldest entry expires.
    refill = s.oldest + s.W - s.t
    if refill < 0 then refill = 0 end
  end
  local o = #out
  out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5], out[o + 6] =
    allowed and 1 or 0, s.L - s.units, never, retry, 0, reset
  out[o + 7], out[o + 8], out[o + 9], out[o + 10], out[o + 11] = 0, refill, 0, 0, 0
end
return struct.pack(string.rep('<d', #out), unpack(out))
