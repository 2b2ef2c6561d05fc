/*
 * `fencebench adapter-test exec:COMMAND`: the conformance test of a store
 * adapter, locktorture style, in seconds, before any benchmark. It drives
 * the adapter through the exec engine (backends/exec.c), as a run would,
 * and judges each contract of the protocol on its own freshly reset store:
 * a fresh token accepted, a lower and an equal one refused, a read
 * registering its token, versions rising, `before` the balance replaced, a
 * debit subtracting, reset resetting, replies of the protocol's shape.
 * Then several adapter processes race one key from threads, round after
 * round, with fresh and stale tokens, and an exact oracle judges what they
 * did (tokens rising in version order, the chain of balances, the final
 * balance and fence, the accepted count against the store's history).
 *
 * One line per contract, PASS or FAIL, and on FAIL the requests sent and
 * the replies read. Exit 0 when every contract held, 1 when one failed, 2
 * for bad usage (or a command the shell cannot find, or an adapter without
 * the operations a run needs), 3 when the adapter cannot be started, dies,
 * hangs or answers {"error": ...}.
 */
#ifndef FB_ADAPTER_TEST_H
#define FB_ADAPTER_TEST_H

int fb_adapter_test_main(int argc, char **argv);

#endif
