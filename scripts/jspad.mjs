// The article's JavaScript pad, for one measurement: its lease map that
// mints a fence on every acquire and its account whose debit checks
// token > lastFence, driven through the acquire + debit cycle that
// `fencebench -t 1 --mode fenced --op debit --fence per-key --pause-rate 0`
// runs, so the two can be compared side by side on one machine.
//
//   node scripts/jspad.mjs [seconds]          the pad as the article has it
//   node scripts/jspad.mjs [seconds] --lean   leaner: a release instead of
//                                             letting each lease lapse, and
//                                             no log of writes
//
// The article's objects behave as published: acquire refuses a live lease
// and mints from 33; debit refuses a token not above the last and logs
// every accepted write; results are fresh objects. The article's lease has
// no release, so as in its contract 2 the injected clock moves past the TTL
// to free the keys (once every 16 cycles, one cycle per key).
import { performance } from "node:perf_hooks";

const STALE = "stale_fence";
const HELD = "lock_held";

function createLeaseLock({ now, ttlMs = 30 } = {}) {
  const locks = new Map();
  let nextFence = 33;
  return {
    acquire(key, owner) {
      const current = locks.get(key);
      if (current && current.expiresAt > now())
        return { ok: false, error: HELD, holder: current.owner };
      const fence = nextFence++;
      locks.set(key, { owner, fence, expiresAt: now() + ttlMs });
      return { ok: true, fence };
    },
    isHeld(key, owner) {
      const current = locks.get(key);
      return Boolean(current && current.owner === owner && current.expiresAt > now());
    },
    // --lean only: compare-and-delete, as fencebench releases
    release(key, owner, fence) {
      const current = locks.get(key);
      if (current && current.owner === owner && current.fence === fence) locks.delete(key);
    },
  };
}

function createAccount({ fence = true, log = true } = {}) {
  let balance = 100;
  let lastFence = 0;
  const writes = [];
  return {
    debit(amount, token) {
      if (fence && !(token > lastFence)) return { ok: false, error: STALE, lastFence, token };
      if (fence) lastFence = token;
      balance -= amount;
      if (log) writes.push({ amount, token, balance });
      return { ok: true, balance };
    },
    getBalance: () => balance,
    getLastFence: () => lastFence,
    writes,
  };
}

const seconds = Number(process.argv.find((a, i) => i > 1 && /^[0-9.]+$/.test(a)) || 3);
const lean = process.argv.includes("--lean");
const keys = 16;
const clock = { t: 0 };
const lock = createLeaseLock({ now: () => clock.t, ttlMs: 30 });
const accts = Array.from({ length: keys }, () => createAccount({ fence: true, log: !lean }));
let ops = 0, accepted = 0;
const t0 = performance.now(), end = t0 + seconds * 1000;
while (performance.now() < end) {
  for (let i = 0; i < 10000; i++) {
    const key = ops % keys;
    const l = lock.acquire(key, "w1");
    if (l.ok) {
      if (accts[key].debit(1, l.fence).ok) accepted++;
      if (lean) lock.release(key, "w1", l.fence);
    }
    if (!lean && key === keys - 1) clock.t += 31; // every lease lapses
    ops++;
  }
}
const elapsed = (performance.now() - t0) / 1000;
console.log(
  `jspad${lean ? " --lean" : ""}: ${ops} acquire+debit cycles in ${elapsed.toFixed(2)}s: ` +
    `${Math.round(ops / elapsed)} ops/s (${accepted} accepted)`,
);
