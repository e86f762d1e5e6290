/*
 * sysinfo: one JSON record fingerprinting the environment a measurement runs
 * in (kernel, preemption model, hypervisor, CPUs, power management, memory,
 * cgroup limits), so that results from different environments can be told
 * apart and a surprising number can be traced to its configuration.
 *
 * Rule: every field comes from a named source (a file, a system call, a CPU
 * instruction). When the source is missing or unreadable the field is null;
 * nothing is inferred from defaults. docs/probe-output.md lists the fields.
 */
#include "opts.h"
#include "probe.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define HAVE_CPUID 1
#endif

/* Largest file read; /proc/cpuinfo of a many-core machine is a few hundred KiB. */
#define MAX_FILE_BYTES (4u << 20)
#define SYS_CPU "/sys/devices/system/cpu"

/* ------------------------------------------------------------------------ */
/* Reading files                                                             */

/* The whole file, NUL-terminated, in a malloc'd buffer; *len (if not NULL)
 * gets the byte count, which matters for files holding NULs themselves
 * (/proc/1/environ). NULL when the file cannot be read. sysfs and procfs
 * files report a meaningless size, so read until EOF instead of stat()ing. */
static char *read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *nb = cap < MAX_FILE_BYTES ? realloc(buf, cap * 2) : NULL;
            if (!nb)
                break; /* too large or out of memory: keep what we have */
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(buf);
            buf = NULL;
            break;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (!buf)
        return NULL;
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

/* Strip trailing whitespace and NULs (device-tree strings end in '\0',
 * sysfs values in '\n'). */
static void trim_right(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
}

/* The file's text up to its first NUL, without trailing whitespace; NULL
 * when it cannot be read. */
static char *read_file_trimmed(const char *path)
{
    char *s = read_file(path, NULL);
    if (s)
        trim_right(s);
    return s;
}

/* Strict signed integer: the whole string, nothing else. */
static int parse_i64(const char *s, int64_t *out)
{
    char *end;
    if (!s || !*s)
        return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end)
        return -1;
    *out = v;
    return 0;
}

static int read_file_i64(const char *path, int64_t *out)
{
    char *s = read_file_trimmed(path);
    int rc = parse_i64(s, out);
    free(s);
    return rc;
}

/* key: the file's trimmed text, or null. */
static void emit_file_str(struct jw *w, const char *key, const char *path)
{
    char *s = read_file_trimmed(path);
    jw_str(w, key, s);
    free(s);
}

/* key: the file's integer value, or null when missing or not an integer. */
static void emit_file_int(struct jw *w, const char *key, const char *path)
{
    int64_t v;
    if (read_file_i64(path, &v) == 0)
        jw_int(w, key, v);
    else
        jw_null(w, key);
}

/* ------------------------------------------------------------------------ */
/* Small text helpers                                                        */

/* The selected word of a sysfs selector, marked by the open/close characters:
 * "always [madvise] never" -> "madvise" for '[' ']'. Copied into out; NULL
 * when nothing is marked. */
static const char *selected_choice(const char *s, char open, char close, char *out, size_t size)
{
    const char *o = s ? strchr(s, open) : NULL;
    const char *c = o ? strchr(o, close) : NULL;
    if (!c || (size_t)(c - o - 1) >= size)
        return NULL;
    memcpy(out, o + 1, (size_t)(c - o - 1));
    out[c - o - 1] = '\0';
    return out;
}

static const char *bracketed_choice(const char *s, char *out, size_t size)
{
    return selected_choice(s, '[', ']', out, size);
}

/* Whether the space-separated list s holds exactly the word (so that
 * "PREEMPT" does not match inside "PREEMPT_DYNAMIC"). */
static int has_word(const char *s, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = s; (p = strstr(p, word)) != NULL; p += n) {
        int starts = p == s || isspace((unsigned char)p[-1]);
        int ends = p[n] == '\0' || isspace((unsigned char)p[n]);
        if (starts && ends)
            return 1;
    }
    return 0;
}

/* Value of the first "key<tabs>: value" line of /proc/cpuinfo-style text,
 * malloc'd; NULL if no line has that key. */
