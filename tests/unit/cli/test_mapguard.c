/*
 * Tests of cli/input/mapguard.c: a guarded mapping whose file is truncated ends
 * the process with exit status 2 and a message naming the file; a SIGBUS
 * outside every guarded mapping still kills the process as before. Each
 * case runs in a child process, which is what the guard ends.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "mapguard.h"
#include "message.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGES 4

/* A file of PAGES pages, mapped; *fd stays open. */
static char *map_file(char *path, int *fd, long page)
{
    *fd = mkstemp(path);
    if (*fd < 0)
        return NULL;
    if (ftruncate(*fd, page * PAGES) != 0)
        return NULL;
    char *m = mmap(NULL, (size_t)(page * PAGES), PROT_READ, MAP_SHARED, *fd, 0);
    return m == MAP_FAILED ? NULL : m;
}

/* How the child treats the mapping before it shrinks. */
typedef enum {
    GUARDED,         /* guarded as "urls.txt" */
    OTHER_GUARDED,   /* not guarded, but the handler is installed for another range */
    GUARD_UNGUARDED, /* guarded, then no longer */
} guard_mode_t;

/* Reads a page past the end of a mapped file that shrank to one page, in
 * a child; the child's wait status, its stderr in err. */
static int run_truncated(guard_mode_t mode, char *err, size_t errlen)
{
    long page = sysconf(_SC_PAGESIZE);
    char path[] = "/tmp/bk-mapguard-XXXXXX";
    int fd;
    char *m = map_file(path, &fd, page);
    CHECK(m != NULL);
    if (!m)
        return -1;
    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pipefd[1], STDERR_FILENO);
        bkc_cmd_name = "common";
        static char other[64];
        if (mode == OTHER_GUARDED)
            bkc_map_guard(other, sizeof other, "other");
        else
            bkc_map_guard(m, (size_t)(page * PAGES), "urls.txt");
        if (mode == GUARD_UNGUARDED)
            bkc_map_unguard(m);
        if (ftruncate(fd, page) != 0)
            _exit(3);
        volatile char c = m[page * 2]; /* past the new end: SIGBUS */
        (void)c;
        _exit(0);
    }
    close(pipefd[1]);
    ssize_t got = read(pipefd[0], err, errlen - 1);
    err[got > 0 ? got : 0] = '\0';
    close(pipefd[0]);
    int status;
    waitpid(pid, &status, 0);
    munmap(m, (size_t)(page * PAGES));
    close(fd);
    unlink(path);
    return status;
}

static void test_guarded(void)
{
    char err[1024];
    int status = run_truncated(GUARDED, err, sizeof err);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == BKC_EXIT_ERROR);
    CHECK_MSG(strstr(err, "bloomkit common: urls.txt: the file shrank") != NULL, "stderr: %s",
              err);
}

/* A fault outside every guarded range keeps the default action: the
 * handler (installed here for another range) passes it on. */
static void test_other_guarded(void)
{
    char err[1024];
    int status = run_truncated(OTHER_GUARDED, err, sizeof err);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS);
    CHECK(err[0] == '\0');
}

/* A mapping no longer guarded gets the default action again. */
static void test_unguard(void)
{
    char err[1024];
    int status = run_truncated(GUARD_UNGUARDED, err, sizeof err);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS);
    CHECK(err[0] == '\0');
}

int main(void)
{
    bkt_run("guarded", test_guarded);
    bkt_run("other_guarded", test_other_guarded);
    bkt_run("unguard", test_unguard);
    return bkt_finish();
}
