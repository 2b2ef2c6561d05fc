/*
 * The PostgreSQL store: one row per (discipline, key) in fencebench_account,
 * every check-and-apply one UPDATE whose WHERE clause is the discipline's
 * rule, and every accepted write recorded in fencebench_history by the same
 * statement. libpq, one server connection per worker.
 */
#ifndef FB_POSTGRES_H
#define FB_POSTGRES_H

#include "backend.h"

extern const fb_store_ops fb_pg_store_ops;

#endif
