/*
 * `sysinfo` on the bare-metal image: a `meta`, one `sysinfo` record and
 * `end`, as the Linux probe's, with what a machine without an OS has to
 * say of itself: the arch and board, the counter's frequency and where it
 * came from, how the image was entered, the MMU and caches, the memory
 * area mem-lat and mem-bw measure in, and the image's version. The CPU
 * keys say the one CPU the image runs on, as a Linux probe's list reads.
 */
#include "sysinfo.h"

#include <stdint.h>

#include "arch.h"
#include "board.h"
#include "clock.h"
#include "jsonw.h"
#include "records.h"
#include "version.h"

#define SUB "sysinfo"

int sysinfo_command(int argc, char **argv)
{
    if (argc > 1)
        return record_usage(SUB, "unknown option", argv[1], "the image's sysinfo takes no option.");
    uint64_t start = clock_ns();
    struct jw w = {0};
    record_meta_begin(&w, SUB, argc, argv);
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);

    w = (struct jw){0};
    jw_record(&w, "sysinfo");
    jw_str(&w, "platform", "baremetal");
    jw_str(&w, "machine", ARCH_NAME);
    jw_str(&w, "board", BOARD_NAME);
    jw_str(&w, "image_version", RTVB_PROBE_VERSION);
    jw_uint(&w, "counter_hz", counter_hz());
    arch_write_meta(&w);
    arch_write_sysinfo(&w);
    jw_uint(&w, "mem_area_bytes", BOARD_MEM_AREA_BYTES);
    jw_str(&w, "cpus_online", "0");
    jw_int(&w, "cpus_online_count", 1);
    jw_str(&w, "cpus_allowed", "0");
    jw_int(&w, "cpus_allowed_count", 1);
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);
    record_end(clock_ns() - start);
    return 0;
}
