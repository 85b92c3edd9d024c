/*
 * INFO bloomkit: what the module did since the server started, and the
 * memory its filters hold. Fields appear as bloomkit_<name> in the section
 * bloomkit_stats (the server prefixes them with the module's name).
 */
#include "stats.h"
#include "config.h"

bkr_stats_t bkr_stats;

static void info(RedisModuleInfoCtx *ctx, int for_crash_report)
{
    (void)for_crash_report;
    RedisModule_InfoAddSection(ctx, "stats");
    RedisModule_InfoAddFieldULongLong(ctx, "filter_bytes", (unsigned long long)bkr_lib_bytes());
    RedisModule_InfoAddFieldULongLong(ctx, "keys_created",
                                      (unsigned long long)bkr_stats.keys_created);
    RedisModule_InfoAddFieldULongLong(ctx, "creations_propagated",
                                      (unsigned long long)bkr_stats.creations_propagated);
    RedisModule_InfoAddFieldULongLong(ctx, "filters_grown",
                                      (unsigned long long)bkr_stats.filters_grown);
    RedisModule_InfoAddFieldULongLong(ctx, "adds_refused",
                                      (unsigned long long)bkr_stats.adds_refused);
    RedisModule_InfoAddFieldULongLong(ctx, "values_loaded",
                                      (unsigned long long)bkr_stats.values_loaded);
    RedisModule_InfoAddFieldULongLong(ctx, "defrag_moved",
                                      (unsigned long long)bkr_stats.defrag_moved);
}

void *bkr_defrag_move(void *arg, void *block)
{
    void *moved = RedisModule_DefragAlloc(arg, block);
    if (moved)
        bkr_stats.defrag_moved++;
    return moved;
}

int bkr_stats_register(RedisModuleCtx *ctx)
{
    return RedisModule_RegisterInfoFunc(ctx, info);
}
