-- Exact integer division for Lua's doubles (every value an integer below
-- 2^53): the quotient rounded down and a remainder in [0, b). Every script
-- starts with it; every division goes through it.
local function divmod(a, b)
  local q = math.floor(a / b)
  local r = a - q * b
  if r < 0 then
    q = q - 1
    r = r + b
  elseif r >= b then
    q = q + 1
    r = r - b
  end
  return q, r
end
