// The article's JavaScript pad, rewritten here for one measurement: the
// same lease map that mints a fence on every acquire and the same account
// whose debit checks token > lastFence, driven through the acquire + debit
// cycle that `fencebench -t 1 --mode fenced --op debit --pause-rate 0`
// runs, so the two can be compared side by side on one machine.
// Usage: node scripts/jspad.mjs [seconds]
import { performance } from "node:perf_hooks";

function leaseTable(now, ttl) {
  const held = new Map();
  let next = 1;
  return {
    acquire(key, owner) {
      const cur = held.get(key);
      if (cur && cur.expiresAt > now()) return { ok: false };
      const fence = next++;
      held.set(key, { owner, fence, expiresAt: now() + ttl });
      return { ok: true, fence };
    },
    release(key, owner, fence) {
      const cur = held.get(key);
      if (cur && cur.owner === owner && cur.fence === fence) held.delete(key);
    },
  };
}

function account(balance) {
  let last = 0;
  return {
    debit(amount, token) {
      if (!(token > last)) return false;
      last = token;
      balance -= amount;
      return true;
    },
    balance: () => balance,
  };
}

const seconds = Number(process.argv[2] || 3);
const clock = { t: 0 };
const keys = 16;
const lock = leaseTable(() => clock.t, 10);
const accts = Array.from({ length: keys }, () => account(1e12));
let ops = 0, accepted = 0;
const end = performance.now() + seconds * 1000;
while (performance.now() < end) {
  for (let i = 0; i < 10000; i++) {
    const key = (ops * 7) % keys;
    const l = lock.acquire(key, "w1");
    if (l.ok) {
      if (accts[key].debit(1, l.fence)) accepted++;
      lock.release(key, "w1", l.fence);
    }
    ops++;
  }
}
const rate = ops / seconds;
console.log(`jspad: ${ops} acquire+debit+release cycles in ${seconds}s: ${Math.round(rate)} ops/s (${accepted} accepted)`);
