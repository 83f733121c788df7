-- Settles a request the rule admitted, as the core's RateAlgorithm::settle
-- on every rate: refunds `units` of the request counted at `at` (A.refund),
-- or charges `units` more at now (A.charge), or renews it, as the core's
-- Rule::renew: refunds all it took, then charges it again at now. Each
-- rate's state is advanced to now first. ARGV: now (us, or '' for Redis
-- TIME), units, 'refund', 'charge' or 'renew', the ttl floor in ms, n,
-- n x (L, W in us, burst) as rates.lua reads them, then the request's time
-- `at` (us). The key is written only if a rate changed, to live as long as
-- A.hold says. Returns the time it settled at (us): a renewed request's
-- time from now on.
local units = tonumber(ARGV[2])
local how = ARGV[3]
local at = tonumber(ARGV[6 + 3 * n])
local S = A.load(P, n)
local holds = {}
local changed = false
local latest = now
for i = 1, n do
  local p, s = P[i], S[i]
  local t = A.advance(p, s, now, i)
  if how ~= 'charge' and A.refund(p, s, t, at, units) then
    changed = true
  end
  if how ~= 'refund' then
    A.charge(p, s, t, units)
    changed = true
  end
  holds[i] = A.hold(p, s, t)
  if t > latest then latest = t end
end
if changed then A.save(P, S, holds, floor) end
return latest