static char *colon_field(const char *text, const char *key)
{
    size_t klen = strlen(key);
    for (const char *line = text; line && *line;) {
        const char *eol = strchr(line, '\n');
        size_t llen = eol ? (size_t)(eol - line) : strlen(line);
        const char *colon = memchr(line, ':', llen);
        if (colon) {
            size_t k = (size_t)(colon - line);
            while (k > 0 && isspace((unsigned char)line[k - 1]))
                k--;
            if (k == klen && !strncmp(line, key, klen)) {
                const char *v = colon + 1;
                while (v < line + llen && isspace((unsigned char)*v))
                    v++;
                char *out = strndup(v, (size_t)(line + llen - v));
                if (out)
                    trim_right(out);
                return out;
            }
        }
        line = eol ? eol + 1 : NULL;
    }
    return NULL;
}

/* "0-3,6" from a sorted CPU array, the format of the kernel's CPU lists. */
static void format_cpu_list(const int *cpus, int n, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && len < size;) {
        int j = i;
        while (j + 1 < n && cpus[j + 1] == cpus[j] + 1)
            j++;
        int r = j > i ? snprintf(buf + len, size - len, "%s%d-%d", len ? "," : "", cpus[i], cpus[j])
                      : snprintf(buf + len, size - len, "%s%d", len ? "," : "", cpus[i]);
        if (r < 0)
            break;
        len += (size_t)r;
        i = j + 1;
    }
}

/* ------------------------------------------------------------------------ */
/* Kernel and preemption model                                               */

/* Whether the kernel config text sets the option to y ("CONFIG_PREEMPT"
 * must not match "CONFIG_PREEMPT_RT=y"). */
static int config_enabled(const char *config, const char *option)
{
    char line[64];
    snprintf(line, sizeof line, "\n%s=y\n", option);
    return config && strstr(config, line) != NULL;
}

/* The preempt= boot parameter of a PREEMPT_DYNAMIC kernel, or NULL. */
static const char *boot_preempt_mode(const char *cmdline)
{
    static const char *const modes[] = {"none", "voluntary", "full", "lazy"};
    char word[32];
    for (size_t i = 0; cmdline && i < sizeof modes / sizeof *modes; i++) {
        snprintf(word, sizeof word, "preempt=%s", modes[i]);
        if (has_word(cmdline, word))
            return modes[i];
    }
    return NULL;
}

/* Preemption model and the source that decided it, most direct first:
 *  1. /sys/kernel/realtime = 1 exists only on PREEMPT_RT kernels;
 *  2. debugfs sched/preempt lists the PREEMPT_DYNAMIC modes with the one in
 *     effect in parentheses, "none voluntary (full) lazy" (root only);
 *  3. uname -v carries the build's strongest flag (init/Makefile keeps one):
 *     PREEMPT_RT, PREEMPT_DYNAMIC, PREEMPT (full or lazy), or none of them
 *     (voluntary or none);
 *  4. /boot/config-<release> only refines what uname -v allows — lazy
 *     within PREEMPT, voluntary/none without a flag — since a config file
 *     can be stale while uname -v is the running kernel's own.
 * A dynamic kernel's mode can change at run time; without debugfs only a
 * preempt= boot parameter names it, otherwise the model is "dynamic". */
static void emit_preempt(struct jw *w, const struct utsname *u, const char *cmdline)
{
    const char *model = NULL, *source = NULL;
    char mode[48], path[300];
    char *s;

    s = read_file_trimmed("/sys/kernel/realtime");
    if (s && !strcmp(s, "1")) {
        model = "rt";
        source = "/sys/kernel/realtime";
    }
    free(s);

    if (!model) {
        char choice[24];
        s = read_file_trimmed("/sys/kernel/debug/sched/preempt");
        if (selected_choice(s, '(', ')', choice, sizeof choice)) {
            snprintf(mode, sizeof mode, "dynamic:%s", choice);
            model = mode;
            source = "/sys/kernel/debug/sched/preempt";
        }
        free(s);
    }

    if (!model) {
        snprintf(path, sizeof path, "/boot/config-%s", u->release);
        char *raw = read_file(path, NULL);
        size_t n = raw ? strlen(raw) : 0;
        /* Framed in newlines so that config_enabled() matches whole lines,
         * the first and the last included. */
        char *config = raw ? malloc(n + 3) : NULL;
        if (config)
            snprintf(config, n + 3, "\n%s\n", raw);
        free(raw);

        if (has_word(u->version, "PREEMPT_RT")) {
            model = "rt";
            source = "uname";
        } else if (has_word(u->version, "PREEMPT_DYNAMIC")) {
            const char *boot = boot_preempt_mode(cmdline);
            if (boot) {
                snprintf(mode, sizeof mode, "dynamic:%s", boot);
                model = mode;
                source = "/proc/cmdline";
            } else {
                model = "dynamic";
                source = "uname";
            }
        } else if (has_word(u->version, "PREEMPT")) {
            int lazy = config_enabled(config, "CONFIG_PREEMPT_LAZY");
            model = lazy ? "lazy" : "full";
            source = lazy ? "/boot/config" : "uname";
        } else if (config_enabled(config, "CONFIG_PREEMPT_VOLUNTARY")) {
            model = "voluntary";
            source = "/boot/config";
        } else if (config_enabled(config, "CONFIG_PREEMPT_NONE")) {
            model = "none";
            source = "/boot/config";
        }
        free(config);
    }
    jw_str(w, "preempt_model", model);
    jw_str(w, "preempt_source", source);
}

