/*
 * The payload check of `network`: every message the sender builds is
 * exact for its own number, and a message with any one bit flipped, any
 * two words swapped, a piece of a neighbouring message in it, or checked
 * under another number (a chunk repeated or out of order) is not; the
 * first faulty byte is found where it was made, with the byte it should
 * have been. Sizes cover the vector blocks, the single words after them
 * and a last word cut short. Both checks are tested: the one this CPU
 * takes, and the 16-byte one the other architectures take.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "netpayload.h"

/* netpayload.c again without its x86_64 part, under other names. */
#define netpayload_fill portable_fill
#define netpayload_exact portable_exact
#define netpayload_first_fault portable_first_fault
#undef __x86_64__
#include "netpayload.c"
#undef netpayload_fill
#undef netpayload_exact
#undef netpayload_first_fault

struct payload {
    const char *name;
    void (*fill)(uint8_t *, size_t, uint64_t);
    int (*exact)(const uint8_t *, size_t, uint64_t);
    size_t (*first_fault)(const uint8_t *, size_t, uint64_t, unsigned *);
};

static const size_t sizes[] = {16, 17, 23, 64, 71, 72, 79, 80, 1400, 1403, 4096, 65507, 131072};

/* A flipped bit at `at`: caught, and found there. */
static void check_flip(const struct payload *pl, uint8_t *msg, size_t size, uint64_t seq, size_t at, int bit)
{
    uint8_t was = msg[at];
    msg[at] ^= (uint8_t)(1u << bit);
    unsigned expected = 0;
    size_t found = pl->first_fault(msg, size, seq, &expected);
    CHECK(!pl->exact(msg, size, seq), "%s, size %zu: bit %d of byte %zu flipped, not caught", pl->name, size, bit,
          at);
    CHECK(found == at && expected == was, "%s, size %zu: flip at %zu found at %zu (expected 0x%02x, was 0x%02x)",
          pl->name, size, at, found, expected, was);
    msg[at] = was;
}

static void check_payload(const struct payload *pl)
{
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t size = sizes[k];
        uint8_t *msg = malloc(size), *next = malloc(size);
        for (uint64_t seq = 0; seq < 3; seq++) {
            uint64_t num = seq ? seq * 0x10001ull + 7 : 0;
            pl->fill(msg, size, num);
            pl->fill(next, size, num + 1);
            unsigned expected;
            CHECK(pl->exact(msg, size, num), "%s, size %zu: message %llu as built is not exact", pl->name, size,
                  (unsigned long long)num);
            CHECK(pl->first_fault(msg, size, num, &expected) == size, "%s, size %zu: a fault in an exact message",
                  pl->name, size);
            /* Repeated or out of order: the number is in the first bytes. */
            CHECK(!pl->exact(msg, size, num + 1) && !pl->exact(next, size, num),
                  "%s, size %zu: message %llu passes as its neighbour", pl->name, size, (unsigned long long)num);
            CHECK(pl->first_fault(next, size, num, &expected) == 0, "%s, size %zu: a neighbour's first fault "
                  "is not its number", pl->name, size);
            /* Every byte at small sizes, every bit at the smallest, else a sample. */
            for (size_t at = 0; at < size; at += size <= 4096 ? 1 : 1 + (size_t)rand() % 509)
                for (int bit = 0; bit < 8; bit += size <= 80 ? 1 : 7)
                    check_flip(pl, msg, size, num, at, bit);
            check_flip(pl, msg, size, num, size - 1, 0);
            /* A neighbour's word in place of one of this message's (past the number). */
            for (size_t at = 8; at + 8 <= size; at += size <= 4096 ? 8 : 4096) {
                uint8_t keep[8];
                memcpy(keep, msg + at, 8);
                memcpy(msg + at, next + at, 8);
                CHECK(!pl->exact(msg, size, num), "%s, size %zu: the neighbour's word at %zu passes", pl->name, size,
                      at);
                memcpy(msg + at, keep, 8);
            }
            /* Two words swapped. */
            if (size >= 24) {
                uint8_t a[8];
                memcpy(a, msg + 8, 8);
                memcpy(msg + 8, msg + size - 8, 8);
                memcpy(msg + size - 8, a, 8);
                CHECK(!pl->exact(msg, size, num), "%s, size %zu: two words swapped pass", pl->name, size);
            }
        }
        free(msg);
        free(next);
    }
}

int main(void)
{
    static const struct payload taken = {"the check this CPU takes", netpayload_fill, netpayload_exact,
                                         netpayload_first_fault};
    static const struct payload portable = {"the 16-byte check", portable_fill, portable_exact,
                                            portable_first_fault};
    srand(12345);
    check_payload(&taken);
    check_payload(&portable);
    /* Both build the same bytes: ends of different architectures agree. */
    uint8_t a[1403], b[1403];
    netpayload_fill(a, sizeof a, 99);
    portable_fill(b, sizeof b, 99);
    CHECK(memcmp(a, b, sizeof a) == 0, "the two builds of message 99 differ");
    CHECK(portable_exact(a, sizeof a, 99) && netpayload_exact(b, sizeof b, 99),
          "one check refuses the other's message");
    return check_verdict("netpayload");
}
