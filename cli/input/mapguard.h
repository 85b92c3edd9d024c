/*
 * Input files the tool maps into memory instead of reading them (common's
 * smallest input, distinct/once's first input on several threads). A
 * mapped file that another program truncates while it is read (a log
 * rotated with copytruncate) makes the next access to a page past its new
 * end raise SIGBUS, which would kill the tool without a word. While a
 * mapping is guarded, that signal ends the run with exit status 2 and a
 * message naming the file instead. Any other SIGBUS keeps its default
 * action.
 *
 * Not for the library: the guard exits the process, which only the tool
 * may do.
 */
#ifndef BKC_MAPGUARD_H
#define BKC_MAPGUARD_H

#include <stddef.h>

/* Guards [addr, addr + len), a mapping of path. Up to 8 mappings at once;
 * 0, or -1 (the table is full: the mapping is not guarded, which loses
 * only the message). The first call installs the signal handler. */
int bkc_map_guard(const void *addr, size_t len, const char *path);

/* Stops guarding the mapping at addr (call before unmapping it). */
void bkc_map_unguard(const void *addr);

#endif /* BKC_MAPGUARD_H */