/* ------------------------------------------------------------------------ */
/* Hypervisor and container                                                  */

/* CPUID leaf 1 ECX bit 31 is set by every mainstream hypervisor for its
 * guests; leaf 0x40000000 then carries the hypervisor's vendor signature.
 * Without the bit that leaf is undefined, so the vendor stays null. */
static void emit_cpuid(struct jw *w)
{
#ifdef HAVE_CPUID
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) {
        jw_null(w, "cpuid_bit");
        jw_null(w, "cpuid_vendor");
        return;
    }
    int bit = (int)((c >> 31) & 1u);
    jw_bool(w, "cpuid_bit", bit);
    if (!bit) {
        jw_null(w, "cpuid_vendor");
        return;
    }
    char vendor[13];
    __cpuid(0x40000000, a, b, c, d);
    memcpy(vendor, &b, 4);
    memcpy(vendor + 4, &c, 4);
    memcpy(vendor + 8, &d, 4);
    vendor[12] = '\0'; /* "KVMKVMKVM" is padded with NULs */
    jw_str(w, "cpuid_vendor", vendor);
#else
    jw_null(w, "cpuid_bit");
    jw_null(w, "cpuid_vendor");
#endif
}

/* Value of "container=" in PID 1's environment, the variable container
 * managers (systemd-nspawn, LXC, podman) set for the init they start.
 * Readable only with the privilege to inspect PID 1. */
static char *pid1_container_env(void)
{
    size_t len;
    char *env = read_file("/proc/1/environ", &len);
    char *found = NULL;
    for (size_t i = 0; env && i < len; i += strlen(env + i) + 1)
        if (!strncmp(env + i, "container=", 10) && env[i + 10])
            found = strdup(env + i + 10);
    free(env);
    return found;
}

/* Container runtime name and the evidence; both stay NULL without evidence,
 * which does not prove the absence of a container. */
static void detect_container(char **name, const char **source)
{
    *name = pid1_container_env();
    if (*name) {
        *source = "/proc/1/environ";
        return;
    }
    /* systemd writes the detected runtime here when it runs in one. */
    *name = read_file_trimmed("/run/systemd/container");
    if (*name && **name) {
        *source = "/run/systemd/container";
        return;
    }
    free(*name);
    *name = NULL;

    static const struct { const char *path, *name; } marker_files[] = {
        {"/run/.containerenv", "podman"},
        {"/.dockerenv", "docker"},
    };
    for (size_t i = 0; i < sizeof marker_files / sizeof *marker_files; i++) {
        if (access(marker_files[i].path, F_OK) == 0) {
            *name = strdup(marker_files[i].name);
            *source = marker_files[i].path;
            return;
        }
    }

    /* Without a cgroup namespace, PID 1's cgroup path names the runtime
     * (cgroupfs driver "/docker/<id>", systemd driver "docker-<id>.scope"). */
    static const struct { const char *pattern, *name; } cgroup_paths[] = {
        {"/docker/", "docker"},       {"/docker-", "docker"}, {"/libpod-", "podman"},
        {"/kubepods", "kubernetes"}, {"/lxc/", "lxc"},       {"/lxc.payload", "lxc"},
    };
    char *cg = read_file("/proc/1/cgroup", NULL);
    for (size_t i = 0; cg && i < sizeof cgroup_paths / sizeof *cgroup_paths; i++) {
        if (strstr(cg, cgroup_paths[i].pattern)) {
            *name = strdup(cgroup_paths[i].name);
            *source = "/proc/1/cgroup";
            break;
        }
    }
    free(cg);
}

