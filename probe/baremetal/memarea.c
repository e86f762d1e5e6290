#include "memarea.h"

#include <stddef.h>

#include "jsonw.h"
#include "parse.h"
#include "records.h"

char mem_area[BOARD_MEM_AREA_BYTES] __attribute__((section(".memarea"), aligned(4096)));

uint64_t median_u64(uint64_t *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            uint64_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int mem_sizes(const char *sub, const char *list, const char *example, uint64_t *sizes, int max)
{
    int n = parse_size_list(list, BOARD_MEM_AREA_BYTES, sizes, max);
    if (n < 0)
        record_usage(sub, "bad --sizes", list, example);
    return n;
}

void mem_params_begin(struct jw *w, const uint64_t *sizes, int n)
{
    jw_obj(w, "params");
    jw_arr(w, "sizes_bytes");
    for (int i = 0; i < n; i++)
        jw_uint(w, NULL, sizes[i]);
    jw_end(w);
    jw_uint(w, "memory_area_bytes", BOARD_MEM_AREA_BYTES);
}
