-- Token bucket as exact GCRA: when the bucket is full again, in us times L,
-- kept as q * L + r (0 <= r < L) so that no number passes 2^53.
-- Rules of one rate run token_bucket_1.lua instead: keep the two in step.
local A = {}
local FIELDS = {'q', 'r'}

function A.load(P, n) return load_counters(n, FIELDS) end
function A.save(P, S, resets, floor) save_counters(S, FIELDS, resets, floor) end
function A.capacity(p) return p.L end
function A.advance(p, s, now) return now end

-- How far below full at t, in us times L.
local function debt(p, s, t)
  if s.q < t then return 0 end
  return (s.q - t) * p.L + s.r
end

function A.check(p, s, t, cost)
  if cost > p.L then return NEVER end
  local allowed = (p.L - cost) * p.W
  local d = debt(p, s, t)
  if d <= allowed then return nil end
  return ceil_ns(d - allowed, p.L)
end

function A.record(p, s, t, cost)
  local base_q, base_r = t, 0
  if debt(p, s, t) > 0 then base_q, base_r = s.q, s.r end
  local q, r = divmod(base_r + cost * p.W, p.L)
  s.q, s.r = base_q + q, r
end

function A.delay() return ZERO end

function A.remaining(p, s, t)
  local missing = ceil_div(debt(p, s, t), p.W)
  if missing >= p.L then return 0 end
  return p.L - missing
end

function A.reset(p, s, t) return ceil_ns(debt(p, s, t), p.L) end

-- Settling (settle.lua): tokens back, never above full; a charge at most L
-- tokens into debt.
settles_by_level(A, debt, function(p) return p.L end)
