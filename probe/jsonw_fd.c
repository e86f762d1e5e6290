#include "jsonw_fd.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int out_fd = 1;

void jw_set_output_fd(int fd) { out_fd = fd; }
int jw_output_fd(void) { return out_fd; }

void jw_make_room(struct jw *w, size_t n)
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
}

int jw_write(struct jw *w)
{
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
