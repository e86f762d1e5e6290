/*
 * The bare-metal image's main loop: `ready`, then one request line at a
 * time from the UART, served to the end before the next is read (a running
 * command reads only a signal to end it early: stop.c), with a `tick` every
 * second while it waits (and while a command runs).
 *
 * Requests are the agent protocol's (docs/probe/init.md): `run <id>
 * <arg-hex>...` whose first argument names the command (the image has no
 * programs: `latency`, `mem-lat`, `mem-bw`, `rtos`), `signal` (no command runs while requests are read,
 * so it always names none), `read` (the image has no files) and `poweroff`.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "console.h"
#include "arch.h"
#include "irqlat.h"
#include "membw.h"
#include "memlat.h"
#include "parse.h"
#include "pingpong.h"
#include "rtos.h"
#include "stop.h"
#include "sysinfo.h"

#define LINE_MAX 1024
#define MAX_ARGS 32
#define ARG_MAX 256
#define POLL_NS 1000000ull      /* how often a waiting image looks at the UART: its FIFO holds 16 bytes */
#define TICK_NS 1000000000ull

static void wake_only(uint64_t now)
{
    (void)now;
    timer_off();
}

enum line_state { LINE_OK, LINE_TOO_LONG, LINE_HAS_NUL };

/* The next request line, without its "\n" (and a "\r" before it). A line
 * longer than the buffer is read to its end and dropped. */
static enum line_state read_line(char *line, size_t cap)
{
    size_t n = 0;
    enum line_state state = LINE_OK;
    uint64_t next_tick = clock_ns() + TICK_NS;
    irq_set_timer_handler(wake_only);
    for (;;) {
        int c;
        while ((c = uart_getc()) >= 0) {
            if (c == '\n') {
                if (n && line[n - 1] == '\r')
                    n--;
                line[n] = '\0';
                return state;
            }
            if (n + 1 >= cap)
                state = LINE_TOO_LONG;
            else if (c == 0 && state == LINE_OK)
                state = LINE_HAS_NUL;   /* it would cut the line short unseen */
            else
                line[n++] = (char)c;
        }
        uint64_t now = clock_ns();
        if (now >= next_tick) {
            console_tick(now);
            next_tick = now + TICK_NS;
        }
        irq_mask();
        timer_arm(counter_now() + ns_to_ticks(POLL_NS));
        wait_for_interrupt();
        irq_unmask();
    }
}

static char args_buf[MAX_ARGS][ARG_MAX];

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
} commands[] = {{"latency", irqlat_command}, {"mem-lat", memlat_command}, {"mem-bw", membw_command},
                {"ipc", ipc_command}, {"rtos", rtos_command}, {"sysinfo", sysinfo_command}};

static void bad_request(const char *line, const char *why)
{
    console_log("bad request line '", line, "': ", why, "; ignored.", NULL);
}

static void run(const char *line, char **field, int nfield)
{
    uint64_t id_value;
    if (nfield < 3)
        {
        bad_request(line, "run needs an id and a command");
        return;
    }
    if (parse_u64(field[1], UINT64_MAX, &id_value))
        {
        bad_request(line, "the id is not a decimal number");
        return;
    }
    if (nfield - 2 > MAX_ARGS)
        {
        bad_request(line, "more arguments than the image takes (32)");
        return;
    }
    char *argv[MAX_ARGS];
    int argc = nfield - 2;
    for (int i = 0; i < argc; i++) {
        if (hex_decode(field[i + 2], args_buf[i], ARG_MAX))
            {
        bad_request(line, "an argument is not hex bytes (or '-'), is too long or holds a NUL");
        return;
    }
        argv[i] = args_buf[i];
    }
    console_command(field[1]);
    for (size_t k = 0; k < sizeof commands / sizeof *commands; k++)
        if (!__builtin_strcmp(argv[0], commands[k].name)) {
            stop_watch(field[1]);
            int status = commands[k].run(argc, argv);
            stop_unwatch();
            console_exit(status);
            return;
        }
    console_err("no command '", argv[0], "' on the bare-metal image; it has: latency, mem-lat, mem-bw, ipc, rtos, sysinfo",
                NULL);
    console_exit(127);
}

/* Fields separated by exactly one space, as the protocol has them. */
static int split(char *line, char **field, int max)
{
    int n = 0;
    for (char *p = line;;) {
        if (n == max)
            return -1;
        field[n++] = p;
        while (*p && *p != ' ')
            p++;
        if (!*p)
            return n;
        *p++ = '\0';
    }
}

static void serve(char *line)
{
    static char copy[LINE_MAX];
    char *field[MAX_ARGS + 3];
    size_t i = 0;
    for (; line[i]; i++)
        copy[i] = line[i];
    copy[i] = '\0';
    int n = split(line, field, MAX_ARGS + 3);
    if (n < 0)
        {
        bad_request(copy, "too many fields");
        return;
    }
    for (int k = 0; k < n; k++)
        if (!*field[k])
            {
        bad_request(copy, "an empty field");
        return;
    }
    if (!__builtin_strcmp(field[0], "run"))
        return run(copy, field, n);
    if (!__builtin_strcmp(field[0], "signal"))
        {
        bad_request(copy, n == 3 ? "no command of that id is running" : "signal needs an id and a number");
        return;
    }
    if (!__builtin_strcmp(field[0], "read")) {
        if (n != 3)
            {
        bad_request(copy, "read needs an id and a path");
        return;
    }
        console_command(field[1]);
        console_err("the bare-metal image has no files", NULL);
        console_exit(1);
        return;
    }
    if (!__builtin_strcmp(field[0], "poweroff")) {
        if (n != 1) {
            bad_request(copy, "poweroff takes no field");
            return;
        }
        system_off();
        {
        bad_request(copy, "power off refused by the firmware");
        return;
    }
    }
    bad_request(copy, "unknown verb");
}

int main(void);
int main(void)
{
    static char line[LINE_MAX];
    uart_init();
    irq_init();
    console_ready(clock_ns());
    for (;;) {
        enum line_state state = read_line(line, sizeof line);
        if (state == LINE_TOO_LONG)
            console_log("bad request line longer than 1023 bytes; ignored.", NULL);
        else if (state == LINE_HAS_NUL)
            console_log("bad request line '", line, "': a NUL byte; ignored.", NULL);
        else if (line[0])
            serve(line);
    }
}
