#include "jsonw.h"

#include "numfmt.h"

static void put(struct jw *w, const char *s, size_t n)
{
    if (w->len + n + 1 > w->cap)
        jw_make_room(w, n);
    __builtin_memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

static void puts_(struct jw *w, const char *s) { put(w, s, __builtin_strlen(s)); }

static void put_escaped(struct jw *w, const char *s)
{
    put(w, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': put(w, "\\\"", 2); break;
        case '\\': put(w, "\\\\", 2); break;
        case '\n': put(w, "\\n", 2); break;
        case '\r': put(w, "\\r", 2); break;
        case '\t': put(w, "\\t", 2); break;
        default:
            if (*p < 0x20 || *p == 0x7f) {
                static const char hex[] = "0123456789abcdef";
                char esc[6] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15]};
                put(w, esc, sizeof esc);
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
        __builtin_trap();
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
    char b[NUMFMT_INT_MAX];
    member(w, key);
    put(w, b, fmt_int(b, v));
}

void jw_uint(struct jw *w, const char *key, uint64_t v)
{
    char b[NUMFMT_INT_MAX];
    member(w, key);
    put(w, b, fmt_uint(b, v));
}

void jw_double(struct jw *w, const char *key, double v)
{
    char b[NUMFMT_DOUBLE_MAX];
    member(w, key);
    if (__builtin_isnan(v) || __builtin_isinf(v)) {
        puts_(w, "null");
        return;
    }
    /* %.17g round-trips but prints noise; 10 significant digits is far
     * beyond any measurement's precision. */
    put(w, b, fmt_double(b, v));
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
    return jw_write(w);
}
