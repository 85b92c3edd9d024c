/*
 * The crawler's "seen URL" set in miniature: a stream of generated URLs,
 * about a third of them repeats, passes through a blocked Bloom filter sized
 * for the distinct URLs at 1% FPR. Reports what was kept, the filter's size
 * and the false-positive rate measured on URLs never added, next to the one
 * requested.
 */
#include "bloomkit/bloomkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static int url(char *buf, size_t cap, uint64_t id)
{
    return snprintf(buf, cap, "https://site%llu.example.com/page/%llu?ref=%llu",
                    (unsigned long long)(id % 997), (unsigned long long)id,
                    (unsigned long long)(id * 7 % 13));
}

int main(void)
{
    const uint64_t distinct = 1000000, stream = 1500000;
    const double fpr = 0.01;
    bk_filter_t *seen;
    bk_status_t st = bk_filter_create(&seen, distinct, fpr, NULL);
    if (st != BK_OK) {
        fprintf(stderr, "demo: cannot create filter: %s\n", bk_strerror(st));
        return 2;
    }
    uint64_t rng = 42, kept = 0, dropped = 0, new_dropped = 0, next_new = 0, fresh_in = 0;
    char buf[128];
    for (uint64_t i = 0; i < stream; i++) {
        /* Two in three URLs are new; the rest repeat one already seen. */
        bool fresh = next_new < distinct && (next_new == 0 || next_rand(&rng) % 3 != 0);
        uint64_t id = fresh ? next_new++ : next_rand(&rng) % next_new;
        fresh_in += fresh;
        int len = url(buf, sizeof buf, id);
        bool was_new;
        bk_filter_add(seen, buf, (size_t)len, &was_new);
        kept += was_new;
        dropped += !was_new;
        new_dropped += fresh && !was_new; /* a false positive at that fill */
    }
    /* URLs never added: every "present" answer is a false positive. */
    uint64_t probes = 1000000, fp = 0;
    for (uint64_t i = 0; i < probes; i++) {
        int len = url(buf, sizeof buf, distinct + 1000000 + i);
        fp += bk_filter_contains(seen, buf, (size_t)len);
    }
    bk_filter_info_t info;
    bk_filter_info(seen, &info);
    printf("crawler demo: %llu URLs in, %llu distinct\n", (unsigned long long)stream,
           (unsigned long long)fresh_in);
    printf("  kept as new           %llu\n", (unsigned long long)kept);
    printf("  dropped as seen       %llu (new URLs among them, false positives: %llu)\n",
           (unsigned long long)dropped, (unsigned long long)new_dropped);
    printf("  filter                %s, %llu bytes, k=%u, %.2f bits/key\n",
           bk_kind_name(info.kind), (unsigned long long)info.bytes, info.k,
           (double)info.cells / (double)distinct);
    printf("  fill                  %.1f%%, estimated items %.0f\n", info.fill * 100,
           info.estimated_items);
    printf("  FPR requested         %.4f\n", fpr);
    printf("  FPR measured          %.4f (%llu of %llu never-seen URLs)\n",
           (double)fp / (double)probes, (unsigned long long)fp, (unsigned long long)probes);
    bk_filter_free(seen);
    return (double)fp / (double)probes <= fpr ? 0 : 1;
}
