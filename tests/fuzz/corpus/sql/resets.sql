-- @debit
UPDATE t SET b = b - $amount WHERE id = $key
-- @reset
SELECT $keys
-- @reset
SELECT $initial_balance;
;
