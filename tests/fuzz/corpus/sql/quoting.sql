-- @name x
-- @write
UPDATE t SET b = $balance, s = E'it\'s $key' WHERE id = $key AND f < $token /* /* $x */ */
-- @read
SELECT $$ $key $$, "$k""" FROM t WHERE id = $key
