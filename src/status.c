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
    case BK_EEXIST: return "a file is already there";
    case BK_ENOTFILE: return "not a regular file (a directory, device, FIFO or socket)";
    case BK_EBUDGET: return "the call would do more work than its budget allows";
    case BK_ESTATIC:
        return "the filter is static (built from its whole key set): build it again with the "
               "new keys";
    }
    return "unknown status";
}
