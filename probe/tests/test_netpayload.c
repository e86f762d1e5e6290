/*
 * The payload check of `network`: every message the sender builds is
 * exact for its own number, and a message with any one bit flipped, any
 * two words swapped, a piece of a neighbouring message in it, or checked
 * under another number (a chunk repeated or out of order) is not; the
 * first faulty byte is found where it was made, with the byte it should
 * have been. Sizes cover the vector blocks, the single words after them
 * and a last word cut short.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "netpayload.h"

static const size_t sizes[] = {16, 17, 23, 64, 71, 72, 79, 80, 1400, 1403, 4096, 65507, 131072};

/* A flipped bit at `at`: caught, and found there. */
static void check_flip(uint8_t *msg, size_t size, uint64_t seq, size_t at, int bit)
{
    uint8_t was = msg[at];
    msg[at] ^= (uint8_t)(1u << bit);
    unsigned expected = 0;
    size_t found = netpayload_first_fault(msg, size, seq, &expected);
    CHECK(!netpayload_exact(msg, size, seq), "size %zu: bit %d of byte %zu flipped, not caught", size, bit, at);
    CHECK(found == at && expected == was, "size %zu: flip at %zu found at %zu (expected 0x%02x, was 0x%02x)",
          size, at, found, expected, was);
    msg[at] = was;
}

int main(void)
{
    srand(12345);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t size = sizes[k];
        uint8_t *msg = malloc(size), *next = malloc(size);
        for (uint64_t seq = 0; seq < 3; seq++) {
            uint64_t num = seq ? seq * 0x10001ull + 7 : 0;
            netpayload_fill(msg, size, num);
            netpayload_fill(next, size, num + 1);
            unsigned expected;
            CHECK(netpayload_exact(msg, size, num), "size %zu: message %llu as built is not exact", size,
                  (unsigned long long)num);
            CHECK(netpayload_first_fault(msg, size, num, &expected) == size, "size %zu: a fault in an exact message",
                  size);
            /* Repeated or out of order: the number is in the first bytes. */
            CHECK(!netpayload_exact(msg, size, num + 1) && !netpayload_exact(next, size, num),
                  "size %zu: message %llu passes as its neighbour", size, (unsigned long long)num);
            CHECK(netpayload_first_fault(next, size, num, &expected) == 0, "size %zu: a neighbour's first fault "
                  "is not its number", size);
            /* Every byte at small sizes, every bit at the smallest, else a sample. */
            for (size_t at = 0; at < size; at += size <= 4096 ? 1 : 1 + (size_t)rand() % 509)
                for (int bit = 0; bit < 8; bit += size <= 80 ? 1 : 7)
                    check_flip(msg, size, num, at, bit);
            check_flip(msg, size, num, size - 1, 0);
            /* A neighbour's word in place of one of this message's (past the number). */
            for (size_t at = 8; at + 8 <= size; at += size <= 4096 ? 8 : 4096) {
                uint8_t keep[8];
                memcpy(keep, msg + at, 8);
                memcpy(msg + at, next + at, 8);
                CHECK(!netpayload_exact(msg, size, num), "size %zu: the neighbour's word at %zu passes", size, at);
                memcpy(msg + at, keep, 8);
            }
            /* Two words swapped. */
            if (size >= 24) {
                uint8_t a[8];
                memcpy(a, msg + 8, 8);
                memcpy(msg + 8, msg + size - 8, 8);
                memcpy(msg + size - 8, a, 8);
                CHECK(!netpayload_exact(msg, size, num), "size %zu: two words swapped pass", size);
            }
        }
        free(msg);
        free(next);
    }
    return check_verdict("netpayload");
}
