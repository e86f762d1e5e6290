#include "memutil.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "probe.h"
#include "timing.h"

const char *const mem_hugepage_names[] = {"off", "thp", "hugetlb"};

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int push_size(uint64_t *out, int *n, int max_n, uint64_t v)
{
    if (*n >= max_n)
        return -1;
    out[(*n)++] = v;
    return 0;
}

int mem_parse_size_list(const char *s, uint64_t min, uint64_t max, uint64_t *out, int max_n)
{
    char item[64];
    int n = 0, rc;

    while ((rc = list_item(&s, item, sizeof item)) > 0) {
        char *dash = strchr(item, '-');
        uint64_t a, b;
        if (dash) {
            *dash = '\0';
            if (parse_size(item, min, max, &a) || parse_size(dash + 1, min, max, &b) || b < a)
                return -1;
            if (push_size(out, &n, max_n, a) || (b != a && push_size(out, &n, max_n, b)))
                return -1;
            for (int e = 0; e < 63; e++) {
                uint64_t pow = 1ull << e, mid = pow + pow / 2;
                if (pow > a && pow < b && push_size(out, &n, max_n, pow))
                    return -1;
                if (e >= 1 && mid > a && mid < b && push_size(out, &n, max_n, mid))
                    return -1;
            }
        } else if (parse_size(item, min, max, &a) || push_size(out, &n, max_n, a)) {
            return -1;
        }
    }
    if (rc < 0)
        return -1;
    qsort(out, (size_t)n, sizeof *out, cmp_u64);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (k == 0 || out[k - 1] != out[i])
            out[k++] = out[i];
    return k;
}

int mem_resolve_cpu(const char *sub, int *cpu)
{
    if (*cpu < 0) {
        int first;
        *cpu = sched_getcpu();
        if (*cpu < 0 && allowed_cpus(&first, 1) == 1)
            *cpu = first;
        if (*cpu < 0)
            return usage_error(sub, "cannot read this process's CPU affinity.");
    }
    if (!cpu_allowed(*cpu))
        return usage_error(sub, "CPU %d is offline or not in this process's affinity mask; pick one with --cpu.",
                           *cpu);
    return 0;
}

void mem_timing(struct timing_opts *t, int quick)
{
    timing_defaults(t);
    t->max_time_ns = 500000000ull;
    if (quick) {
        t->min_sample_ns = 2000000ull;
        t->max_time_ns = 200000000ull;
    }
}

/* A "Key:   <n> kB" line of /proc/meminfo or smaps, in bytes; -1 if absent. */
static int64_t kb_field(const char *line, const char *key)
{
    size_t k = strlen(key);
    if (strncmp(line, key, k) != 0)
        return -1;
    return strtoll(line + k, NULL, 10) * 1024;
}

static int64_t meminfo_bytes(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "re");
    char line[256];
    int64_t v = -1;
    if (!f)
        return -1;
    while (v < 0 && fgets(line, sizeof line, f))
        v = kb_field(line, key);
    fclose(f);
    return v;
}

long mem_hugetlb_free_pages(void)
{
    FILE *f = fopen("/proc/meminfo", "re");
    char line[256];
    long v = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "HugePages_Free:", 15))
            v = strtol(line + 15, NULL, 10);
    fclose(f);
    return v;
}

const char *mem_thp_mode(char *buf, size_t len)
{
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");
    char line[128];
    const char *res = NULL;
    if (!f)
        return NULL;
    if (fgets(line, sizeof line, f)) {
        /* "always [madvise] never": the bracketed word is in effect. */
        char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
        if (a && b && (size_t)(b - a - 1) < len) {
            memcpy(buf, a + 1, (size_t)(b - a - 1));
            buf[b - a - 1] = '\0';
            res = buf;
        }
    }
    fclose(f);
    return res;
}

/* Size of a PMD-mapped transparent huge page: 2 MiB with 4 KiB base pages,
 * 512 MiB with 64 KiB ones. */
static size_t thp_size(void)
{
    char line[32];
    const char *p = line;
    uint64_t v = 0;
    if (read_line("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", line, sizeof line) || scan_u64(&p, &v))
        v = 0;
    return v && v <= (1ull << 30) ? (size_t)v : (size_t)2 << 20;
}

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

