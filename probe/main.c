/*
 * rtvb-probe: the target-side measurement binary of rtvbench.
 * One static executable, libc only; subcommands print JSON Lines
 * (docs/probe-output.md).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "opts.h"
#include "probe.h"

struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    int campaign;   /* run by a campaign: --check-args and --describe-options apply */
};

static const struct subcommand subcommands[] = {
    {"latency", cmd_latency, "timer wake-up latency and jitter (cyclictest-class)", 1},
    {"noise", cmd_noise, "OS noise: time a busy CPU loses to interruptions (oslat-class)", 1},
    {"sysinfo", cmd_sysinfo, "fingerprint of the environment, one JSON record", 0},
    {"work", cmd_work, "self-verifying CPU workloads (MiBench-, Dhrystone-, Whetstone-, Linpack-class)", 1},
    {"mem-lat", cmd_mem_lat, "memory read latency by pointer chasing over working-set sizes", 1},
    {"mem-bw", cmd_mem_bw, "memory bandwidth: read, write, rmw, memcpy, memset, copy loop", 1},
    {"mem-alloc", cmd_mem_alloc, "allocate/touch/free cost, first touch vs warm, TLB misses", 1},
    {"os", cmd_os, "OS primitives: syscalls, signals, fork/exec, faults, files, ctx switch, pipes/sockets", 1},
    {"ipc", cmd_ipc, "ping-pong round trips by message size, local or between two probes", 1},
    {"network", cmd_network, "streaming throughput between two probes over tcp or udp, and its CPU cost", 1},
    {"rtos", cmd_rtos, "RTOS-like primitives at a fixed priority: activation, semaphores, mutexes, queues", 1},
    {"load", cmd_load, "load generators: cpu duty cycle, mem, cache, io, fork, leak, timer, net", 1},
    {"kernel-tracer", cmd_kernel_tracer, "the kernel's timerlat or osnoise tracer, summarised per CPU", 1},
    {"sample", cmd_sample, "thermal zones, CPU frequencies, throttle counters over time (beside a measurement)", 0},
    {"agent", cmd_agent, "serve the host's agent protocol (run, signal, read) on a socket or port", 0},
    {"init", cmd_init, "PID 1 of an rtvbench guest: mount, load modules, serve the agent protocol", 0},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: rtvb-probe <subcommand> [options]   (rtvb-probe <subcommand> --help)\n\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof *subcommands; i++)
        fprintf(f, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
}

static const struct subcommand *find_subcommand(const char *name)
{
    for (size_t i = 0; i < sizeof subcommands / sizeof *subcommands; i++)
        if (!strcmp(name, subcommands[i].name))
            return &subcommands[i];
    return NULL;
}

/* `--check-args SUB ARGS...`: exit 0 when SUB would accept ARGS on any machine,
 * else its usage error (exit 2); `--describe-options SUB`: SUB's option table as
 * JSON Lines. Neither measures anything; the host's tests use both to hold a
 * campaign's validation to the probe's own ranges. */
static int check_or_describe(int argc, char **argv)
{
    const struct subcommand *sub = argc > 2 ? find_subcommand(argv[2]) : NULL;
    if (!sub || !sub->campaign) {
        fprintf(stderr, "rtvb-probe: %s needs a subcommand a campaign runs (latency, noise, work, mem-lat, "
                        "mem-bw, mem-alloc, os, ipc, network, rtos, load or kernel-tracer).\n", argv[1]);
        return EXIT_USAGE;
    }
    opts_mode = !strcmp(argv[1], "--check-args") ? OPTS_CHECK : OPTS_DESCRIBE;
    return sub->run(argc - 2, argv + 2);
}

/* RTVB_DIE_WITH=<pid>: the kernel kills the probe when process <pid>, its parent, ends, so a runner
 * killed mid-measurement never leaves a real-time thread spinning. The host asks for it here rather
 * than between its fork and exec, which would cost it a plain fork instead of a vfork. Checked
 * against getppid() after the prctl: a parent gone before it is noticed, not missed. The variable
 * goes no further (a probe the probe execs has another parent). */
static void die_with_parent(void)
{
    const char *pid = getenv("RTVB_DIE_WITH");
    if (!pid)
        return;
    pid_t parent = (pid_t)strtol(pid, NULL, 10);
    unsetenv("RTVB_DIE_WITH");
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        raise(SIGKILL);
}

int main(int argc, char **argv)
{
    die_with_parent();
    /* Started by the kernel as /init: any arguments are leftover words of
     * the kernel command line, not a subcommand. */
    if (getpid() == 1 && (argc < 2 || !find_subcommand(argv[1])))
        return cmd_init(argc, argv);
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("rtvb-probe %s (schema %d)\n", RTVB_PROBE_VERSION, RTVB_SCHEMA_VERSION);
        return EXIT_OK;
    }
    if (!strcmp(argv[1], "--check-args") || !strcmp(argv[1], "--describe-options"))
        return check_or_describe(argc, argv);
    const struct subcommand *sub = find_subcommand(argv[1]);
    if (sub)
        return sub->run(argc - 1, argv + 1);
    fprintf(stderr, "rtvb-probe: unknown subcommand '%s'; run 'rtvb-probe --help' for the list.\n", argv[1]);
    return EXIT_USAGE;
}
