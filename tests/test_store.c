/* The store's three disciplines, alone and under real threads. */
#include <pthread.h>
#include <stdlib.h>

#include "fbtest.h"
#include "store.h"

static fb_store *store(fb_discipline d, uint32_t keys, int64_t bal)
{
	fb_store *s;
	check_eq(fb_store_create(d, keys, bal, &s), FB_OK, "store creation");
	return s;
}

static void test_fenced_read_refuses_below_highest_and_registers(void **state)
{
	(void)state;
	fb_store *s = store(FB_FENCED, 1, 100);
	fb_store_result r;
	check(fb_store_read(s, 0, 5, &r), "a first read with 5 is served");
	check_eq(r.balance, 100, "balance served");
	check_eq(fb_store_highest(s, 0), 5, "the read registered 5");
	check(!fb_store_read(s, 0, 4, &r), "a read with 4 < 5 is refused");
	check(fb_store_read(s, 0, 5, &r), "a read with the registered 5 is served");
	check(!fb_store_write(s, 0, 50, 4, &r), "a write with 4 is refused");
	check(fb_store_write(s, 0, 50, 5, &r), "a write with 5 after a read with 5 is accepted");
	check(!fb_store_write(s, 0, 40, 5, &r), "a second write with 5 is stale");
	check(fb_store_read(s, 0, 5, &r), "a read with the last written 5 is still served");
	check_eq(r.balance, 50, "and sees the write");
	check(fb_store_read(s, 0, 9, &r), "a read with 9 registers 9");
	check(!r.stale, "reads are never stale");
	check(!fb_store_write(s, 0, 30, 6, &r), "6 < registered 9: refused");
	check_eq(r.highest, 9, "the refusal reports the registered 9");
	check(!r.highest_written, "... and that no write carried 9 yet");
	check(fb_store_write(s, 0, 30, 9, &r), "the 9 holder writes");
	check_eq(fb_store_balance(s, 0), 30, "final balance");
	check_eq(fb_store_last_fence(s, 0), 9, "last fence");
	fb_store_destroy(s);
}

static void test_write_fenced_and_unfenced_reads_register_nothing(void **state)
{
	(void)state;
	fb_discipline ds[] = {FB_WRITE_FENCED, FB_UNFENCED};
	for (int i = 0; i < 2; i++) {
		fb_store *s = store(ds[i], 1, 100);
		fb_store_result r;
		check(fb_store_read(s, 0, 9, &r), "%s: read 9", fb_discipline_name(ds[i]));
		check(fb_store_read(s, 0, 3, &r), "%s: a lower read is served too",
		      fb_discipline_name(ds[i]));
		check_eq(fb_store_highest(s, 0), 0, "reads registered nothing");
		check(fb_store_write(s, 0, 70, 3, &r), "%s: a write with 3 is accepted",
		      fb_discipline_name(ds[i]));
		bool low = fb_store_write(s, 0, 60, 2, &r);
		check(low == (ds[i] == FB_UNFENCED), "%s: a write with 2 after 3",
		      fb_discipline_name(ds[i]));
		check(r.stale, "the store names the 2 after 3 stale, accepted or not");
		fb_store_destroy(s);
	}
}

static void test_write_after_a_read_decides_on_the_store_not_the_guess(void **state)
{
	(void)state;
	fb_discipline ds[] = {FB_FENCED, FB_WRITE_FENCED, FB_UNFENCED};
	for (int i = 0; i < 3; i++) {
		const char *n = fb_discipline_name(ds[i]);
		fb_store *s = store(ds[i], 1, 100);
		fb_store_result a, b, r;
		check(fb_store_read(s, 0, 5, &a), "%s: A reads with 5", n);
		check(fb_store_read(s, 0, 6, &b), "%s: B reads with 6", n);
		check(fb_store_write_after(s, 0, 99, 6, &b, &r), "%s: B writes 99 after its read",
		      n);
		/* A's guess (the word its read left) is out of date now */
		bool late = fb_store_write_after(s, 0, 99, 5, &a, &r);
		check(late == (ds[i] == FB_UNFENCED), "%s: A's write with 5 after B's 6", n);
		check_eq(r.before, 99, "the decision saw B's write, not A's stale guess");
		check_eq(fb_store_balance(s, 0), 99, "balance");
		fb_store_result c;
		check(fb_store_read(s, 0, 7, &c), "%s: C reads 99 with 7", n);
		check(fb_store_write_after(s, 0, 98, 7, &c, &r), "%s: a good guess writes", n);
		check_eq(fb_store_balance(s, 0), 98, "C's write applied");
		check_eq(r.version, ds[i] == FB_UNFENCED ? 3 : 2, "commit version after C's write");
		fb_store_destroy(s);
	}
}

/* A client's memory of its last result on a key spares the load; a memory
 * out of date must not decide a refusal, nor what the refusal reports. */
static void test_debit_after_a_stale_result_decides_on_the_store(void **state)
{
	(void)state;
	fb_discipline ds[] = {FB_FENCED, FB_WRITE_FENCED, FB_UNFENCED};
	for (int i = 0; i < 3; i++) {
		const char *n = fb_discipline_name(ds[i]);
		fb_store *s = store(ds[i], 1, 100);
		fb_store_result a, r;
		check(fb_store_debit(s, 0, 1, 5, &a), "%s: A debits with 5", n);
		check(fb_store_debit(s, 0, 1, 9, &r), "%s: B debits with 9", n);
		/* A's memory (99, highest 5 written) would refuse 5 by itself */
		bool again = fb_store_debit_after(s, 0, 1, 5, &a, &r);
		check(again == (ds[i] == FB_UNFENCED), "%s: A's 5 again after B's 9", n);
		if (!again) {
			check(r.before == 98, "%s: the refusal reports the record as it is", n);
			check(r.highest == 9, "%s: ... with B's fence", n);
		}
		int64_t bal = fb_store_balance(s, 0);
		check(fb_store_debit_after(s, 0, 1, 10, &a, &r), "%s: a stale memory, a good fence",
		      n);
		check(r.before == bal, "%s: debited from the record as it is", n);
		fb_store_result c = r;
		check(fb_store_debit_after(s, 0, 1, 11, &c, &r), "%s: an up-to-date memory", n);
		check(r.balance == bal - 2, "%s: both debits applied", n);
		fb_store_destroy(s);
	}
}

