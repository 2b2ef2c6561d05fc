/* The engine registry and URL redaction: no server needed. */
#include <string.h>

#include "backend.h"
#include "fbtest.h"
#include "inproc.h"
#include "postgres.h"
#include "etcd.h"
#include "redis.h"
#include "redlock.h"
#include "registry.h"
#include "zk.h"

static void test_engines_are_chosen_by_scheme(void **state)
{
	(void)state;
	check(fb_lease_engine(NULL) == &fb_inproc_lease_ops, "no URL: in-process leases");
	check(fb_lease_engine("inproc") == &fb_inproc_lease_ops, "inproc leases");
	check(fb_lease_engine("redis://127.0.0.1:6379/0") == &fb_redis_lease_ops, "redis leases");
	check(fb_lease_engine("postgres://u@h/db") == NULL, "PostgreSQL keeps no leases");
	check(fb_lease_engine("zk://h:2181,h:2182/fb") == &fb_zk_lease_ops, "ZooKeeper leases");
	check(fb_lease_engine("etcd://h:2379") == &fb_etcd_lease_ops, "etcd leases");
	check(fb_lease_engine("redlock://a:1,b:2,c:3") == &fb_redlock_lease_ops, "Redlock");
	check(fb_store_engine("zk://h") == NULL && fb_store_engine("etcd://h") == NULL &&
	              fb_store_engine("redlock://a,b,c") == NULL,
	      "the lock services keep no balances");
	check(fb_store_engine("redis://h/1") == &fb_redis_store_ops, "redis store");
	check(fb_store_engine("postgres://u@h/db") == &fb_pg_store_ops, "postgres://");
	check(fb_store_engine("postgresql://u@h/db") == &fb_pg_store_ops, "postgresql://");
	check(fb_store_engine("host=127.0.0.1 port=5432 dbname=x") == &fb_pg_store_ops,
	      "a libpq conninfo is PostgreSQL's");
	check(fb_store_engine("mongodb://h/x") == NULL, "an unknown scheme");
	check(fb_store_engine("redisx://h") == NULL, "a scheme is matched whole");
	check(strstr(fb_store_schemes(), "postgres://") && strstr(fb_lease_schemes(), "redis://") &&
	              strstr(fb_lease_schemes(), "zk://") &&
	              strstr(fb_lease_schemes(), "etcd://") &&
	              strstr(fb_lease_schemes(), "redlock://"),
	      "the valid schemes are listed");
	check(strcmp(fb_store_schemes(),
	             "inproc, redis://HOST:PORT/DB, postgres://USER@HOST:PORT/DB "
	             "or a libpq conninfo, exec:COMMAND (an adapter to your own "
	             "store)") == 0,
	      "the error line's list is written from the registered engines: '%s'",
	      fb_store_schemes());
	check(strncmp(fb_lease_engines_help(), "inproc (default), redis://[:PASS@]", 34) == 0 &&
	              strstr(fb_lease_engines_help(), "[&faketime=N:FILE], or exec:COMMAND: your "
	                                              "own lock service, through") &&
	              strstr(fb_store_engines_help(),
	                     "see YOUR OWN SQL), or exec:COMMAND: your own "
	                     "store as the fenced column"),
	      "--help's list is each engine's help, the last after 'or'");
}

