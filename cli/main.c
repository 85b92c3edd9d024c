/*
 * bloomkit: the command-line tool. This file only dispatches: it finds the
 * subcommand in a table and hands it the rest of the arguments; each
 * subcommand lives in cli/cmd_NAME.c and parses its own options.
 */
#include "commands.h"
#include "message.h"

#include "bloomkit/bloomkit.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef struct bkc_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} bkc_command_t;

/* One line per subcommand, in the order --help lists them; a new
 * subcommand adds its line here and its prototype to commands.h, e.g.
 *   {"common", bkc_cmd_common, "lines common to all files, exact, within a memory cap"},
 */
static const bkc_command_t commands[] = {
    {"plan", bkc_cmd_plan, "size a filter: bits, k, bytes, FPR as it fills"},
    {"create", bkc_cmd_create, "make an empty filter file"},
    {"add", bkc_cmd_add, "add lines to a filter file; report how many were new"},
    {"check", bkc_cmd_check, "print lines in (or --absent: not in) a filter, like grep"},
    {"remove", bkc_cmd_remove, "remove lines from a counting filter"},
    {"info", bkc_cmd_info, "describe a filter file (--json)"},
    {"merge", bkc_cmd_merge, "union of compatible filter files"},
    {"dedup", bkc_cmd_dedup, "print each line once; --state keeps the seen-set across runs"},
    {"distinct", bkc_cmd_distinct, "count distinct integers exactly (bitmap)"},
    {"once", bkc_cmd_once, "print integers that appear exactly once (2-bit bitmap)"},
    {"common", bkc_cmd_common, "lines common to all files, exact, within a memory cap"},
    {NULL, NULL, NULL},
};

/* Whatever a command printed through stdio (help, plan, info, counts)
 * must have reached standard output: a full disk or a closed pipe there is
 * an error (exit 2), not a silent success. A command that already failed
 * has said why. */
static int stdout_written(int rc)
{
    if (fflush(stdout) == 0 && !ferror(stdout))
        return rc;
    if (rc != BKC_EXIT_ERROR)
        bkc_error("standard output: %s", strerror(errno ? errno : EIO));
    return BKC_EXIT_ERROR;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: bloomkit COMMAND [OPTIONS] [ARGS]\n"
                 "       bloomkit --help | --version\n\n"
                 "Bloom filters and bitmaps for \"have I seen this before?\" at scale.\n\n"
                 "commands:\n");
    for (const bkc_command_t *c = commands; c->name; c++)
        fprintf(out, "  %-10s %s\n", c->name, c->summary);
    fprintf(out, "\nRun 'bloomkit COMMAND --help' for a command's options; see bloomkit(1).\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        usage(stdout);
        return stdout_written(0);
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
        printf("bloomkit %s\n", BK_VERSION_STRING);
        return stdout_written(0);
    }
    for (const bkc_command_t *c = commands; c->name; c++)
        if (strcmp(c->name, name) == 0) {
            bkc_cmd_name = c->name;
            return stdout_written(c->run(argc - 1, argv + 1));
        }
    fprintf(stderr, "bloomkit: unknown command '%s' (see 'bloomkit --help')\n", name);
    return 2;
}