static void emit_hypervisor(struct jw *w)
{
    jw_obj(w, "hypervisor");
    emit_cpuid(w);
    emit_file_str(w, "sys_hypervisor_type", "/sys/hypervisor/type");
    emit_file_str(w, "dmi_sys_vendor", "/sys/class/dmi/id/sys_vendor");
    emit_file_str(w, "dmi_product_name", "/sys/class/dmi/id/product_name");

    /* Device tree (ARM, RISC-V): the board or virtual machine model, and the
     * node a hypervisor such as Xen adds for its guests. */
    char *model = read_file_trimmed("/proc/device-tree/model");
    if (!model)
        model = read_file_trimmed("/sys/firmware/devicetree/base/model");
    jw_str(w, "dt_model", model);
    free(model);
    emit_file_str(w, "dt_hypervisor_compatible", "/proc/device-tree/hypervisor/compatible");

    char *container;
    const char *source = NULL;
    detect_container(&container, &source);
    jw_str(w, "container", container);
    jw_str(w, "container_source", source);
    free(container);
    jw_end(w);
}

/* ------------------------------------------------------------------------ */
/* CPUs                                                                      */

/* CPU model from /proc/cpuinfo. x86 and 32-bit ARM have "model name" (old
 * ARM kernels "Processor"); arm64 only numbers the core (implementer and
 * part); RISC-V names the micro-architecture and ISA. */
static void emit_cpu_model(struct jw *w)
{
    char *info = read_file("/proc/cpuinfo", NULL);
    static const char *const model_keys[] = {"model name", "Processor", "cpu model", "uarch"};
    char *model = NULL;
    for (size_t i = 0; info && !model && i < sizeof model_keys / sizeof *model_keys; i++)
        model = colon_field(info, model_keys[i]);
    jw_str(w, "cpu_model", model);
    free(model);

    static const char *const fields[][2] = {
        {"cpu_implementer", "CPU implementer"},
        {"cpu_part", "CPU part"},
        {"cpu_isa", "isa"},
    };
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        char *v = info ? colon_field(info, fields[i][1]) : NULL;
        jw_str(w, fields[i][0], v);
        free(v);
    }
    free(info);
}

/* A kernel CPU list file as printed, "" for no CPU. "(null)" is how the
 * kernel prints a mask it never allocated (nohz_full with CPUMASK_OFFSTACK
 * and no nohz_full= parameter), which also means no CPU. */
static void emit_cpu_list_file(struct jw *w, const char *key, const char *path)
{
    char *s = read_file_trimmed(path);
    if (s && !strcmp(s, "(null)"))
        s[0] = '\0';
    jw_str(w, key, s);
    free(s);
}

/* cpufreq: the driver (of the first online CPU) and the governor of every
 * online CPU that has one, as an object keyed by CPU number; null when no
 * CPU has cpufreq (common in guests). */
static void emit_cpufreq(struct jw *w, const int *cpus, int n)
{
    char path[128];
    char *driver = NULL;
    if (n > 0) {
        snprintf(path, sizeof path, SYS_CPU "/cpu%d/cpufreq/scaling_driver", cpus[0]);
        driver = read_file_trimmed(path);
    }
    jw_str(w, "scaling_driver", driver);
    free(driver);

    int opened = 0;
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, SYS_CPU "/cpu%d/cpufreq/scaling_governor", cpus[i]);
        char *gov = read_file_trimmed(path);
        if (gov) {
            char key[16];
            if (!opened)
                jw_obj(w, "scaling_governors");
            opened = 1;
            snprintf(key, sizeof key, "%d", cpus[i]);
            jw_str(w, key, gov);
            free(gov);
        }
    }
    if (opened)
        jw_end(w);
    else
        jw_null(w, "scaling_governors");
}

/* cpuidle: driver and governor, and the idle states of one CPU (the first
 * online one: cpu0 may be offline on ARM) with their exit latency, since a
 * deep state's exit latency adds directly to wake-up latency. */
