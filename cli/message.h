/*
 * The tool's messages and exit statuses. Every message the tool prints
 * goes through here so they all read "bloomkit CMD: ..." and name the file
 * (and line) they are about. This file depends on nothing else of cli/
 * but the reader's name and line number, so every other file may use it.
 */
#ifndef BKC_MESSAGE_H
#define BKC_MESSAGE_H

#include "input.h"

#include <stdarg.h>
#include <stddef.h>

/* Exit statuses, as grep: 0 yes / done, 1 no, 2 trouble. */
#define BKC_EXIT_YES 0
#define BKC_EXIT_NO 1
#define BKC_EXIT_ERROR 2
/* add: the lines were added and saved, but the filter is far past its
 * capacity (bkc_far_over_capacity) */
#define BKC_EXIT_OVER 3

/* The subcommand being run, for messages ("bloomkit add: ..."). */
extern const char *bkc_cmd_name;

/* "bloomkit CMD: message\n" on stderr. */
void bkc_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "bloomkit CMD: INPUT: line N: message\n" about the line at (may be NULL:
 * then as bkc_error). */
void bkc_verror_at(const bkc_reader_t *at, const char *fmt, va_list ap);

/* Prints "bloomkit CMD: message (see 'bloomkit CMD --help')" and returns 2,
 * for bad command lines. */
int bkc_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A line or key as a message may quote it: its first 40 bytes, bytes
 * outside printable ASCII as '?', and "..." when it was longer. Written to
 * buf (BKC_SHOWN_MAX bytes); returns buf. */
#define BKC_SHOWN_MAX 48
const char *bkc_shown(const char *s, size_t len, char *buf);

/* For getopt's '?': "unknown option or missing value: '-x'" as a usage
 * error (argv as given to the subcommand), with "did you mean --fpr?" for
 * a misspelled long option: the closest of the --names in usage (the
 * subcommand's help text; may be NULL). Returns 2. */
int bkc_bad_option(char **argv, const char *usage);

#endif /* BKC_MESSAGE_H */
