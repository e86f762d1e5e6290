/*
 * init: the probe as PID 1 of a minimal guest (docs/probe/init.md).
 *
 * rtvbench boots guests from a kernel and an initramfs holding only this
 * binary as /init and, optionally, kernel modules. PID 1 sets up what the
 * commands need (console, /proc, /sys, /dev, /tmp), loads the modules that
 * provide the channel (and the NIC), gives the NIC the address the kernel
 * command line names (rtvb.ip=), finds the virtio-serial port the host named
 * org.rtvbench.0, and serves the agent protocol on it until `poweroff`.
 *
 * The console is all the host can show the user when a boot goes wrong,
 * so every failure is one "rtvb-probe init: ..." line there. PID 1 never
 * exits (the kernel would panic and bury that line): it powers off.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "probe.h"

#define SUB "init"
#define WHO "rtvb-probe init"
#define PORT_NAME "org.rtvbench.0"
#define PORTS_DIR "/sys/class/virtio-ports"
#define PORT_WAIT_NS (10 * 1000000000ull)

#ifndef MODULE_INIT_COMPRESSED_FILE
#define MODULE_INIT_COMPRESSED_FILE 4 /* linux/module.h, 5.17+ */
#endif

/* Diagnostics from before the channel exists: printed on the console at
 * once and sent to the host as `log` lines after `ready`. */
static char early_log[8192];

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    agent_console(WHO, "%s", msg);
    size_t used = strlen(early_log);
    snprintf(early_log + used, sizeof early_log - used, "%s\n", msg);
}

static __attribute__((noreturn)) void power_off(void)
{
    kill(-1, SIGKILL); /* every process but PID 1 */
    sync();
    reboot(RB_POWER_OFF);
    agent_console(WHO, "cannot power off (%s); halting.", strerror(errno));
    reboot(RB_HALT_SYSTEM);
    for (;;)
        pause();
}

static int console_stdio(void)
{
    int fd = open("/dev/console", O_RDWR | O_NOCTTY);
    if (fd < 0)
        return -1;
    for (int std = 0; std < 3; std++)
        if (fd != std)
            dup2(fd, std);
    if (fd > 2)
        close(fd);
    return 0;
}

static void mount_fs(const char *type, const char *dir, unsigned long flags, const char *data)
{
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        say("cannot create %s: %s", dir, strerror(errno));
    /* EBUSY: already mounted (a kernel with CONFIG_DEVTMPFS_MOUNT, a rerun). */
    if (mount(type, dir, type, flags, data) < 0 && errno != EBUSY)
        say("cannot mount %s on %s: %s", type, dir, strerror(errno));
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* What a finit_module errno usually means for someone building an initramfs. */
static const char *module_hint(int err, int compressed)
{
    switch (err) {
    case ENOEXEC: return " (not a module for this kernel: wrong version or architecture?)";
    case ENOENT: return " (a symbol is missing: a module it depends on is absent or later in /modules/order)";
    case EINVAL: return compressed ? " (compressed modules need CONFIG_MODULE_DECOMPRESS)" : "";
    case EKEYREJECTED: return " (module signature rejected)";
    default: return "";
    }
}

/* /modules/order: one file name per line, relative to /modules, in load
 * order. A failure is reported and loading goes on: the port may still
 * appear (built-in driver), and if not, its own message says what is missing. */
static void load_modules(void)
{
    FILE *f = fopen("/modules/order", "re");
    if (!f) {
        if (errno != ENOENT)
            say("cannot read /modules/order: %s", strerror(errno));
        return;
    }
    char name[512];
    while (fgets(name, sizeof name, f)) {
        name[strcspn(name, "\r\n")] = '\0';
        if (!name[0] || name[0] == '#')
            continue;
        char path[600];
        snprintf(path, sizeof path, "/modules/%s", name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            say("module %s: cannot open %s: %s", name, path, strerror(errno));
            continue;
        }
        int compressed = ends_with(name, ".xz") || ends_with(name, ".zst") || ends_with(name, ".gz");
        if (syscall(SYS_finit_module, fd, "", compressed ? MODULE_INIT_COMPRESSED_FILE : 0) < 0 && errno != EEXIST)
            say("module %s: cannot load: %s%s", name, strerror(errno), module_hint(errno, compressed));
        close(fd);
    }
    fclose(f);
}

/* Find the port by name and open /dev/<port>, waiting for the driver to
 * probe it and devtmpfs to create the node. Returns the fd, or -1. */
static int open_port(char *dev, size_t devsize)
{
    uint64_t deadline = mono_ns() + PORT_WAIT_NS;
    int last_err = 0;
    for (;;) {
        DIR *d = opendir(PORTS_DIR);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char path[300], name[64];
            snprintf(path, sizeof path, PORTS_DIR "/%s/name", e->d_name);
            if (read_line(path, name, sizeof name) < 0 || strcmp(name, PORT_NAME))
                continue;
            snprintf(dev, devsize, "/dev/%s", e->d_name);
            int fd = open(dev, O_RDWR | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
            if (fd >= 0) {
                closedir(d);
                return fd;
            }
            last_err = errno;
        }
        if (d)
            closedir(d);
        if (mono_ns() > deadline)
            break;
        nanosleep(&(struct timespec){0, 20 * 1000000}, NULL);
    }
    if (last_err)
        say("cannot open the virtio port %s (%s): %s", PORT_NAME, dev, strerror(last_err));
    else
        say("no virtio console port " PORT_NAME ": the kernel needs CONFIG_VIRTIO_CONSOLE and virtio-pci, "
            "built in or as modules in the initramfs");
    return -1;
}

/* The loopback interface starts down in a fresh kernel, and nothing else
 * here would bring it up: the os/ipc TCP and UDP tests and the net load
 * need it. */
static void loopback_up(void)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
        say("no loopback network (socket: %s): TCP/UDP tests will fail in this guest", strerror(errno));
        return;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "lo");
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0 ||
        (ifr.ifr_flags |= IFF_UP, ioctl(s, SIOCSIFFLAGS, &ifr) < 0))
        say("cannot bring up the loopback interface: %s", strerror(errno));
    close(s);
}

