/*
 * The bloomkit tool's subcommands: one function per subcommand, each in
 * cli/cmd_NAME.c, called by main.c's dispatch table with argv[0] set to the
 * subcommand's name. Each returns the process exit status (0, 1, 2 like
 * grep where a yes/no answer is the point; 2 on any error).
 */
#ifndef BKC_COMMANDS_H
#define BKC_COMMANDS_H

int bkc_cmd_plan(int argc, char **argv);
int bkc_cmd_create(int argc, char **argv);
int bkc_cmd_add(int argc, char **argv);
int bkc_cmd_check(int argc, char **argv);
int bkc_cmd_remove(int argc, char **argv);
int bkc_cmd_info(int argc, char **argv);
int bkc_cmd_merge(int argc, char **argv);
int bkc_cmd_dedup(int argc, char **argv);
int bkc_cmd_distinct(int argc, char **argv);
int bkc_cmd_once(int argc, char **argv);
int bkc_cmd_common(int argc, char **argv);
/* distinct --lines (cmd_bitmap.c hands it common's arguments). */
int bkc_cmd_distinct_lines(int argc, char **argv);
int bkc_cmd_once_lines(int argc, char **argv);

#endif /* BKC_COMMANDS_H */
