-- A rule's penalty around its decision, as the core's Penalty::decide
-- (crates/limits/src/penalty): DECIDE, the limiter's own script as a
-- function, decides the rule; while a ban lasts it only looks (mode 0),
-- and a recorded denial that says something of the key (not "never") is
-- counted: the after-th within `within` starts a ban at its own time, of
-- ban x escalate^n for offence n of a streak (a streak ends once a clean
-- period as long as the last ban has followed it), at most the longest.
-- KEYS: the rule's keys, then the penalty's (a hash: u the ban's end, l its
-- length, o the offences of its streak, d the denials' times).
-- ARGV: the rule's, then after, within, ban, escalate (0: none), the
-- longest ban; times in microseconds.
-- Returns the rule's answer followed by four doubles: now, and the ban
-- that refuses the request (its end, its length, its offence) or zeros.
local PK = KEYS[#KEYS]
local base = 5 + 3 * tonumber(ARGV[5])
local after = tonumber(ARGV[base + 1])
local within = tonumber(ARGV[base + 2])
local ban = tonumber(ARGV[base + 3])
local escalate = tonumber(ARGV[base + 4])
local longest = tonumber(ARGV[base + 5])

-- `now` is now.lua's, read before this; the rule decides at the same
-- instant.
ARGV[1] = string.format('%.0f', now)

local st = redis.call('HMGET', PK, 'u', 'l', 'o', 'd')
local untl = tonumber(st[1]) or 0
local length = tonumber(st[2]) or 0
local offences = tonumber(st[3]) or 0
local denials = {}
if st[4] then
  for d in string.gmatch(st[4], '%d+') do denials[#denials + 1] = tonumber(d) end
end

local mode = ARGV[3]
local banned = now < untl
if banned then ARGV[3] = '0' end
local answer = DECIDE(KEYS, ARGV)

if not banned and mode ~= '0' then
  local count = #answer / 8
  local v = {struct.unpack(string.rep('<d', count), answer)}
  -- Every rate answers alike whether the request passes; "never" (a cost
  -- no rate can admit) says nothing of the key.
  local counts = v[2] == 0
  for i = 4, count, 11 do
    if v[i] == 1 then counts = false end
  end
  if counts then
    local kept = {}
    for _, d in ipairs(denials) do
      if d + within > now then kept[#kept + 1] = d end
    end
    denials = kept
    if #denials + 1 < after then
      denials[#denials + 1] = now
    else
      local streak = offences
      if now >= untl + length then streak = 0 end
      local len = ban
      if escalate > 0 then
        for _ = 1, streak do
          len = len * escalate
          if len >= longest then break end
        end
        offences = streak + 1
      else
        offences = 0
      end
      if len > longest then len = longest end
      denials = {}
      untl = now + len
      length = len
      banned = true
    end
    local times = {}
    for i, d in ipairs(denials) do times[i] = string.format('%.0f', d) end
    redis.call('HSET', PK, 'u', string.format('%.0f', untl), 'l', string.format('%.0f', length),
      'o', offences, 'd', table.concat(times, ' '))
    -- Kept while it can change a decision: the ban and, if it escalates,
    -- the streak it continues; the denials still within `within`.
    local last = untl
    if offences > 0 then last = untl + length end
    if #denials > 0 and denials[#denials] + within > last then last = denials[#denials] + within end
    local ms = math.floor((last - now) / 1000) + 2
    local floor = tonumber(ARGV[4])
    if ms < floor then ms = floor end
    redis.call('PEXPIRE', PK, ms)
  end
end

if banned then
  local offence = offences
  if offence < 1 then offence = 1 end
  return answer .. struct.pack('<d<d<d<d', now, untl, length, offence)
end
return answer .. struct.pack('<d<d<d<d', now, 0, 0, 0)
