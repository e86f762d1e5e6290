#include "jsonw.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int out_fd = 1;

void jw_set_output_fd(int fd) { out_fd = fd; }
int jw_output_fd(void) { return out_fd; }

static void put(struct jw *w, const char *s, size_t n)
{
    if (w->len + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 512;
        while (w->len + n + 1 > cap)
            cap *= 2;
        char *nb = realloc(w->buf, cap);
        if (!nb) {
            /* Out of memory while building output: nothing sane is left to do. */
            static const char msg[] = "rtvb-probe: out of memory\n";
            (void)!write(2, msg, sizeof msg - 1);
            _exit(3);
        }
        w->buf = nb;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

static void puts_(struct jw *w, const char *s) { put(w, s, strlen(s)); }

static void put_escaped(struct jw *w, const char *s)
{
    put(w, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        switch (*p) {
        case '"': put(w, "\\\"", 2); break;
        case '\\': put(w, "\\\\", 2); break;
        case '\n': put(w, "\\n", 2); break;
        case '\r': put(w, "\\r", 2); break;
        case '\t': put(w, "\\t", 2); break;
        default:
            if (*p < 0x20 || *p == 0x7f) {
                snprintf(esc, sizeof esc, "\\u%04x", *p);
                puts_(w, esc);
            } else {
                put(w, (const char *)p, 1);
            }
        }
    }
    put(w, "\"", 1);
}

/* Comma handling and the "key": prefix shared by every member writer. */
static void member(struct jw *w, const char *key)
{
    if (!w->first[w->depth])
        put(w, ",", 1);
    w->first[w->depth] = 0;
    if (key) {
        put_escaped(w, key);
        put(w, ":", 1);
    }
}

void jw_record(struct jw *w, const char *type)
{
    w->len = 0;
    w->depth = 0;
    put(w, "{", 1);
    w->first[0] = 1;
    jw_str(w, "type", type);
}

static void open_(struct jw *w, const char *key, char open, char close)
{
    member(w, key);
    put(w, &open, 1);
    /* Deeper nesting than any record needs is a programming error; stay
     * well-formed by refusing to go deeper rather than corrupting state. */
    if (w->depth + 1 >= JW_MAX_DEPTH)
        abort();
    w->depth++;
    w->first[w->depth] = 1;
    w->close[w->depth] = close;
}

void jw_obj(struct jw *w, const char *key) { open_(w, key, '{', '}'); }
void jw_arr(struct jw *w, const char *key) { open_(w, key, '[', ']'); }

void jw_end(struct jw *w)
{
    if (w->depth == 0)
        return;
    put(w, &w->close[w->depth], 1);
    w->depth--;
}

void jw_str(struct jw *w, const char *key, const char *s)
{
    member(w, key);
    if (s)
        put_escaped(w, s);
    else
        puts_(w, "null");
}

void jw_int(struct jw *w, const char *key, int64_t v)
{
    char b[32];
    member(w, key);
    snprintf(b, sizeof b, "%lld", (long long)v);
    puts_(w, b);
}

void jw_uint(struct jw *w, const char *key, uint64_t v)
{
    char b[32];
    member(w, key);
    snprintf(b, sizeof b, "%llu", (unsigned long long)v);
    puts_(w, b);
}

void jw_double(struct jw *w, const char *key, double v)
{
    char b[40];
    member(w, key);
    if (isnan(v) || isinf(v)) {
        puts_(w, "null");
        return;
    }
    /* %.17g round-trips but prints noise; 10 significant digits is far
     * beyond any measurement's precision. */
    snprintf(b, sizeof b, "%.10g", v);
    puts_(w, b);
}

void jw_bool(struct jw *w, const char *key, int v)
{
    member(w, key);
    puts_(w, v ? "true" : "false");
}

void jw_null(struct jw *w, const char *key)
{
    member(w, key);
    puts_(w, "null");
}

int jw_emit(struct jw *w)
{
    while (w->depth > 0)
        jw_end(w);
    put(w, "}\n", 2);
    size_t off = 0;
    while (off < w->len) {
        ssize_t n = write(out_fd, w->buf + off, w->len - off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        off += (size_t)n;
    }
    return 0;
}

void jw_free(struct jw *w)
{
    free(w->buf);
    w->buf = NULL;
    w->len = w->cap = 0;
}

void jw_warning(const char *code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct jw w = {0};
    jw_record(&w, "warning");
    jw_str(&w, "code", code);
    jw_str(&w, "message", msg);
    jw_emit(&w);
    jw_free(&w);
}