static void emit_cpuidle(struct jw *w, int cpu)
{
    char path[160];
    char *driver = read_file_trimmed(SYS_CPU "/cpuidle/current_driver");
    if (!driver || cpu < 0) {
        free(driver);
        jw_null(w, "cpuidle");
        return;
    }
    jw_obj(w, "cpuidle");
    jw_str(w, "driver", driver);
    free(driver);
    emit_file_str(w, "governor", SYS_CPU "/cpuidle/current_governor");
    jw_int(w, "cpu", cpu);
    jw_arr(w, "states");
    for (int k = 0;; k++) {
        snprintf(path, sizeof path, SYS_CPU "/cpu%d/cpuidle/state%d/name", cpu, k);
        char *name = read_file_trimmed(path);
        if (!name)
            break;
        jw_obj(w, NULL);
        jw_str(w, "name", name);
        free(name);
        snprintf(path, sizeof path, SYS_CPU "/cpu%d/cpuidle/state%d/latency", cpu, k);
        emit_file_int(w, "exit_latency_us", path);
        snprintf(path, sizeof path, SYS_CPU "/cpu%d/cpuidle/state%d/disable", cpu, k);
        int64_t disabled;
        if (read_file_i64(path, &disabled) == 0)
            jw_bool(w, "disabled", disabled != 0);
        else
            jw_null(w, "disabled");
        jw_end(w);
    }
    jw_end(w);
    jw_end(w);
}

/* A sysfs cache size ("32K", "1024K", "8M") in bytes, or -1. */
static int64_t cache_size_bytes(const char *s)
{
    char *end;
    if (!s)
        return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0)
        return -1;
    int64_t unit = *end == 'K' ? 1024 : *end == 'M' ? 1024 * 1024 : *end == 'G' ? 1024LL * 1024 * 1024 : 1;
    if (unit != 1)
        end++;
    return *end ? -1 : (int64_t)v * unit;
}

/* caches: the cache hierarchy the kernel reports for one CPU (level, type, size,
 * the CPUs sharing it), so that the host can check the levels it reads off a
 * memory latency curve. null where sysfs has none (many ARM boards, some guests). */
static void emit_caches(struct jw *w, int cpu)
{
    char path[160];
    int opened = 0;
    for (int k = 0; cpu >= 0 && k < 16; k++) {
        snprintf(path, sizeof path, SYS_CPU "/cpu%d/cache/index%d/level", cpu, k);
        int64_t level;
        if (read_file_i64(path, &level) != 0)
            break;
        snprintf(path, sizeof path, SYS_CPU "/cpu%d/cache/index%d/size", cpu, k);
        char *size = read_file_trimmed(path);
        int64_t bytes = cache_size_bytes(size);
        free(size);
        if (bytes <= 0)
            continue;
        if (!opened) {
            jw_arr(w, "caches");
            opened = 1;
        }
        jw_obj(w, NULL);
        jw_int(w, "level", level);
        snprintf(path, sizeof path, SYS_CPU "/cpu%d/cache/index%d/type", cpu, k);
        emit_file_str(w, "type", path);
        jw_int(w, "size_bytes", bytes);
        snprintf(path, sizeof path, SYS_CPU "/cpu%d/cache/index%d/shared_cpu_list", cpu, k);
        emit_file_str(w, "shared_cpus", path);
        jw_end(w);
    }
    if (opened)
        jw_end(w);
    else
        jw_null(w, "caches");
}

static void emit_cpus(struct jw *w)
{
    static int cpus[CPU_SETSIZE];
    char list[8 * CPU_SETSIZE]; /* "0,2,4,..." up to CPU_SETSIZE CPUs */

    emit_cpu_model(w);

    char *online = read_file_trimmed(SYS_CPU "/online");
    int n = online ? parse_cpu_list(online, cpus, CPU_SETSIZE) : -1;
    jw_str(w, "cpus_online", online);
    if (n >= 0)
        jw_int(w, "cpus_online_count", n);
    else
        jw_null(w, "cpus_online_count");
    free(online);

    /* The affinity mask says which CPUs this process (and a measurement
     * started the same way) may use: a container or taskset narrows it. */
    static int allowed[CPU_SETSIZE];
    int na = allowed_cpus(allowed, CPU_SETSIZE);
    if (na >= 0) {
        format_cpu_list(allowed, na, list, sizeof list);
        jw_str(w, "cpus_allowed", list);
        jw_int(w, "cpus_allowed_count", na);
    } else {
        jw_null(w, "cpus_allowed");
        jw_null(w, "cpus_allowed_count");
    }

    emit_cpu_list_file(w, "cpus_isolated", SYS_CPU "/isolated");
    emit_cpu_list_file(w, "nohz_full", SYS_CPU "/nohz_full");
    emit_file_str(w, "smt_control", SYS_CPU "/smt/control");

    if (n < 0)
        n = 0;
    emit_cpufreq(w, cpus, n);
    emit_cpuidle(w, n > 0 ? cpus[0] : -1);
    emit_caches(w, na > 0 ? allowed[0] : n > 0 ? cpus[0] : -1);
}

