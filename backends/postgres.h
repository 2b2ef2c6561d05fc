/*
 * The PostgreSQL store: one row per (discipline, key) in fencebench_account,
 * every check-and-apply one UPDATE whose WHERE clause is the discipline's
 * rule, and every accepted write recorded in fencebench_history by the same
 * statement. libpq, one server connection per worker. A connection that
 * broke (issue 24: a reset) connects again, ends its old backend, and
 * settles a write whose reply was lost from that history (the user's own
 * SQL excepted: it keeps none).
 */
#ifndef FB_POSTGRES_H
#define FB_POSTGRES_H

#include "backend.h"

extern const fb_store_ops fb_pg_store_ops;

#endif
