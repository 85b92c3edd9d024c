/*
 * The fork generation behind every object's lock (pybk_objlock_t, pybk.h):
 * bumped in a fork child before anything else runs there, so that a lock
 * another parent thread held is remade, not waited on forever. Below the
 * types that take the locks (filter.c, bitmap.c); module.c starts it.
 */
#include "pybk.h"

#include <pthread.h>

volatile unsigned long pybk_fork_generation;

static void after_fork_in_child(void)
{
    pybk_fork_generation++;
}

void pybk_fork_watch(void)
{
    static int set;
    if (!set && pthread_atfork(NULL, NULL, after_fork_in_child) == 0)
        set = 1;
}