/* ------------------------------------------------------------------------ */
/* Memory                                                                    */

static void emit_memory(struct jw *w)
{
    char *info = read_file("/proc/meminfo", NULL);
    static const char *const fields[][2] = {
        {"mem_total_bytes", "MemTotal"},
        {"mem_available_bytes", "MemAvailable"},
    };
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        char *v = info ? colon_field(info, fields[i][1]) : NULL;
        /* The kernel prints these in KiB as "24682416 kB". */
        char *unit = v ? strstr(v, " kB") : NULL;
        uint64_t kib;
        if (unit)
            *unit = '\0';
        if (unit && parse_u64(v, 0, UINT64_MAX / 1024, &kib) == 0)
            jw_uint(w, fields[i][0], kib * 1024);
        else
            jw_null(w, fields[i][0]);
        free(v);
    }
    free(info);

    char buf[64];
    char *s = read_file_trimmed("/sys/kernel/mm/transparent_hugepage/enabled");
    jw_str(w, "thp_enabled", bracketed_choice(s, buf, sizeof buf));
    free(s);
    s = read_file_trimmed("/sys/kernel/mm/transparent_hugepage/defrag");
    jw_str(w, "thp_defrag", bracketed_choice(s, buf, sizeof buf));
    free(s);

    long page = sysconf(_SC_PAGESIZE);
    if (page > 0)
        jw_int(w, "page_size_bytes", page);
    else
        jw_null(w, "page_size_bytes");
}

/* ------------------------------------------------------------------------ */
/* cgroups                                                                   */

/* Directory of this process's cgroup in the hierarchy mounted with fstype
 * ("cgroup" or "cgroup2") and, for v1, the given controller among its super
 * options. The mount's root is stripped from the cgroup path: without a
 * cgroup namespace a container sees /docker/<id> mounted as its root.
 * Returns 0 and fills dir, or -1. */
static int cgroup_dir(const char *fstype, const char *controller, const char *cgpath,
                      char *dir, size_t size)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char *line = NULL;
    size_t cap = 0;
    int rc = -1;
    if (!f)
        return -1;
    while (rc != 0 && getline(&line, &cap, f) > 0) {
        /* id parent major:minor root mountpoint options [optional...] - fstype source superoptions */
        char root[256], mnt[256], fs[32], opts[512];
        const char *sep = strstr(line, " - "), *p = line, *q = sep ? sep + 3 : NULL;
        if (!sep || scan_word(&p, NULL, 0) || scan_word(&p, NULL, 0) || scan_word(&p, NULL, 0) ||
            scan_word(&p, root, sizeof root) || scan_word(&p, mnt, sizeof mnt) || scan_word(&q, fs, sizeof fs) ||
            scan_word(&q, NULL, 0) || scan_word(&q, opts, sizeof opts) || strcmp(fs, fstype))
            continue;
        if (controller) {
            /* The controller must be a whole token of "rw,cpu,cpuacct". */
            int found = 0;
            for (char *save, *t = strtok_r(opts, ",", &save); t; t = strtok_r(NULL, ",", &save))
                found |= !strcmp(t, controller);
            if (!found)
                continue;
        }
        size_t rl = strcmp(root, "/") ? strlen(root) : 0;
        if (strncmp(cgpath, root, rl) || (cgpath[rl] != '/' && cgpath[rl] != '\0'))
            continue;
        /* Mount points with spaces are octal-escaped in mountinfo; cgroup
         * mounts never have them in practice, so no unescaping is done. */
        if (snprintf(dir, size, "%s%s", mnt, cgpath + rl) < (int)size)
            rc = 0;
    }
    free(line);
    fclose(f);
    return rc;
}

