/*
 * rtvb-probe: the target-side measurement binary of rtvbench.
 * One static executable, libc only; subcommands print JSON Lines
 * (docs/probe-output.md).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "probe.h"

struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct subcommand subcommands[] = {
    {"latency", cmd_latency, "timer wake-up latency and jitter (cyclictest-class)"},
    {"sysinfo", cmd_sysinfo, "fingerprint of the environment, one JSON record"},
    {"work", cmd_work, "self-verifying CPU workloads (MiBench-, Dhrystone-, Whetstone-, Linpack-class)"},
    {"mem-lat", cmd_mem_lat, "memory read latency by pointer chasing over working-set sizes"},
    {"mem-bw", cmd_mem_bw, "memory bandwidth: read, write, rmw, memcpy, memset, copy loop"},
    {"mem-alloc", cmd_mem_alloc, "allocate/touch/free cost, first touch vs warm, TLB misses"},
    {"os", cmd_os, "OS primitives: syscalls, signals, fork/exec, faults, files, ctx switch, pipes/sockets"},
    {"ipc", cmd_ipc, "ping-pong round trips by message size, local or between two probes"},
    {"load", cmd_load, "load generators: cpu duty cycle, mem, cache, io, fork, leak, timer, net"},
    {"agent", cmd_agent, "serve the host's agent protocol (run, signal, read) on a socket or port"},
    {"init", cmd_init, "PID 1 of an rtvbench guest: mount, load modules, serve the agent protocol"},
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

int main(int argc, char **argv)
{
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
    const struct subcommand *sub = find_subcommand(argv[1]);
    if (sub)
        return sub->run(argc - 1, argv + 1);
    fprintf(stderr, "rtvb-probe: unknown subcommand '%s'; run 'rtvb-probe --help' for the list.\n", argv[1]);
    return EXIT_USAGE;
}
