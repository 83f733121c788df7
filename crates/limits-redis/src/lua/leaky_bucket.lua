-- Leaky bucket as a queue (nginx-style): the next unit's departure slot in
-- us times L, kept as q * L + r (0 <= r < L) so that no number passes 2^53.
-- Rules of one rate run leaky_bucket_1.lua instead: keep the two in step.
local A = {}
local FIELDS = {'q', 'r'}

function A.load(P, n) return load_counters(n, FIELDS) end
function A.save(P, S, resets, floor) save_counters(S, FIELDS, resets, floor) end
function A.capacity(p) return p.B + 1 end
function A.advance(p, s, now) return now end

-- How long the queue is at t, in us times L.
local function queued(p, s, t)
  if s.q < t then return 0 end
  return (s.q - t) * p.L + s.r
end

-- How long after t a request of cost would depart, in us times L.
local function departs(p, s, t, cost)
  return queued(p, s, t) + (cost - 1) * p.W
end

function A.check(p, s, t, cost)
  if cost > p.B + 1 then return NEVER end
  local most = p.B * p.W
  local c = cost
  if c < 1 then c = 1 end
  local d = departs(p, s, t, c)
  if d <= most then return nil end
  return ceil_ns(d - most, p.L)
end

function A.record(p, s, t, cost)
  local q, r = divmod(departs(p, s, t, cost) + p.W, p.L)
  s.q, s.r = t + q, r
end

function A.delay(p, s, t, cost) return ceil_ns(departs(p, s, t, cost), p.L) end

function A.remaining(p, s, t)
  local slots = ceil_div(queued(p, s, t), p.W)
  if slots >= p.B + 1 then return 0 end
  return p.B + 1 - slots
end

function A.reset(p, s, t) return ceil_ns(queued(p, s, t), p.L) end

-- Settling (settle.lua): the queue shortened, never below empty; a charge
-- queues at most 2 L units.
settles_by_level(A, queued, function(p) return p.B + 1 end)
