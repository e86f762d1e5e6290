/*
 * The image serves one request at a time and reads none while a command
 * runs, except here: between activations or measured points a command
 * polls the UART's receive side, off the interrupt path, and assembles what
 * came into a line. `signal <id> 2` or `15` for the running command asks it
 * to end with its results so far; any other line is answered with `log`
 * and ignored, since no other request can be served before the command ends.
 */
#include "stop.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "clock.h"
#include "console.h"
#include "parse.h"

#define STOP_LINE_MAX 128
#define ID_MAX 32
#define RESIDUE_WAIT_NS 10000000ull   /* a line's rest is on the wire once its start is here */

static char running[ID_MAX];
static char line[STOP_LINE_MAX];
static size_t len;
static bool too_long;
static int requested;

void stop_watch(const char *id)
{
    size_t i = 0;
    for (; id[i] && i + 1 < ID_MAX; i++)
        running[i] = id[i];
    running[i] = '\0';
    len = 0;
    too_long = false;
    requested = 0;
}

static void take_line(void)
{
    line[len] = '\0';
    if (too_long) {
        console_log("bad request line longer than the image reads while a command runs; ignored.", NULL);
        return;
    }
    if (__builtin_strncmp(line, "signal ", 7)) {
        console_log("bad request line '", line, "': a command runs, and the image serves one request at a time; "
                    "ignored.", NULL);
        return;
    }
    char *id = line + 7, *number = id;
    while (*number && *number != ' ')
        number++;
    uint64_t n;
    bool has_number = *number != '\0';
    if (has_number)
        *number++ = '\0';
    if (!has_number || parse_u64(number, 64, &n)) {
        console_log("bad request line 'signal ", id, "': signal needs an id and a number; ignored.", NULL);
        return;
    }
    if (__builtin_strcmp(id, running)) {
        console_log("bad request line 'signal ", id, " ", number, "': no command of that id is running; ignored.",
                    NULL);
        return;
    }
    if (n != 2 && n != 15) {
        console_log("signal ", number, " to command ", id, " ignored: the image ends a run early on 2 or 15 only.",
                    NULL);
        return;
    }
    if (!requested)
        requested = (int)n;
}

int stop_requested(void)
{
    int c;
    while ((c = uart_getc()) >= 0) {
        if (c == '\n') {
            if (len && line[len - 1] == '\r')
                len--;
            take_line();
            len = 0;
            too_long = false;
        } else if (len + 1 < STOP_LINE_MAX) {
            line[len++] = (char)c;
        } else {
            too_long = true;
        }
    }
    return requested;
}

void stop_unwatch(void)
{
    uint64_t until = clock_ns() + RESIDUE_WAIT_NS;
    while (len && clock_ns() < until)
        stop_requested();
    len = 0;
    running[0] = '\0';
}
