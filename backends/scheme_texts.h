/*
 * Each engine's URL form and --help text, written once: the engine's ops
 * vector (.url, .help) and the options' scheme table (registry/schemes.c,
 * which includes no engine) both take them from here. Strings only.
 */
#ifndef FB_SCHEME_TEXTS_H
#define FB_SCHEME_TEXTS_H

#define FB_INPROC_URL  "inproc"
#define FB_INPROC_HELP "inproc (default)"

/* leases */
#define FB_REDIS_URL "redis://HOST:PORT/DB"
#define FB_REDIS_LEASE_HELP                                                                        \
	"redis://[:PASS@]HOST:PORT/DB (with ?fence=incr for the two-step SET-then-INCR "           \
	"fence; or the master of Sentinels HOST:PORT,HOST:PORT,.../DB?sentinel=NAME, "             \
	"followed across a failover)"
#define FB_ZK_URL      "zk://HOST:PORT[,...][/PREFIX]"
#define FB_ETCD_URL    "etcd://HOST:PORT[,...][/PREFIX]"
#define FB_REDLOCK_URL "redlock://HOST:PORT,HOST:PORT,HOST:PORT[,...]"
#define FB_REDLOCK_HELP                                                                            \
	"redlock://HOST:PORT,HOST:PORT,HOST:PORT[,...][?fence=none|incr][&faketime=N:FILE]"
#define FB_EXEC_LEASE_URL "exec:COMMAND (an adapter to your own lock service)"
#define FB_EXEC_LEASE_HELP                                                                         \
	"exec:COMMAND: your own lock service, through an adapter program that speaks the "         \
	"lease side of the protocol (README.md, Bring your own lock service; --ttl in "            \
	"whole milliseconds)"

/* stores */
#define FB_REDIS_STORE_HELP                                                                        \
	"redis://HOST:PORT/DB (or the master of Sentinels "                                        \
	"HOST:PORT,HOST:PORT,.../DB?sentinel=NAME, followed across a failover)"
#define FB_POSTGRES_URL "postgres://USER@HOST:PORT/DB or a libpq conninfo"
#define FB_POSTGRES_HELP                                                                           \
	"postgres://USER@HOST:PORT/DB or a libpq conninfo (?sql=FILE, or sql=FILE in a "           \
	"conninfo: your own statements on your own table as the fenced column; see YOUR "          \
	"OWN SQL)"
#define FB_EXEC_STORE_URL "exec:COMMAND (an adapter to your own store)"
#define FB_EXEC_STORE_HELP                                                                         \
	"exec:COMMAND: your own store as the fenced column (beside in-process controls), "         \
	"through an adapter program that speaks JSON lines on stdin and stdout (the "              \
	"protocol: fencebench(1), ADAPTER PROTOCOL, or README.md, Bring your own store)"

#endif
