-- Fixed window: one counter per window index floor(t / W).
-- Rules of one rate run fixed_window_1.lua instead: keep the two in step.
local A = {}
local FIELDS = {'index', 'count'}

function A.load(P, n) return load_counters(n, FIELDS) end
function A.save(P, S, resets, floor) save_counters(S, FIELDS, resets, floor) end
function A.capacity(p) return p.L end

function A.advance(p, s, now)
  local index = divmod(now, p.W)
  if index > s.index then
    s.index = index
    s.count = 0
    return now
  elseif index < s.index then
    return s.index * p.W
  end
  return now
end

function A.check(p, s, t, cost)
  if cost > p.L then return NEVER end
  if s.count + cost <= p.L then return nil end
  return us((s.index + 1) * p.W - t)
end

function A.record(p, s, t, cost) s.count = s.count + cost end
-- A denial counted: up to the limit, past which nothing would decide otherwise.
function A.record_denied(p, s, t, cost) s.count = math.min(s.count + cost, p.L) end
function A.delay() return ZERO end
function A.remaining(p, s) return p.L - s.count end

function A.reset(p, s, t)
  if s.count == 0 then return ZERO end
  return us((s.index + 1) * p.W - t)
end

-- Settling (settle.lua), as the core's refund and charge: a refund takes
-- from the count of the request's window while it is the state's; a charge
-- counts up to the limit, as a counted denial does.
function A.refund(p, s, t, at, units)
  if divmod(at, p.W) ~= s.index or s.count == 0 then return false end
  s.count = s.count - math.min(units, s.count)
  return true
end

function A.charge(p, s, t, units) A.record_denied(p, s, t, units) end

-- A settled key lives to its window's end, as a key written by the decision
-- that starts a window does: fixed_window_1.lua keeps that expiry (KEEPTTL)
-- on later writes in the window, whatever the count.
function A.hold(p, s, t) return us((s.index + 1) * p.W - t) end