/* This process's cgroup path for a v1 controller ("cpu", "memory" ...) or,
 * with controller NULL, the v2 unified path. NULL when not listed. */
static char *cgroup_path(const char *cgroups, const char *controller)
{
    for (const char *line = cgroups; line && *line;) {
        const char *eol = strchr(line, '\n');
        size_t llen = eol ? (size_t)(eol - line) : strlen(line);
        /* hierarchy-id:controller,list:path */
        const char *c1 = memchr(line, ':', llen);
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(line + llen - c1 - 1)) : NULL;
        if (c2) {
            int match;
            if (!controller) {
                match = c1 == line + 1 && line[0] == '0' && c2 == c1 + 1;
            } else {
                match = 0;
                size_t cl = strlen(controller);
                for (const char *t = c1 + 1; t < c2;) {
                    const char *comma = memchr(t, ',', (size_t)(c2 - t));
                    const char *te = comma ? comma : c2;
                    match |= (size_t)(te - t) == cl && !strncmp(t, controller, cl);
                    t = te + 1;
                }
            }
            if (match)
                return strndup(c2 + 1, (size_t)(line + llen - c2 - 1));
        }
        line = eol ? eol + 1 : NULL;
    }
    return NULL;
}

/* The file in this process's cgroup directory for the controller (v1) or
 * the unified hierarchy (controller NULL), trimmed; NULL if missing. */
static char *cgroup_file(const char *cgroups, const char *controller, const char *file)
{
    char dir[512], path[600];
    char *cgpath = cgroup_path(cgroups, controller);
    char *s = NULL;
    if (cgpath && cgroup_dir(controller ? "cgroup" : "cgroup2", controller, cgpath, dir,
                             sizeof dir) == 0) {
        snprintf(path, sizeof path, "%s/%s", dir, file);
        s = read_file_trimmed(path);
    }
    free(cgpath);
    return s;
}

/* cgroup v1 shows "no limit" as the largest page count times the page
 * size; the largest count is LONG_MAX / page size on 64-bit kernels and
 * LONG_MAX on 32-bit ones (include/linux/page_counter.h). */
static int v1_memory_unlimited(uint64_t bytes)
{
    long ps = sysconf(_SC_PAGESIZE);
    if (ps <= 0)
        return 0;
    uint64_t p = (uint64_t)ps;
    return bytes == (INT64_MAX / p) * p || bytes == (uint64_t)INT32_MAX * p;
}

/* CPU bandwidth, memory limit and cpuset of this process's cgroup, in
 * cgroup v2 file syntax whatever the version, so that one comparison works
 * across machines: cpu_max "max 100000" or "50000 100000", memory_max "max"
 * or bytes. Only this cgroup's own files are read, not its ancestors'. */
static void emit_cgroup(struct jw *w)
{
    char *cgroups = read_file("/proc/self/cgroup", NULL);
    /* A v1 hierarchy carrying a resource controller makes it a v1 (or
     * hybrid) system for the limits below; "0::" alone is pure v2. */
    char *v1cpu = cgroups ? cgroup_path(cgroups, "cpu") : NULL;
    char *v1mem = cgroups ? cgroup_path(cgroups, "memory") : NULL;
    char *v2 = cgroups ? cgroup_path(cgroups, NULL) : NULL;
    int version = (v1cpu || v1mem) ? 1 : v2 ? 2 : 0;
    free(v1cpu);
    free(v1mem);
    free(v2);

    jw_obj(w, "cgroup");
    if (version == 0) {
        jw_null(w, "version");
        jw_null(w, "cpu_max");
        jw_null(w, "memory_max");
        jw_null(w, "cpuset_cpus");
    } else if (version == 2) {
        jw_int(w, "version", 2);
        char *s = cgroup_file(cgroups, NULL, "cpu.max");
        jw_str(w, "cpu_max", s);
        free(s);
        s = cgroup_file(cgroups, NULL, "memory.max");
        jw_str(w, "memory_max", s);
        free(s);
        s = cgroup_file(cgroups, NULL, "cpuset.cpus.effective");
        jw_str(w, "cpuset_cpus", s);
        free(s);
    } else {
        jw_int(w, "version", 1);
        char buf[64];
        int64_t quota, period;
        char *q = cgroup_file(cgroups, "cpu", "cpu.cfs_quota_us");
        char *p = cgroup_file(cgroups, "cpu", "cpu.cfs_period_us");
        if (parse_i64(q, &quota) == 0 && parse_i64(p, &period) == 0) {
            if (quota < 0) /* -1: no quota */
                snprintf(buf, sizeof buf, "max %lld", (long long)period);
            else
                snprintf(buf, sizeof buf, "%lld %lld", (long long)quota, (long long)period);
            jw_str(w, "cpu_max", buf);
        } else {
            jw_null(w, "cpu_max");
        }
        free(q);
        free(p);

        uint64_t limit;
        char *m = cgroup_file(cgroups, "memory", "memory.limit_in_bytes");
        if (parse_u64(m, 0, UINT64_MAX, &limit) == 0)
            jw_str(w, "memory_max", v1_memory_unlimited(limit) ? "max" : m);
        else
            jw_null(w, "memory_max");
        free(m);

        char *c = cgroup_file(cgroups, "cpuset", "cpuset.effective_cpus");
        if (!c)
            c = cgroup_file(cgroups, "cpuset", "cpuset.cpus");
        jw_str(w, "cpuset_cpus", c);
        free(c);
    }
    jw_end(w);
    free(cgroups);
}

