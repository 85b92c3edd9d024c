/*
 * The SIGBUS guard for mapped input files (see mapguard.h).
 *
 * The handler may run on any thread at any moment, so it reads only a
 * fixed table whose entries are complete before they are published (an
 * entry's message is written first, then its address with a release
 * store), and it writes with write(2) and leaves with _exit(2): nothing
 * it calls takes a lock or allocates.
 */
#define _GNU_SOURCE
#include "mapguard.h"

#include "message.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SLOTS 8

typedef struct guarded {
    uintptr_t start; /* 0: free */
    size_t len;
    size_t msg_len;
    char msg[640];
} guarded_t;

static guarded_t table[SLOTS];

static void on_sigbus(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    uintptr_t a = (uintptr_t)info->si_addr;
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t start = __atomic_load_n(&table[i].start, __ATOMIC_ACQUIRE);
        if (start > 1 && a >= start && a - start < table[i].len) {
            ssize_t w = write(STDERR_FILENO, table[i].msg, table[i].msg_len);
            (void)w;
            _exit(BKC_EXIT_ERROR);
        }
    }
    /* Not one of ours: the default action, as if there were no handler. */
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install(void)
{
    static int installed;
    if (__atomic_exchange_n(&installed, 1, __ATOMIC_ACQ_REL))
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    (void)sigaction(SIGBUS, &sa, NULL);
}

int bkc_map_guard(const void *addr, size_t len, const char *path)
{
    if (!addr || !len)
        return 0;
    install();
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t free_slot = 0;
        guarded_t *g = &table[i];
        /* Claim the slot with a marker no address has, fill it, publish. */
        if (!__atomic_compare_exchange_n(&g->start, &free_slot, (uintptr_t)1, false,
                                         __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            continue;
        int n = snprintf(g->msg, sizeof g->msg,
                         "bloomkit%s%s: %s: the file shrank while it was being read (another "
                         "program truncated it?); stopped, and any output is incomplete\n",
                         *bkc_cmd_name ? " " : "", bkc_cmd_name, path);
        g->msg_len = n < 0 ? 0 : (size_t)n >= sizeof g->msg ? sizeof g->msg - 1 : (size_t)n;
        g->len = len;
        __atomic_store_n(&g->start, (uintptr_t)addr, __ATOMIC_RELEASE);
        return 0;
    }
    return -1;
}

void bkc_map_unguard(const void *addr)
{
    for (int i = 0; i < SLOTS; i++)
        if (addr && __atomic_load_n(&table[i].start, __ATOMIC_ACQUIRE) == (uintptr_t)addr)
            __atomic_store_n(&table[i].start, 0, __ATOMIC_RELEASE);
}