static void test_passwords_never_survive_redaction(void **state)
{
	(void)state;
	static const struct {
		const char *url, *want;
	} cases[] = {
	        {"redis://:pw@127.0.0.1:1/0", "redis://:***@127.0.0.1:1/0"},
	        {"redis://bob:s3cret@h:6379/2?fence=incr", "redis://bob:***@h:6379/2?fence=incr"},
	        {"redis://:hun#ter2@h", "redis://:***@h"},
	        {"postgres://u:hun/ter2@h/db", "postgres://u:***@h/db"},
	        {"postgres://u@h/db?password=hunter2", "postgres://u@h/db?password=***"},
	        {"postgres://u:p@h/db?sslmode=disable&password=x&a=b",
	         "postgres://u:***@h/db?sslmode=disable&password=***&a=b"},
	        {"host=h password='a b\\'c' dbname=x", "host=h password=*** dbname=x"},
	        {"host=h password = secret port=1", "host=h password=*** port=1"},
	        {"redis://h:6379/0", "redis://h:6379/0"},
	        {"redis://u:@h/0", "redis://u:***@h/0"}, /* found by fuzzing: looped */
	        {"redis://s3cretpw@h:6379/0", "redis://***@h:6379/0"},
	        {"redlock://s3cretpw@a:1,b:2,c:3", "redlock://***@a:1,b:2,c:3"},
	        {"redlock://u:s3cret@a:1,b:2,c:3?fence=incr",
	         "redlock://u:***@a:1,b:2,c:3?fence=incr"},
	        {"host=h user=fb\npassword=s3cret dbname=x",
	         "host=h user=fb\npassword=*** dbname=x"},
	        {"postgres://fb:p@ssw0rd@127.0.0.1:5447/db", "postgres://fb:***@127.0.0.1:5447/db"},
	        {"x://:@@:@//@p", "x://:***@p"},
	        {"postgres://fencebench@127.0.0.1:5432/postgres",
	         "postgres://fencebench@127.0.0.1:5432/postgres"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char buf[256];
		fb_url_redact(cases[i].url, buf, sizeof buf);
		check(strcmp(buf, cases[i].want) == 0, "redact('%s') = '%s', want '%s'",
		      cases[i].url, buf, cases[i].want);
	}
	char tiny[8];
	fb_url_redact("redis://:pw@h", tiny, sizeof tiny);
	check(strlen(tiny) == 7, "a short buffer is filled and terminated: '%s'", tiny);
}

/* Registration checks each ops vector: every built-in engine passes; a
 * vector without a required op, or built against another version or size
 * of its struct, is refused by the engine's scheme and the op's name, and
 * is not found by its scheme afterwards (the cycle never calls its NULL). */
static void test_a_short_ops_vector_is_refused_by_name(void **state)
{
	(void)state;
	const fb_registry *b = fb_registry_builtin();
	check(b->nrefused == 0, "every built-in engine registers: %s",
	      b->nrefused ? b->refused[0].why : "");
	check(b->nlease == 6 && b->nstore == 4, "six lease engines, four stores: %zu, %zu",
	      b->nlease, b->nstore);

	fb_registry r = {0};
	check(fb_registry_add_lease(&r, &fb_inproc_lease_ops), "a whole vector registers");
	fb_lease_ops no_peek = fb_zk_lease_ops;
	no_peek.peek = NULL;
	check(!fb_registry_add_lease(&r, &no_peek), "a lease engine without peek is refused");
	check(r.nrefused == 1 && strcmp(r.refused[0].why, "the lease engine \"zk\" is refused: it "
	                                                  "has no peek (a required op)") == 0,
	      "the refusal names the engine and the op: '%s'", r.refused[0].why);
	check(fb_registry_lease(&r, "zk://h:2181") == NULL, "a refused engine is not found");
	check(fb_registry_refused(&r, "zk://h:2181", true) == r.refused[0].why &&
	              fb_registry_refused(&r, "zk://h:2181", false) == NULL &&
	              fb_registry_refused(&r, "inproc", true) == NULL,
	      "its refusal is found by its scheme, and only there");
	check(fb_registry_lease(&r, NULL) == &fb_inproc_lease_ops, "the whole one is found");

	fb_lease_ops old = fb_redis_lease_ops;
	old.version_of_ops = FB_LEASE_OPS_VERSION + 1;
	check(!fb_registry_add_lease(&r, &old) &&
	              strstr(r.refused[1].why, "\"redis\" is refused: its ops vector is version"),
	      "another version is refused: '%s'", r.refused[1].why);
	fb_lease_ops small = fb_etcd_lease_ops;
	small.size = 8;
	check(!fb_registry_add_lease(&r, &small) &&
	              strstr(r.refused[2].why, "its ops vector is 8 bytes"),
	      "another size is refused: '%s'", r.refused[2].why);

	fb_store_ops no_final = fb_pg_store_ops;
	no_final.final = NULL;
	check(!fb_registry_add_store(&r, &no_final) &&
	              strcmp(r.refused[3].why,
	                     "the store engine \"postgres\" is refused: it has no "
	                     "final (a required op)") == 0,
	      "a store without final is refused by name: '%s'", r.refused[3].why);
	check(fb_registry_store(&r, "postgresql://u@h/db") == NULL &&
	              fb_registry_refused(&r, "postgresql://u@h/db", false) == r.refused[3].why,
	      "refused under either of its spellings");
	fb_lease_ops helpless = fb_redlock_lease_ops;
	helpless.help = NULL;
	check(!fb_registry_add_lease(&r, &helpless) && strstr(r.refused[4].why, "no help"),
	      "an engine --help cannot list is refused: '%s'", r.refused[4].why);
	fb_store_ops batchless = fb_redis_store_ops;
	batchless.batch = NULL;
	check(fb_registry_add_store(&r, &batchless), "an optional op may be missing");
}

/* The options know the schemes alone (schemes.h): each row of the table
 * is a registered engine's, in the registry's order, saying the same. */
static void check_rows(const char *kind, const fb_scheme *t, size_t n, const char *const *scheme,
                       const char *const *url, const char *const *help, const bool *remote,
                       const bool *pause, const bool *jump, size_t m)
{
	check(n == m, "%s: %zu schemes in the table, %zu engines registered", kind, n, m);
	for (size_t i = 0; i < n; i++) {
		check(!strcmp(t[i].scheme, scheme[i]), "%s row %zu: scheme '%s', the engine's '%s'",
		      kind, i, t[i].scheme, scheme[i]);
		check(!strcmp(t[i].url, url[i]), "%s '%s': url '%s', the engine's '%s'", kind,
		      scheme[i], t[i].url, url[i]);
		check(!strcmp(t[i].help, help[i]), "%s '%s': help '%s', the engine's '%s'", kind,
		      scheme[i], t[i].help, help[i]);
		check(t[i].remote == remote[i] && t[i].server_pause == pause[i] &&
		              t[i].node_jump == jump[i],
		      "%s '%s': remote, server_pause, node_jump as the engine's", kind, scheme[i]);
	}
}

static void test_the_scheme_table_is_the_registrys(void **state)
{
	(void)state;
	const fb_registry *b = fb_registry_builtin();
	const char *scheme[FB_REGISTRY_MAX], *url[FB_REGISTRY_MAX], *help[FB_REGISTRY_MAX];
	bool remote[FB_REGISTRY_MAX], pause[FB_REGISTRY_MAX], jump[FB_REGISTRY_MAX];
	for (size_t i = 0; i < b->nlease; i++) {
		scheme[i] = b->lease[i]->scheme;
		url[i] = b->lease[i]->url;
		help[i] = b->lease[i]->help;
		remote[i] = b->lease[i]->remote;
		pause[i] = b->lease[i]->server_pause != NULL;
		jump[i] = b->lease[i]->node_jump != NULL;
	}
	check_rows("lease", fb_lease_scheme_table, fb_lease_scheme_count, scheme, url, help, remote,
	           pause, jump, b->nlease);
	for (size_t i = 0; i < b->nstore; i++) {
		scheme[i] = b->store[i]->scheme;
		url[i] = b->store[i]->url;
		help[i] = b->store[i]->help;
		remote[i] = b->store[i]->remote;
		pause[i] = jump[i] = false;
	}
	check_rows("store", fb_store_scheme_table, fb_store_scheme_count, scheme, url, help, remote,
	           pause, jump, b->nstore);
	static const char *const urls[] = {NULL,
	                                   "inproc",
	                                   "redis://h/1",
	                                   "zk://h",
	                                   "etcd://h",
	                                   "redlock://a,b,c",
	                                   "exec:x y",
	                                   "postgres://u@h",
	                                   "postgresql://u@h",
	                                   "host=h dbname=x",
	                                   "mongodb://h",
	                                   "redisx://h"};
	for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
		const fb_scheme *l = fb_lease_scheme(urls[i]), *st = fb_store_scheme(urls[i]);
		const fb_lease_ops *le = fb_lease_engine(urls[i]);
		const fb_store_ops *se = fb_store_engine(urls[i]);
		check(l ? le && !strcmp(l->scheme, le->scheme) : !le,
		      "'%s': the table's lease scheme is the registry's engine's", urls[i]);
		check(st ? se && !strcmp(st->scheme, se->scheme) : !se,
		      "'%s': the table's store scheme is the registry's engine's", urls[i]);
	}
}

