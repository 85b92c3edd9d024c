/*
 * Crash safety of bk_filter_save: a child process saves two different
 * filters over the same path in a loop and is killed with SIGKILL at a
 * random moment; the file on disk must then be, byte for byte, one of the
 * two complete filters, and load. (This covers process death at any point
 * of a save; power loss is what the fsyncs are for and is not simulated.)
 */
#define _GNU_SOURCE
#include "harness.h"
#include "internal.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[256];

static bk_filter_t *make(bk_kind_t kind, uint64_t cells, uint64_t first, uint64_t n)
{
    bk_options_t o = {.seed_set = true, .seed = first + 1};
    bk_filter_t *f = NULL;
    if (bk_filter_create_exact(&f, kind, cells, 6, &o) != BK_OK)
        return NULL;
    char key[64];
    for (uint64_t i = first; i < first + n; i++) {
        snprintf(key, sizeof key, "key-%llu", (unsigned long long)i);
        bk_filter_add(f, key, strlen(key), NULL);
    }
    return f;
}

static uint8_t *read_whole(const char *path, size_t *len);

/* The bytes a save of f writes (a paged file for the 1 MB one). */
static uint8_t *ser(const bk_filter_t *f, size_t *len)
{
    char path[400];
    snprintf(path, sizeof path, "%s/reference.bkf", tmpdir);
    if (bk_filter_save(f, path) != BK_OK)
        return NULL;
    uint8_t *b = read_whole(path, len);
    unlink(path);
    return b;
}

static uint8_t *read_whole(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, fp) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(fp);
    *len = (size_t)n;
    return b;
}

/* Removes the temp files killed savers leave behind; returns how many. */
static int remove_temps(void)
{
    DIR *d = opendir(tmpdir);
    int n = 0;
    char p[600];
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strstr(e->d_name, ".tmp-")) {
            snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
            unlink(p);
            n++;
        }
    }
    if (d)
        closedir(d);
    return n;
}

static void test_sigkill_during_save(void)
{
    /* Different kinds and sizes, so any mix of the two is detectable. */
    bk_filter_t *a = make(BK_KIND_BLOCKED, UINT64_C(1) << 22, 0, 2000);  /* 512 KB */
    bk_filter_t *b = make(BK_KIND_CLASSIC, UINT64_C(1) << 23, 5000, 3000); /* 1 MB, paged */
    size_t la, lb;
    uint8_t *sa = ser(a, &la), *sb = ser(b, &lb);
    CHECK(a && b && sa && sb);
    if (!sa || !sb)
        goto out;
    char path[400];
    snprintf(path, sizeof path, "%s/state.bkf", tmpdir);
    uint64_t rng = (uint64_t)time(NULL);
    int rounds = (int)bkt_scaled(40);
    if (rounds < 10)
        rounds = 10;
    int seen_a = 0, seen_b = 0, seen_none = 0, bad = 0, temps = 0;
    for (int r = 0; r < rounds; r++) {
        /* Every fourth round starts with no file: the first save of all. */
        bool fresh = r % 4 == 3;
        if (fresh)
            unlink(path);
        else
            CHECK_OK(bk_filter_save(a, path));
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            CHECK(pid >= 0);
            break;
        }
        if (pid == 0) {
            for (;;) {
                if (bk_filter_save(b, path) != BK_OK || bk_filter_save(a, path) != BK_OK)
                    _exit(3);
            }
        }
        struct timespec ts = {0, (long)(bkt_rand(&rng) % 30000) * 1000};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        CHECK_MSG(WIFSIGNALED(status), "round %d: the saver exited by itself (%d)", r, status);
        size_t len;
        uint8_t *got = read_whole(path, &len);
        if (!got) {
            if (fresh)
                seen_none++; /* killed before the first rename: no file, fine */
            else
                bad++;
            continue;
        }
        if (len == la && memcmp(got, sa, la) == 0)
            seen_a++;
        else if (len == lb && memcmp(got, sb, lb) == 0)
            seen_b++;
        else
            bad++;
        free(got);
        bk_filter_t *g = NULL;
        const char *why = NULL;
        CHECK_MSG(bk_filter_load(&g, path, &why) == BK_OK, "round %d: load: %s", r,
                  why ? why : "?");
        bk_filter_free(g);
        temps += remove_temps();
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(seen_a + seen_b + seen_none + bad, rounds);
    printf("  %d rounds: old/A %d, new/B %d, no file yet %d, torn %d; %d temp files left "
           "by killed savers\n",
           rounds, seen_a, seen_b, seen_none, bad, temps);
    unlink(path);
out:
    free(sa);
    free(sb);
    bk_filter_free(a);
    bk_filter_free(b);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/bkt-crash-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    bkt_run("sigkill_during_save", test_sigkill_during_save);
    remove_temps();
    rmdir(tmpdir);
    return bkt_finish();
}