static void test_debit_subtracts_in_the_store(void **state)
{
	(void)state;
	fb_store *s = store(FB_FENCED, 2, 1000);
	fb_store_result r;
	check(fb_store_debit(s, 1, 7, 1, &r), "debit with 1");
	check_eq(r.before, 1000, "balance before the debit");
	check_eq(r.balance, 993, "balance after the debit");
	check_eq(r.version, 1, "first accepted write is version 1");
	check_eq(fb_store_balance(s, 0), 1000, "the other key is untouched");
	fb_store_destroy(s);
}

/* ---- many threads, random tokens ---- */

enum { THREADS = 8, WRITES = 6000, KEYS = 2 };

typedef struct acc {
	uint64_t token, start, end;
	uint16_t version;
	uint32_t key;
} acc;

typedef struct wrun {
	fb_store *s;
	_Atomic uint64_t ticket;
	acc *log;
	_Atomic size_t n;
	pthread_barrier_t go;
} wrun;

typedef struct writer {
	wrun *r;
	uint64_t seed;
} writer;

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *write_random(void *p)
{
	writer *w = p;
	wrun *r = w->r;
	pthread_barrier_wait(&r->go);
	for (int i = 0; i < WRITES; i++) {
		uint64_t token = 1 + xorshift(&w->seed) % 200000;
		uint32_t key = (uint32_t)(xorshift(&w->seed) % KEYS);
		fb_store_result res;
		uint64_t s = atomic_fetch_add(&r->ticket, 1);
		bool ok;
		if (xorshift(&w->seed) % 3 == 0)
			ok = fb_store_read(r->s, key, token, &res) && false;
		else
			ok = fb_store_debit(r->s, key, 1, token, &res);
		uint64_t e = atomic_fetch_add(&r->ticket, 1);
		if (ok)
			r->log[atomic_fetch_add(&r->n, 1)] = (acc){token, s, e, res.version, key};
	}
	return NULL;
}

static int by_key_version(const void *a, const void *b)
{
	const acc *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->version < y->version ? -1 : x->version > y->version;
}

static void test_random_tokens_accepted_sequence_strictly_increases(void **state)
{
	(void)state;
	fb_discipline ds[] = {FB_FENCED, FB_WRITE_FENCED};
	for (int d = 0; d < 2; d++) {
		const char *name = fb_discipline_name(ds[d]);
		wrun r = {.s = store(ds[d], KEYS, 1000000)};
		r.log = calloc(THREADS * WRITES, sizeof *r.log);
		pthread_barrier_init(&r.go, NULL, THREADS);
		pthread_t th[THREADS];
		writer w[THREADS];
		for (int i = 0; i < THREADS; i++) {
			w[i] = (writer){&r, 0x2545f4914f6cdd1du * (uint64_t)(i + 7)};
			pthread_create(&th[i], NULL, write_random, &w[i]);
		}
		for (int i = 0; i < THREADS; i++)
			pthread_join(th[i], NULL);
		size_t n = atomic_load(&r.n);
		check(n >= 2 * KEYS, "%s: only %zu writes accepted, too few to prove order", name,
		      n);
		check(n < 65536, "versions wrap at 2^16; the test must stay below");
		qsort(r.log, n, sizeof *r.log, by_key_version);
		size_t i = 0;
		for (uint32_t k = 0; k < KEYS; k++) {
			uint64_t prev = 0, count = 0;
			for (; i < n && r.log[i].key == k; i++, count++) {
				acc *a = &r.log[i];
				check_eq(a->version, count + 1,
				         "commit versions of a key are consecutive from 1");
				check(a->token > prev,
				      "%s key %u: accepted token %llu (version %u) after %llu: the "
				      "accepted "
				      "sequence must strictly increase",
				      name, k, (unsigned long long)a->token, a->version,
				      (unsigned long long)prev);
				/* commit order must agree with real time where calls did
				 * not overlap */
				if (i > 0 && r.log[i - 1].key == k)
					check(!(a->end < r.log[i - 1].start),
					      "version %u finished before version %u began",
					      a->version, r.log[i - 1].version);
				prev = a->token;
			}
			check_eq(fb_store_last_fence(r.s, k), prev,
			         "last_fence is the largest accepted token");
			check_eq(fb_store_balance(r.s, k), 1000000 - (int64_t)count,
			         "every accepted debit of 1 is in the balance: none lost");
		}
		pthread_barrier_destroy(&r.go);
		free(r.log);
		fb_store_destroy(r.s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_fenced_read_refuses_below_highest_and_registers),
	        cmocka_unit_test(test_write_fenced_and_unfenced_reads_register_nothing),
	        cmocka_unit_test(test_write_after_a_read_decides_on_the_store_not_the_guess),
	        cmocka_unit_test(test_debit_after_a_stale_result_decides_on_the_store),
	        cmocka_unit_test(test_debit_subtracts_in_the_store),
	        cmocka_unit_test(test_random_tokens_accepted_sequence_strictly_increases),
	};
	return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
