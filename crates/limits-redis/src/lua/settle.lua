-- Settles a request the rule admitted, as the core's RateAlgorithm::settle
-- on every rate: refunds `units` of the request counted at `at` (A.refund),
-- or charges `units` more at now (A.charge), each rate's state advanced to
-- now first. ARGV: now (us, or '' for Redis TIME), units, 'refund' or
-- 'charge', the ttl floor in ms, n, n x (L, W in us, burst) as rates.lua
-- reads them, then the request's time `at` (us). The key is written only
-- if a rate changed, to live as long as A.hold says. Returns nothing.
local units = tonumber(ARGV[2])
local charge = ARGV[3] == 'charge'
local at = tonumber(ARGV[6 + 3 * n])
local S = A.load(P, n)
local holds = {}
local changed = false
for i = 1, n do
  local p, s = P[i], S[i]
  local t = A.advance(p, s, now, i)
  if charge then
    A.charge(p, s, t, units)
    changed = true
  elseif A.refund(p, s, t, at, units) then
    changed = true
  end
  holds[i] = A.hold(p, s, t)
end
if changed then A.save(P, S, holds, floor) end
return ''