int mem_buf_map(struct mem_buf *b, uint64_t len64, enum hugepages want)
{
    memset(b, 0, sizeof *b);
    if (len64 == 0 || len64 > MEM_MAX_BYTES)
        return -1;
    size_t len = (size_t)len64;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *m;

    if (want == HP_HUGETLB) {
        int64_t hp = meminfo_bytes("Hugepagesize:");
        size_t hsize = hp > 0 ? (size_t)hp : (size_t)2 << 20;
        size_t mlen = round_up(len, hsize);
        m = mmap(NULL, mlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        if (m == MAP_FAILED)
            return -2;
        *b = (struct mem_buf){.p = m, .len = len, .map = m, .map_len = mlen, .kind = HP_HUGETLB};
        return 0;
    }
    if (want == HP_THP) {
        /* Over-map by one huge page, keep the aligned part: a THP can only
         * back an aligned 2 MiB range. */
        size_t hsize = thp_size();
        size_t mlen = round_up(len, hsize);
        if (mlen + hsize < mlen)
            return -1;
        m = mmap(NULL, mlen + hsize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return -1;
        uintptr_t start = ((uintptr_t)m + hsize - 1) & ~(uintptr_t)(hsize - 1);
        size_t head = start - (uintptr_t)m, tail = hsize - head;
        if (head)
            munmap(m, head);
        if (tail)
            munmap((char *)start + mlen, tail);
        madvise((void *)start, mlen, MADV_HUGEPAGE);
        *b = (struct mem_buf){.p = (char *)start, .len = len, .map = (void *)start, .map_len = mlen,
                              .kind = HP_THP};
        return 0;
    }
    size_t mlen = round_up(len, page);
    m = mmap(NULL, mlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    /* Fails harmlessly (EINVAL) on kernels without THP. */
    madvise(m, mlen, MADV_NOHUGEPAGE);
    *b = (struct mem_buf){.p = m, .len = len, .map = m, .map_len = mlen, .kind = HP_OFF};
    return 0;
}

void mem_buf_unmap(struct mem_buf *b)
{
    if (b->map)
        munmap(b->map, b->map_len);
    memset(b, 0, sizeof *b);
}

int64_t mem_buf_huge_bytes(const struct mem_buf *b)
{
    if (b->kind == HP_HUGETLB)
        return (int64_t)b->len;
    FILE *f = fopen("/proc/self/smaps", "re");
    char line[512];
    int64_t total = -1;
    int inside = 0;
    uintptr_t lo = (uintptr_t)b->p, hi = lo + b->len;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        uint64_t s, e;
        const char *p = line;
        /* A mapping header starts with "start-end " in hex. */
        if (scan_x64(&p, &s) == 0 && *p++ == '-' && scan_x64(&p, &e) == 0 && *p == ' ') {
            inside = s < hi && e > lo;
            continue;
        }
        int64_t v;
        if (inside && (v = kb_field(line, "AnonHugePages:")) >= 0)
            total = (total < 0 ? 0 : total) + v;
    }
    fclose(f);
    if (total > (int64_t)b->len)
        total = (int64_t)b->len;
    return total;
}

void *mem_chain_build(char *base, uint32_t n, const struct mem_chain_layout *l, int random, uint64_t seed)
{
    uint32_t *scratch = NULL;
    if (random && n >= 2 && !(scratch = malloc((size_t)n * sizeof *scratch)))
        return NULL;
    void *first = mem_chain_link(base, n, l, random, seed, scratch);
    free(scratch);
    return first;
}

void mem_chase_op(void *arg, uint64_t n)
{
    void **cursor = arg;
    *cursor = mem_chase(*cursor, n);
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double mem_time_op(void (*fn)(void *, uint64_t), void *arg, const struct timing_opts *o, struct timing *t)
{
    struct timing retry;
    double share = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        struct timing *dst = attempt == 0 ? t : &retry;
        uint64_t c0 = thread_cpu_ns(), w0 = mono_ns();
        time_op(fn, arg, o, dst);
        uint64_t c1 = thread_cpu_ns(), w1 = mono_ns();
        double s = w1 > w0 && c1 >= c0 && c0 ? (double)(c1 - c0) / (double)(w1 - w0) : 1.0;
        if (s > 1)
            s = 1;
        if (attempt == 0 || s > share) {
            if (attempt)
                *t = retry;
            share = s;
        }
        if (share >= MEM_MIN_CPU_SHARE && t->samples >= o->min_samples)
            break;
    }
    return share;
}

void mem_warn_contention(double share, int *warned)
{
    if (share >= MEM_WARN_CPU_SHARE || (*warned)++)
        return;
    jw_warning("cpu_contention", "the measuring thread was on its CPU only %.0f %% of the time during a "
               "measurement (see cpu_share), so other tasks shared that CPU and may have inflated the results; "
               "measure on an idle CPU.", share * 100);
}

double mem_chase_time(void **cursor, const struct timing_opts *o, struct timing *t, double *share)
{
    *share = mem_time_op(mem_chase_op, cursor, o, t);
    /* The median sample: a sample that lost a time slice to another process
     * is an outlier of the machine, not of the memory. */
    return t->median_ns / CHASE_UNROLL;
}

int mem_pin_self(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0 ? 0 : errno;
}

uint64_t mem_thread_minflt(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return 0;
    return (uint64_t)ru.ru_minflt;
}

volatile sig_atomic_t mem_stop;

static void on_stop(int sig)
{
    (void)sig;
    mem_stop = 1;
}

void mem_catch_stop(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double mem_median(const double *v, int n)
{
    if (n <= 0)
        return NAN;
    double *s = malloc((size_t)n * sizeof *s);
    if (!s)
        return v[0];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    free(s);
    return m;
}
