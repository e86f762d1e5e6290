/*
 * jsonw: a minimal JSON Lines writer.
 *
 * Every record the probe prints is one JSON object on one line. A record is
 * built in memory and handed to the output whole: on Linux with a single
 * write(2) so that lines from different threads never interleave and a
 * killed probe never leaves half a line behind (the host parses the stream as
 * it arrives).
 *
 * Building a record (this file's jsonw.c) needs no OS; where the bytes go and
 * where the buffer comes from is the platform's part, the functions marked
 * "Platform" below: jsonw_fd.c on Linux, the console of the bare-metal image.
 *
 *   struct jw w;
 *   jw_record(&w, "result");          // {"type":"result"
 *   jw_int(&w, "count", 42);           // ,"count":42
 *   jw_obj(&w, "over");                // ,"over":{
 *   jw_int(&w, "100000", 3);
 *   jw_end(&w);                        // }
 *   jw_emit(&w);                       // }\n handed to the output
 *
 * Keys are NULL inside arrays. Nesting depth is limited to JW_MAX_DEPTH.
 */
#ifndef RTVB_JSONW_H
#define RTVB_JSONW_H

#include <stddef.h>
#include <stdint.h>

#define JW_MAX_DEPTH 16

struct jw {
    char *buf;
    size_t len, cap;
    int depth;
    int first[JW_MAX_DEPTH];   /* no member written yet at this depth */
    char close[JW_MAX_DEPTH];  /* bracket that closes each open level */
};

/* Start a new record of the given "type" (resets the buffer). */
void jw_record(struct jw *w, const char *type);
/* Close all open containers, append '\n', write the line. Returns 0 or -1. */
int jw_emit(struct jw *w);
/* Platform: give back the record's buffer. */
void jw_free(struct jw *w);

void jw_obj(struct jw *w, const char *key);   /* open {  */
void jw_arr(struct jw *w, const char *key);   /* open [  */
void jw_end(struct jw *w);                    /* close the innermost } or ] */

void jw_str(struct jw *w, const char *key, const char *s); /* NULL s -> null */
void jw_int(struct jw *w, const char *key, int64_t v);
void jw_uint(struct jw *w, const char *key, uint64_t v);
void jw_double(struct jw *w, const char *key, double v);   /* NaN/inf -> null */
void jw_bool(struct jw *w, const char *key, int v);
void jw_null(struct jw *w, const char *key);

/* Platform: room for n more bytes and a NUL after w->len in w->buf (a
 * platform that cannot grow the buffer may output the bytes built so far and
 * start the buffer over: it then owns the line's atomicity). */
void jw_make_room(struct jw *w, size_t n);
/* Platform: output w->buf[0, w->len), a finished line. Returns 0 or -1. */
int jw_write(struct jw *w);

#endif
