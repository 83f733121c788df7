-- Sliding window counter: the previous window's count weighed by its overlap
-- with the last W, decided exactly, multiplied through by W.
-- Rules of one rate run sliding_window_1.lua instead: keep the two in step.
local A = {}
local FIELDS = {'index', 'prev', 'curr'}

function A.load(P, n) return load_counters(n, FIELDS) end
function A.save(P, S, resets, floor) save_counters(S, FIELDS, resets, floor) end
function A.capacity(p) return p.L end

function A.advance(p, s, now)
  local index = divmod(now, p.W)
  if index == s.index + 1 then
    s.index, s.prev, s.curr = index, s.curr, 0
  elseif index > s.index then
    s.index, s.prev, s.curr = index, 0, 0
  elseif index < s.index then
    return s.index * p.W
  end
  return now
end

-- The smallest elapsed time e (as {us, adj}) in a window with counts
-- (prev, curr) at which prev * (W - e) + (curr + cost) * W <= L * W, or nil.
local function first_fit(p, prev, curr, cost)
  local room = p.L - curr - cost
  if room < 0 then return nil end
  if prev == 0 then return ZERO end
  -- slack = floor(room * W_ns / prev) = q * 1000 + f nanoseconds
  local q, r = divmod(room * p.W, prev)
  if q >= p.W then return ZERO end
  local f = divmod(r * 1000, prev)
  if q == 0 and f == 0 then return nil end -- no slack: e would be W
  return {p.W - q, -f}
end

function A.check(p, s, t, cost)
  if cost > p.L then return NEVER end
  local start = s.index * p.W
  local room = p.L - s.curr - cost
  if room >= 0 and s.prev * (p.W - (t - start)) <= room * p.W then return nil end
  local e = first_fit(p, s.prev, s.curr, cost)
  if e then return {start + e[1] - t, e[2]} end
  e = first_fit(p, s.curr, 0, cost) or {p.W, 0}
  return {start + p.W + e[1] - t, e[2]}
end

function A.record(p, s, t, cost) s.curr = s.curr + cost end
-- A denial counted, up to the limit (as the core's record_denied).
function A.record_denied(p, s, t, cost) s.curr = math.min(s.curr + cost, p.L) end
function A.delay() return ZERO end

function A.remaining(p, s, t)
  local est = s.prev * (p.W - (t - s.index * p.W)) + s.curr * p.W
  local room = p.L * p.W - est
  if room <= 0 then return 0 end
  return (divmod(room, p.W))
end

function A.reset(p, s, t)
  local start = s.index * p.W
  if s.curr > 0 then return us(start + 2 * p.W - t) end
  if s.prev > 0 then return us(start + p.W - t) end
  return ZERO
end

-- Settling (settle.lua), as the core's refund and charge: a refund takes
-- from the count of the request's window while it is the current or the
-- previous one; a charge counts up to the limit, as a counted denial does.
function A.refund(p, s, t, at, units)
  local index = divmod(at, p.W)
  if index == s.index and s.curr > 0 then
    s.curr = s.curr - math.min(units, s.curr)
    return true
  elseif index + 1 == s.index and s.prev > 0 then
    s.prev = s.prev - math.min(units, s.prev)
    return true
  end
  return false
end

function A.charge(p, s, t, units) A.record_denied(p, s, t, units) end

-- A settled key lives to the end of the window after its own, as a key
-- written by the decision that starts a window does: sliding_window_1.lua
-- keeps that expiry (KEEPTTL) on later writes in the window.
function A.hold(p, s, t) return us((s.index + 2) * p.W - t) end
