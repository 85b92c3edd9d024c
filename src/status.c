/* Status strings and the names of kinds. */
#include "internal.h"

#include <strings.h>

const char *bk_strerror(bk_status_t status)
{
    switch (status) {
    case BK_OK: return "success";
    case BK_EINVAL: return "invalid argument";
    case BK_ENOMEM: return "out of memory";
    case BK_EIO: return "input/output error";
    case BK_ENOSPC: return "no space left on device";
    case BK_ECORRUPT: return "corrupt or truncated data";
    case BK_EVERSION: return "unsupported format version";
    case BK_EFULL: return "filter is full (non-scaling, or at its size cap or length limit)";
    case BK_ENOTFOUND: return "key not found";
    case BK_EKIND: return "operation not supported by this kind of filter";
    case BK_EREADONLY: return "filter is read-only";
    case BK_EINCOMPAT: return "filters are not compatible";
    }
    return "unknown status";
}

static const char *const kind_names[] = {
    [BK_KIND_BLOCKED] = "blocked", [BK_KIND_CLASSIC] = "classic",
    [BK_KIND_COUNTING] = "counting", [BK_KIND_SCALABLE] = "scalable",
    [BK_KIND_BITMAP] = "bitmap",   [BK_KIND_BITMAP2] = "bitmap2",
    [BK_KIND_PRECISE] = "precise",
    [BK_KIND_BLOCKED2] = "blocked2",
    [BK_KIND_WINDOW] = "window",
    [BK_KIND_SPLIT] = "split",
    [BK_KIND_REDISBLOOM] = "redisbloom",
    [BK_KIND_CUCKOO] = "cuckoo",
};

const char *bk_kind_name(bk_kind_t kind)
{
    if ((unsigned)kind >= sizeof kind_names / sizeof kind_names[0])
        return NULL;
    return kind_names[kind];
}

bk_status_t bk_kind_parse(const char *name, bk_kind_t *out)
{
    if (!name || !out)
        return BK_EINVAL;
    for (unsigned i = 1; i < sizeof kind_names / sizeof kind_names[0]; i++) {
        if (kind_names[i] && strcasecmp(name, kind_names[i]) == 0) {
            *out = (bk_kind_t)i;
            return BK_OK;
        }
    }
    return BK_EINVAL;
}