/* rtvb.ip=A.B.C.D/P on the kernel command line: the address the host
 * gave this guest on its network (network = true, docs/targets/qemu.md).
 * Read from /proc/cmdline, since a word with a dot is a module parameter
 * to the kernel and never reaches init's argv. Returns 1 and fills
 * addr/prefix when present and valid, 0 when absent, -1 when malformed. */
static int cmdline_ip(char *text, size_t textsize, struct in_addr *addr, unsigned *prefix)
{
    char line[4096];
    if (read_line("/proc/cmdline", line, sizeof line) < 0)
        return 0;
    /* The last one wins, as for the kernel's own parameters: the campaign's
     * `cmdline` comes after rtvbench's. */
    const char *key = "rtvb.ip=";
    char *p = NULL;
    for (char *at = strstr(line, key); at; at = strstr(at + 1, key))
        if (at == line || at[-1] == ' ')
            p = at;
    if (!p)
        return 0;
    p += strlen(key);
    size_t n = strcspn(p, " ");
    snprintf(text, textsize, "%.*s", (int)n, p);
    char *slash = strchr(text, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    char *end;
    unsigned long len = strtoul(slash + 1, &end, 10);
    int ok = inet_pton(AF_INET, text, addr) == 1 && end != slash + 1 && !*end && len >= 1 && len <= 30;
    *slash = '/';
    *prefix = (unsigned)len;
    return ok ? 1 : -1;
}

/* The guest's one Ethernet interface (the virtio-net NIC): the first in
 * /sys/class/net of type ARPHRD_ETHER (1), waiting for its driver. */
static int find_nic(char *name, size_t namesize)
{
    uint64_t deadline = mono_ns() + PORT_WAIT_NS;
    do {
        DIR *d = opendir("/sys/class/net");
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.' || !strcmp(e->d_name, "lo"))
                continue;
            char path[300], type[16];
            snprintf(path, sizeof path, "/sys/class/net/%s/type", e->d_name);
            size_t len = strlen(e->d_name);
            if (read_line(path, type, sizeof type) == 0 && atoi(type) == 1 && len < namesize) {
                memcpy(name, e->d_name, len + 1);
                closedir(d);
                return 0;
            }
        }
        if (d)
            closedir(d);
        nanosleep(&(struct timespec){0, 20 * 1000000}, NULL);
    } while (mono_ns() < deadline);
    return -1;
}

/* Give the NIC the address from rtvb.ip= and bring it up: the kernel then
 * adds the route to the subnet itself. ioctls rather than netlink: three
 * fixed-size requests, no message to build. A failure is said and the boot
 * goes on: the channel works without a network, and the host's round trips
 * fail with the guest's log beside them. */
