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

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_engines_are_chosen_by_scheme),
	        cmocka_unit_test(test_passwords_never_survive_redaction),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
