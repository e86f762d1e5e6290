/*
 * The riscv64 image's device-tree reader (probe/baremetal/riscv64/fdt.c),
 * built natively for tests/test_baremetal_riscv64.py:
 *
 *   fdt-timebase FILE          prints what it reads from FILE
 *   fdt-timebase FILE sstc H   prints whether hart H's ISA names sstc
 *                              (1, 0, or -1 for no such hart)
 *   fdt-timebase FILE damage   reads every prefix of FILE (its totalsize set
 *                              to the prefix's length) and FILE with each
 *                              byte flipped, each from a buffer of exactly
 *                              that size, so that a sanitizer catches any
 *                              read beyond it; prints how many of each it
 *                              read and fails if a prefix gave a value but
 *                              0 or the whole file's (-1 or the whole
 *                              file's for hart 0's sstc)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdt.h"

static int sstc_of_hart0;

static uint64_t read_copy(const unsigned char *data, size_t n)
{
    unsigned char *copy = malloc(n ? n : 1);
    memcpy(copy, data, n);
    uint64_t hz = fdt_timebase_hz(copy, n);
    sstc_of_hart0 = fdt_hart_has_extension(copy, n, 0, "sstc");
    free(copy);
    return hz;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: fdt-timebase FILE [damage]\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    static unsigned char data[1 << 20];
    size_t n = fread(data, 1, sizeof data, f);
    fclose(f);
    /* QEMU's dumpdtb pads the blob to 1 MiB: damage only what it holds. */
    if (n >= 8) {
        size_t total = (size_t)data[4] << 24 | (size_t)data[5] << 16 | (size_t)data[6] << 8 | data[7];
        if (total < n)
            n = total;
    }
    if (argc == 4 && !strcmp(argv[2], "sstc")) {
        unsigned char *copy = malloc(n ? n : 1);
        memcpy(copy, data, n);
        printf("%d\n", fdt_hart_has_extension(copy, n, strtoull(argv[3], NULL, 0), "sstc"));
        free(copy);
        return 0;
    }
    uint64_t whole = read_copy(data, n);
    int whole_sstc = sstc_of_hart0;
    if (argc == 2) {
        printf("%llu\n", (unsigned long long)whole);
        return 0;
    }
    static unsigned char work[1 << 20];
    size_t prefixes = 0, flips = 0;
    for (size_t len = 0; len <= n; len++, prefixes++) {
        memcpy(work, data, len);
        if (len >= 8) {
            work[4] = (unsigned char)(len >> 24);
            work[5] = (unsigned char)(len >> 16);
            work[6] = (unsigned char)(len >> 8);
            work[7] = (unsigned char)len;
        }
        uint64_t hz = read_copy(work, len);
        if ((hz != 0 && hz != whole) || (sstc_of_hart0 != -1 && sstc_of_hart0 != whole_sstc)) {
            printf("prefix of %zu bytes read %llu, sstc %d\n", len, (unsigned long long)hz, sstc_of_hart0);
            return 1;
        }
    }
    for (size_t i = 0; i < n; i++, flips++) {
        memcpy(work, data, n);
        work[i] ^= 0xff;
        read_copy(work, n);
    }
    printf("%llu %zu prefixes %zu flips sstc %d\n", (unsigned long long)whole, prefixes, flips, whole_sstc);
    return 0;
}
