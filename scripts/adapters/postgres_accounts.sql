-- Your own table and your own fenced UPDATE, run by fencebench as they are:
--   fencebench --store 'postgres://USER@HOST:PORT/DB?sql=scripts/adapters/postgres_accounts.sql'
-- fencebench binds its values to the $names (pg_sql.h lists them) and reads the columns each
-- statement returns. Replace these with the statements your service runs.
-- @name accounts

-- @reset
CREATE TABLE IF NOT EXISTS accounts (id int PRIMARY KEY, balance bigint NOT NULL,
  last_fence bigint NOT NULL DEFAULT 0, seen bigint NOT NULL DEFAULT 0,
  version bigint NOT NULL DEFAULT 0)
-- @reset
TRUNCATE accounts
-- @reset
INSERT INTO accounts (id, balance) SELECT k, $initial_balance FROM generate_series(0, $keys - 1) k

-- A read registers its token unless a newer one was seen: the stale holder's write then fails.
-- @read
UPDATE accounts SET seen = $token WHERE id = $key AND seen <= $token RETURNING balance

-- The fenced write: strictly greater than the last accepted fence, at least the highest seen.
-- The row is locked first, so `old` is the row this UPDATE replaces (RETURNING sees only new).
-- @write
WITH old AS (SELECT balance, last_fence FROM accounts WHERE id = $key FOR UPDATE)
UPDATE accounts a SET balance = $balance, last_fence = $token, seen = $token,
                      version = a.version + 1
  FROM old
 WHERE a.id = $key AND a.last_fence < $token AND a.seen <= $token
RETURNING old.balance AS before, a.balance, a.version, old.last_fence

-- @debit
WITH old AS (SELECT balance, last_fence FROM accounts WHERE id = $key FOR UPDATE)
UPDATE accounts a SET balance = a.balance - $amount, last_fence = $token, seen = $token,
                      version = a.version + 1
  FROM old
 WHERE a.id = $key AND a.last_fence < $token AND a.seen <= $token
RETURNING old.balance AS before, a.balance, a.version, old.last_fence

-- @final
SELECT balance, last_fence FROM accounts WHERE id = $key