/* ------------------------------------------------------------------------ */

static void emit_sysinfo(void)
{
    struct jw w = {0};
    struct utsname u;
    int have_uname = uname(&u) == 0;
    char *cmdline = read_file_trimmed("/proc/cmdline");

    jw_record(&w, "sysinfo");
    jw_str(&w, "hostname", have_uname ? u.nodename : NULL);
    jw_str(&w, "kernel_release", have_uname ? u.release : NULL);
    jw_str(&w, "kernel_version", have_uname ? u.version : NULL);
    jw_str(&w, "machine", have_uname ? u.machine : NULL);
    jw_str(&w, "cmdline", cmdline);
    if (have_uname) {
        emit_preempt(&w, &u, cmdline);
    } else {
        jw_null(&w, "preempt_model");
        jw_null(&w, "preempt_source");
    }
    free(cmdline);

    emit_hypervisor(&w);

    emit_file_str(&w, "clocksource",
                  "/sys/devices/system/clocksource/clocksource0/current_clocksource");
    /* The available list is space-separated (with a trailing space). */
    char *avail = read_file_trimmed("/sys/devices/system/clocksource/clocksource0/available_clocksource");
    if (avail) {
        jw_arr(&w, "clocksource_available");
        for (char *save, *t = strtok_r(avail, " ", &save); t; t = strtok_r(NULL, " ", &save))
            jw_str(&w, NULL, t);
        jw_end(&w);
        free(avail);
    } else {
        jw_null(&w, "clocksource_available");
    }
    struct timespec res;
    if (clock_getres(CLOCK_MONOTONIC, &res) == 0)
        jw_uint(&w, "clock_resolution_ns", ts_ns(&res));
    else
        jw_null(&w, "clock_resolution_ns");

    emit_cpus(&w);
    emit_file_int(&w, "sched_rt_runtime_us", "/proc/sys/kernel/sched_rt_runtime_us");
    emit_file_int(&w, "sched_rt_period_us", "/proc/sys/kernel/sched_rt_period_us");
    emit_memory(&w);
    emit_cgroup(&w);

    jw_emit(&w);
    jw_free(&w);
}

int cmd_sysinfo(int argc, char **argv)
{
    uint64_t t0 = mono_ns();

    struct opt table[] = {
        {OPT_TEXT("Print one JSON record describing this environment: kernel, preemption\n"
                  "model, hypervisor or container, CPUs, power management, memory and cgroup\n"
                  "limits. Sources that are missing are reported as null. No options.")},
        {OPTS_END},
    };
    int rc = opts_parse("sysinfo", table, argc, argv);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;

    struct jw w = {0};
    meta_begin(&w, "sysinfo", argc, argv);
    jw_obj(&w, "params");
    jw_end(&w);
    jw_obj(&w, "privileges");
    jw_int(&w, "euid", geteuid());
    jw_end(&w);
    jw_emit(&w);
    jw_free(&w);

    emit_sysinfo();
    emit_end("ok", mono_ns() - t0, NULL);
    return EXIT_OK;
}