/* Each engine judges its URL before the run, through the registry: the
 * options know only that the scheme exists. */
static void test_an_engine_judges_its_url_before_the_run(void **state)
{
	(void)state;
	const fb_registry *b = fb_registry_builtin();
	char why[320];
	check(!fb_registry_judge(b, NULL, true, why, sizeof why) &&
	              !fb_registry_judge(b, "inproc", false, why, sizeof why) &&
	              !fb_registry_judge(b, "redis://127.0.0.1:6379/0", true, why, sizeof why) &&
	              !fb_registry_judge(b, "redis://127.0.0.1:6379/0?proxy=1", false, why,
	                                 sizeof why),
	      "good URLs pass: %s", why);
	const char *w = fb_registry_judge(b, "redis://127.0.0.1:99999", true, why, sizeof why);
	check(w && !strncmp(w, "is malformed: the port must be", 30), "a bad port: '%s'",
	      w ? w : "(passed)");
	w = fb_registry_judge(b, "mongodb://h", false, why, sizeof why);
	check(w && !strncmp(w, "is not an engine; valid: inproc, redis://", 41),
	      "an unknown scheme: '%s'", w ? w : "(passed)");
	fb_registry r = {0};
	fb_lease_ops no_peek = fb_zk_lease_ops;
	no_peek.peek = NULL;
	fb_registry_add_lease(&r, &no_peek);
	w = fb_registry_judge(&r, "zk://h:2181", true, why, sizeof why);
	check(w && strstr(w,
	                  "is not an engine: the lease engine \"zk\" is refused: it has no peek"),
	      "a refused engine says why: '%s'", w ? w : "(passed)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_engines_are_chosen_by_scheme),
	        cmocka_unit_test(test_passwords_never_survive_redaction),
	        cmocka_unit_test(test_a_short_ops_vector_is_refused_by_name),
	        cmocka_unit_test(test_the_scheme_table_is_the_registrys),
	        cmocka_unit_test(test_an_engine_judges_its_url_before_the_run),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