static void network_up(void)
{
    char text[64];
    struct in_addr addr;
    unsigned prefix = 0;
    int found = cmdline_ip(text, sizeof text, &addr, &prefix);
    if (found == 0)
        return;
    if (found < 0) {
        say("rtvb.ip=%s is not ADDRESS/PREFIX (an IPv4 address, a prefix length 1-30): no network", text);
        return;
    }
    char nic[IFNAMSIZ];
    if (find_nic(nic, sizeof nic) < 0) {
        say("rtvb.ip=%s but no network interface appeared: the kernel needs CONFIG_VIRTIO_NET, built in "
            "or as a module in the initramfs", text);
        return;
    }
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
        say("cannot configure %s (socket: %s)", nic, strerror(errno));
        return;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, nic, sizeof ifr.ifr_name); /* find_nic: NUL-terminated within IFNAMSIZ */
    struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
    sin->sin_family = AF_INET;
    sin->sin_addr = addr;
    const char *what = "address";
    int rc = ioctl(s, SIOCSIFADDR, &ifr);
    if (rc == 0) {
        what = "netmask";
        sin->sin_family = AF_INET;
        sin->sin_addr.s_addr = htonl(~0u << (32 - prefix));
        rc = ioctl(s, SIOCSIFNETMASK, &ifr);
    }
    if (rc == 0) {
        what = "flags";
        rc = ioctl(s, SIOCGIFFLAGS, &ifr);
        ifr.ifr_flags |= IFF_UP;
        if (rc == 0)
            rc = ioctl(s, SIOCSIFFLAGS, &ifr);
    }
    if (rc < 0)
        say("cannot set the %s of %s to %s: %s", what, nic, text, strerror(errno));
    else
        agent_console(WHO, "network: %s is %s.", nic, text);
    close(s);
}

int cmd_init(int argc, char **argv)
{
    if (getpid() != 1) {
        if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
            printf("usage: rtvb-probe init   (only as PID 1, the /init of an rtvbench guest)\n"
                   "Mount /proc, /sys, /dev, /tmp, load /modules/order, open the virtio port\n"
                   PORT_NAME " and serve the agent protocol (docs/probe/init.md) until poweroff.\n"
                   "To serve the protocol elsewhere, use 'rtvb-probe agent'.\n");
            return EXIT_OK;
        }
        /* Mounting over / and powering off are not for a host's shell. */
        return usage_error(SUB, "runs only as PID 1 (the /init of a guest); to serve the protocol "
                                "on this machine use 'rtvb-probe agent --fd N' or '--channel PATH'.");
    }
    /* First thing as PID 1: when the kernel handed over, for the boot's phases (docs/probe/init.md). */
    struct timespec started;
    clock_gettime(CLOCK_BOOTTIME, &started);
    /* As PID 1, arguments are words of the kernel command line: ignored. */
    int have_console = console_stdio() == 0;
    umask(022);
    if (chdir("/") < 0)
        say("cannot change to /: %s", strerror(errno));
    setenv("PATH", "/bin:/sbin:/usr/bin:/usr/sbin", 0);

    mount_fs("devtmpfs", "/dev", MS_NOSUID, "mode=0755");
    /* No node in the initramfs: devtmpfs has one. Without any console, go on
     * silently (the channel may still work) with 0-2 taken, so that no
     * command pipe lands on them. */
    if (!have_console && console_stdio() < 0)
        for (int std = 0; std < 3; std++)
            if (fcntl(std, F_GETFD) < 0)
                open("/dev/null", O_RDWR);
    mount_fs("proc", "/proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    mount_fs("sysfs", "/sys", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    mount_fs("tmpfs", "/tmp", MS_NOSUID | MS_NODEV, "mode=1777");
    load_modules();
    loopback_up();
    network_up();

    char dev[300] = "";
    int fd = open_port(dev, sizeof dev);
    if (fd >= 0) {
        struct timespec bt;
        clock_gettime(CLOCK_BOOTTIME, &bt);
        agent_console(WHO, "serving on %s, %.3f s after boot.", dev, (double)ts_ns(&bt) / 1e9);
        struct agent_config cfg = {.fd = fd, .pid1 = 1, .who = WHO, .early_log = early_log,
                                   .init_ns = ts_ns(&started)};
        if (agent_serve(&cfg) == 0)
            agent_console(WHO, "powering off.");
    }
    power_off();
}
