#include "console.h"

#include <stdarg.h>
#include <stddef.h>

#include "jsonw.h"
#include "numfmt.h"
#include "arch.h"
#include "version.h"

#define ID_MAX 24

static char command_id[ID_MAX];
static char record_buf[1024];
static int record_started;   /* the current record's prefix went out */

static void put_str(const char *s) { uart_puts(s); }

static void put_uint(uint64_t v)
{
    char b[NUMFMT_INT_MAX];
    uart_write(b, fmt_uint(b, v));
}

/* Request lines are echoed in `log`: control bytes would cut the line. */
static void put_printable(const char *s)
{
    for (; *s; s++)
        uart_write(*s >= 0x20 && *s < 0x7f ? s : "?", 1);
}

void console_ready(uint64_t boot_ns)
{
    put_str("ready " RTVB_PROBE_VERSION " ");
    put_uint(boot_ns);
    put_str("\n");
}

void console_tick(uint64_t now_ns)
{
    put_str("tick ");
    put_uint(now_ns);
    put_str("\n");
}

/* The rest of a line: the strings up to a NULL, and the newline. */
static void put_parts(const char *part, va_list ap)
{
    for (const char *p = part; p; p = va_arg(ap, const char *))
        put_printable(p);
    put_str("\n");
}

void console_log(const char *part, ...)
{
    va_list ap;
    va_start(ap, part);
    put_str("log ");
    put_parts(part, ap);
    va_end(ap);
}

void console_command(const char *id)
{
    size_t i = 0;
    for (; id[i] && i + 1 < ID_MAX; i++)
        command_id[i] = id[i];
    command_id[i] = '\0';
}

static void put_prefix(const char *what)
{
    put_str(command_id);
    put_str(what);
}

void console_err(const char *part, ...)
{
    va_list ap;
    va_start(ap, part);
    put_prefix(" err ");
    put_parts(part, ap);
    va_end(ap);
}

void console_exit(int status)
{
    put_prefix(" exit ");
    put_uint((uint64_t)status);
    put_str("\n");
}

static void put_hex(uint64_t v)
{
    char b[19] = "0x";
    for (int i = 0; i < 16; i++)
        b[2 + i] = "0123456789abcdef"[(v >> (60 - 4 * i)) & 15];
    b[18] = '\0';
    put_str(b);
}

void console_fatal(const char *n1, uint64_t v1, const char *n2, uint64_t v2, const char *n3, uint64_t v3)
{
    const char *name[3] = {n1, n2, n3};
    uint64_t value[3] = {v1, v2, v3};
    put_str("\nlog fatal exception:");
    for (int i = 0; i < 3; i++) {
        put_str(" ");
        put_str(name[i]);
        put_str(" ");
        put_hex(value[i]);
    }
    put_str("\n");
}

/* What the record holds so far goes out; the buffer starts over. */
static void flush_record(struct jw *w)
{
    if (!record_started)
        put_prefix(" out ");
    record_started = 1;
    uart_write(w->buf, w->len);
    w->len = 0;
}

void jw_make_room(struct jw *w, size_t n)
{
    if (!w->buf) {
        w->buf = record_buf;
        w->cap = sizeof record_buf;
    }
    if (w->len + n + 1 > w->cap)
        flush_record(w);
    if (n + 1 > w->cap)
        __builtin_trap();   /* no single piece of a record is this long */
}

int jw_write(struct jw *w)
{
    flush_record(w);
    record_started = 0;
    return 0;
}

void jw_free(struct jw *w)
{
    w->buf = NULL;
    w->len = w->cap = 0;
}
