-- index_write: one write command on indexed records, then their index
-- entries made to match (keylayout/lua/, embedded by the build; run by
-- proxy/index.c with EVALSHA in the records' slot).
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
local n = tonumber(ARGV[1])
local reply = redis.pcall(unpack(ARGV, n + 2))
for i = 1, n do
    local at = redis.call('PEXPIRETIME', KEYS[i])
    if at == -2 then
        redis.call('ZREM', KEYS[n + i], ARGV[i + 1])
    elseif at == -1 then
        redis.call('ZADD', KEYS[n + i], '+inf', ARGV[i + 1])
    else
        redis.call('ZADD', KEYS[n + i], at, ARGV[i + 1])
    end
end
return reply
