/*
 * assert: ASSERT(cond), an invariant of the daemon's own making (a state,
 * a bound a caller must keep), checked in the builds the tests run and
 * gone from release builds (-DNDEBUG: scripts/build-release.sh). A broken
 * one logs where and aborts: a core dump to read, not a wrong reply sent.
 * Never for what a client or a node sends: that gets an error.
 */
#ifndef TAGPROXY_ASSERT_H
#define TAGPROXY_ASSERT_H

#ifdef NDEBUG
#define ASSERT(cond) ((void)0)
#else
#define ASSERT(cond) ((cond) ? (void)0 : assert_broken(#cond, __FILE__, __LINE__))
#endif

/* Log "file:line: cond" and abort. */
void assert_broken(const char *cond, const char *file, int line) __attribute__((noreturn));

#endif
