/*
 * Mapped filter files that another program truncates (pybk.h, "mapping
 * guard"): an access past the file's new end raises SIGBUS, which would
 * kill the interpreter. While a library call on a mapped filter runs, the
 * calling thread's guard names the mapping's range; SIGBUS at an address in
 * it jumps back to the guard (siglongjmp), and the call raises FileError
 * instead. Any other SIGBUS goes to the handler that was there before (the
 * default, or faulthandler's).
 */
#include "pybk.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>

static _Thread_local pybk_guard_t *current;
static struct sigaction previous;
static bool installed;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;

static void on_sigbus(int sig, siginfo_t *info, void *uctx)
{
    pybk_guard_t *g = current;
    const char *addr = info ? (const char *)info->si_addr : NULL;
    if (g && addr >= (const char *)g->lo && addr < (const char *)g->hi)
        siglongjmp(g->jb, 1);
    /* Not ours: what was there before (the fault repeats on return and
     * takes the default action once that is back). */
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction) {
            previous.sa_sigaction(sig, info, uctx);
            return;
        }
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN &&
               previous.sa_handler) {
        previous.sa_handler(sig);
        return;
    }
    signal(SIGBUS, SIG_DFL);
}

static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    installed = sigaction(SIGBUS, &sa, &previous) == 0;
}

bool pybk_guard_arm(pybk_guard_t *g, const bk_filter_t *f)
{
    const void *addr = NULL;
    size_t len = 0;
    if (!f || bk_filter_mapping(f, &addr, &len) != BK_OK || !addr)
        return false; /* in memory: nothing to guard */
    /* Once, whatever the thread: batch calls arm guards without the GIL,
     * and a second install would save this handler as "the one before". */
    pthread_once(&install_once, install);
    if (!installed)
        return false;
    g->lo = addr;
    g->hi = (const char *)addr + len;
    g->prev = current;
    current = g;
    return true;
}

void pybk_guard_disarm(pybk_guard_t *g)
{
    current = g->prev;
}

PyObject *pybk_raise_truncated(void)
{
    errno = EIO;
    PyErr_SetString(pybk_error_class(BK_EIO),
                    "the mapped filter file was truncated or replaced in place while mapped "
                    "(an access past its new end); open it again, or load() it");
    return NULL;
}
