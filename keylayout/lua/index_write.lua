-- index_write: one write command on indexed records, then their index
-- entries made to match (keylayout/lua/, embedded by the build; run by
-- proxy/families/index.c with EVALSHA in the records' slot).
--
-- KEYS  n records (cluster names), their n indexes in the same order, then
--       the command's other keys (declared so that the cluster checks them)
-- ARGV  [1] n   [2..n+1] the records' index members (raw)
--       [n+2..] the command and its arguments, keys already rewritten
--
-- After the command: a record that exists has its member in its index with
-- score = its absolute expiry in Unix ms (PEXPIRETIME), or +inf when it has
-- none; a record that does not exist has no member. The command's reply is
-- returned as redis.pcall gave it, so errors come back as the command's own.
--
-- On a node migrating this slot away, a script may not name a key that is
-- not there (Redis answers "non local key"), and the cluster only runs the
-- script when every declared key is there. So a record the command deleted
-- reads as such an error: it is gone. And every member is added before any
-- is removed, since a removal may delete an index another record still
-- needs to be added to.
local n = tonumber(ARGV[1])
local reply = redis.pcall(unpack(ARGV, n + 2))
local at = {}
for i = 1, n do
    local t = redis.pcall('PEXPIRETIME', KEYS[i])
    if type(t) ~= 'number' then
        t = -2
    end
    at[i] = t
end
for i = 1, n do
    if at[i] == -1 then
        redis.call('ZADD', KEYS[n + i], '+inf', ARGV[i + 1])
    elseif at[i] ~= -2 then
        redis.call('ZADD', KEYS[n + i], at[i], ARGV[i + 1])
    end
end
for i = 1, n do
    if at[i] == -2 then
        -- an error here is an index the removal of an earlier member deleted
        redis.pcall('ZREM', KEYS[n + i], ARGV[i + 1])
    end
end
return reply
