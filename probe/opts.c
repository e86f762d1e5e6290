#include "opts.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "jsonw_fd.h"
#include "probe.h"

#define HELP_COLUMN 25

enum opts_mode opts_mode = OPTS_RUN;

/* Integers go into fields of whatever width the subcommand chose (int,
 * unsigned, uint64_t, an enum); the range check has already made the value
 * fit, and the truncation keeps its bits on either byte order. */
static void store_int(void *field, size_t width, uint64_t v)
{
    uint8_t b = (uint8_t)v;
    uint16_t h = (uint16_t)v;
    uint32_t w = (uint32_t)v;
    switch (width) {
    case 1: memcpy(field, &b, 1); break;
    case 2: memcpy(field, &h, 2); break;
    case 4: memcpy(field, &w, 4); break;
    default: memcpy(field, &v, 8); break;
    }
}

/* Limits as the messages write them: 1e7 rather than 1e+07. */
static const char *fmt_double(char *buf, size_t len, double v)
{
    char tmp[32], *e;
    snprintf(tmp, sizeof tmp, "%g", v);
    e = strchr(tmp, 'e');
    if (e) {
        char *digits = e + 1 + (e[1] == '+' || e[1] == '-');
        while (*digits == '0' && digits[1])
            digits++;
        snprintf(buf, len, "%.*s%s%s", (int)(e - tmp + 1), tmp, e[1] == '-' ? "-" : "", digits);
    } else {
        snprintf(buf, len, "%s", tmp);
    }
    return buf;
}

/* Sizes as they are typed: the largest binary suffix that divides them. */
static const char *fmt_size(char *buf, size_t len, uint64_t v)
{
    static const char suffix[] = "GMK";
    for (int i = 0; i < 3; i++) {
        uint64_t unit = 1ull << (10 * (3 - i));
        if (v && v % unit == 0) {
            snprintf(buf, len, "%llu%c", (unsigned long long)(v / unit), suffix[i]);
            return buf;
        }
    }
    snprintf(buf, len, "%llu", (unsigned long long)v);
    return buf;
}

/* "a, b or c" (sep ", " and last " or "), or "a|b|c" (both "|"). */
static void join_names(char *buf, size_t len, const struct opt *o, const char *sep, const char *last)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < o->nnames && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i == 0 ? "" : i == o->nnames - 1 ? last : sep,
                              o->names[i]);
}

/* What the option accepts, as the end of "--name must be ...". */
static void describe(const struct opt *o, char *buf, size_t len)
{
    char a[32], b[32], names[512];
    if (o->expect) {
        snprintf(buf, len, "%s", o->expect);
        return;
    }
    switch (o->kind) {
    case OPT_INT:
        if (o->min < 0)
            snprintf(buf, len, "an integer from %lld to %lld", (long long)o->min, (long long)o->max);
        else
            snprintf(buf, len, "an integer from %lld to %llu", (long long)o->min, (unsigned long long)o->max);
        break;
    case OPT_DOUBLE:
    case OPT_SCALED:
        snprintf(buf, len, "%sa number%s%s from %s to %s", o->zero_ok ? "0 or " : "", o->unit ? " of " : "",
                 o->unit ? o->unit : "", fmt_double(a, sizeof a, o->dmin), fmt_double(b, sizeof b, o->dmax));
        break;
    case OPT_SIZE:
        snprintf(buf, len, "a size from %s to %s", fmt_size(a, sizeof a, (uint64_t)o->min),
                 fmt_size(b, sizeof b, o->max));
        break;
    case OPT_SIZE_LIST:
        snprintf(buf, len, "a list of at most %d sizes from %s to %s", o->cap, fmt_size(a, sizeof a, (uint64_t)o->min),
                 fmt_size(b, sizeof b, o->max));
        break;
    case OPT_ENUM:
        join_names(names, sizeof names, o, ", ", " or ");
        snprintf(buf, len, "%s", names);
        break;
    case OPT_NAMES:
        join_names(names, sizeof names, o, ", ", ", ");
        snprintf(buf, len, "a list of %s", names);
        break;
    case OPT_CPUS:
        snprintf(buf, len, "a CPU list such as 0-3,6");
        break;
    default:
        snprintf(buf, len, "a valid value");
        break;
    }
}

static int bad_value(const char *sub, const struct opt *o, const char *arg)
{
    char what[600];
    describe(o, what, sizeof what);
    return usage_error(sub, "--%s must be %s, got '%s'.", o->name, what, arg);
}

static int parse_int(const struct opt *o, const char *arg, uint64_t *v)
{
    if (arg[0] != '-')
        return parse_u64(arg, o->min < 0 ? 0 : (uint64_t)o->min, o->max, v);
    uint64_t mag;
    if (o->min >= 0 || parse_u64(arg + 1, 0, (uint64_t)-(o->min + 1) + 1, &mag))
        return -1;
    *v = (uint64_t)-(int64_t)(mag - 1) - 1;   /* -mag without overflow at INT64_MIN */
    return 0;
}

static int parse_real(const struct opt *o, const char *arg, double *d)
{
    if (parse_double(arg, o->zero_ok ? 0 : o->dmin, o->dmax, d))
        return -1;
    return o->zero_ok && *d > 0 && *d < o->dmin ? -1 : 0;
}

static int parse_cpus(const char *sub, const struct opt *o, const char *arg)
{
    int *cpus = o->field;
    int n = parse_cpu_list(arg, cpus, o->cap);
    if (n <= 0)
        return bad_value(sub, o, arg);
    for (int i = 0; i < n && opts_mode == OPTS_RUN; i++)
        if (!cpu_allowed(cpus[i]))
            return usage_error(sub, "CPU %d is offline or not in this process's affinity mask; pick CPUs with --%s.",
                               cpus[i], o->name);
    *o->count = n;
    return 0;
}

/* Store arg into the option's field; 0 or EXIT_USAGE. */
static int apply(const char *sub, struct opt *o, const char *arg)
{
    uint64_t u;
    double d;
    unsigned mask;
    int rc;

    switch (o->kind) {
    case OPT_FLAG:
        store_int(o->field, o->width, (uint64_t)(int64_t)o->value);
        return 0;
    case OPT_INT:
        if (parse_int(o, arg, &u))
            return bad_value(sub, o, arg);
        store_int(o->field, o->width, o->scale > 0 ? u * (uint64_t)o->scale : u);
        return 0;
    case OPT_DOUBLE:
        if (parse_real(o, arg, &d))
            return bad_value(sub, o, arg);
        *(double *)o->field = o->scale > 0 ? d * o->scale : d;
        return 0;
    case OPT_SCALED:
        if (parse_real(o, arg, &d))
            return bad_value(sub, o, arg);
        *(uint64_t *)o->field = (uint64_t)(d * o->scale + 0.5);
        return 0;
    case OPT_SIZE:
        if (parse_size(arg, (uint64_t)o->min, o->max, &u))
            return bad_value(sub, o, arg);
        *(uint64_t *)o->field = u;
        return 0;
    case OPT_STRING:
        *(const char **)o->field = arg;
        return 0;
    case OPT_ENUM:
        for (int i = 0; i < o->nnames; i++)
            if (!strcmp(arg, o->names[i])) {
                store_int(o->field, o->width, (uint64_t)(int64_t)(o->values ? o->values[i] : i));
                return 0;
            }
        return bad_value(sub, o, arg);
    case OPT_NAMES:
        if (parse_names(arg, o->names, o->nnames, &mask))
            return bad_value(sub, o, arg);
        store_int(o->field, o->width, mask);
        return 0;
    case OPT_SIZE_LIST:
        rc = parse_size_list(arg, (uint64_t)o->min, o->max, o->field, o->cap);
        if (rc < 0)
            return bad_value(sub, o, arg);
        *o->count = rc;
        return 0;
    case OPT_CPUS:
        return parse_cpus(sub, o, arg);
    case OPT_CUSTOM:
        rc = o->parse(o, arg);
        return rc < 0 ? bad_value(sub, o, arg) : rc;
    default:
        return 0;
    }
}

static int takes_argument(const struct opt *o)
{
    return o->kind != OPT_FLAG;
}

static int is_option(const struct opt *o)
{
    return o->kind != OPT_NOTE;
}

/* The option `name` (len bytes) names: an exact match, else the only one it
 * is a prefix of. --help, which every table has, sets *help instead. NULL
 * when unknown or ambiguous. */
static struct opt *lookup(struct opt *t, const char *name, size_t len, int *help)
{
    struct opt *found = NULL;
    int matches = 0, help_prefix = !strncmp("help", name, len);
    if (help_prefix && len == 4) {
        *help = 1;
        return NULL;
    }
    for (struct opt *o = t; o->kind != OPT_END; o++) {
        if (!is_option(o) || strncmp(o->name, name, len))
            continue;
        if (o->name[len] == '\0')
            return o;
        found = o;
        matches++;
    }
    matches += help_prefix;
    *help = matches == 1 && !found;
    return matches == 1 ? found : NULL;
}

static const char *const kind_names[] = {
    [OPT_FLAG] = "flag", [OPT_INT] = "int", [OPT_DOUBLE] = "number", [OPT_SCALED] = "number",
    [OPT_SIZE] = "size", [OPT_STRING] = "string", [OPT_ENUM] = "enum", [OPT_NAMES] = "names",
    [OPT_SIZE_LIST] = "size-list", [OPT_CPUS] = "cpus", [OPT_CUSTOM] = "custom",
};

/* One line per option: {"option":..., "kind":..., and its range}: min and max
 * (numbers for the decimal kinds), cap for lists. A custom or string option
 * states the range its parser applies in the same members (max or dmax set).
 * Test hooks (no --help line) are left out. */
static void describe_options(const struct opt *t)
{
    struct jw w = {0};
    for (const struct opt *o = t; o->kind != OPT_END; o++) {
        if (!is_option(o) || !o->help)
            continue;
        int decimal = o->kind == OPT_DOUBLE || o->kind == OPT_SCALED || (o->kind == OPT_CUSTOM && o->dmax > 0);
        int integral = o->kind == OPT_INT || o->kind == OPT_SIZE || o->kind == OPT_SIZE_LIST ||
                       ((o->kind == OPT_CUSTOM || o->kind == OPT_STRING) && o->max > 0);
        jw_record(&w, "option");
        jw_str(&w, "option", o->name);
        jw_str(&w, "kind", kind_names[o->kind]);
        if (decimal) {
            jw_double(&w, "min", o->dmin);
            jw_double(&w, "max", o->dmax);
            jw_bool(&w, "zero_ok", o->zero_ok);
        } else if (integral) {
            jw_int(&w, "min", o->min);
            jw_uint(&w, "max", o->max);
        }
        if (o->kind == OPT_CPUS) {
            jw_int(&w, "min", 0);
            jw_int(&w, "max", CPU_SETSIZE - 1);
        }
        if (o->kind == OPT_ENUM || o->kind == OPT_NAMES) {
            jw_arr(&w, "names");
            for (int i = 0; i < o->nnames; i++)
                jw_str(&w, NULL, o->names[i]);
            jw_end(&w);
        }
        if (o->cap > 0)
            jw_int(&w, "cap", o->cap);
        jw_emit(&w);
    }
    jw_free(&w);
}

int opts_done(int rc)
{
    return rc == 0 && opts_mode == OPTS_CHECK ? -1 : rc;
}

int opts_parse(const char *sub, struct opt *t, int argc, char **argv)
{
    const char *stray = NULL;   /* reported after the options, as getopt_long did */
    int i;

    if (opts_mode == OPTS_DESCRIBE) {
        describe_options(t);
        return -1;
    }

    for (struct opt *o = t; o->kind != OPT_END; o++)
        o->seen = 0;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (!strcmp(a, "-h")) {
            opts_help(sub, t);
            return -1;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (!stray)
                stray = a;
            continue;
        }
        if (a[1] != '-')
            return unknown_option(sub, a);
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        int help = 0;
        struct opt *o = len ? lookup(t, name, len, &help) : NULL;
        if (help && !eq) {
            opts_help(sub, t);
            return -1;
        }
        if (!o)
            return unknown_option(sub, a);
        const char *arg = NULL;
        if (takes_argument(o)) {
            if (eq)
                arg = eq + 1;
            else if (i + 1 < argc)
                arg = argv[++i];
            else
                return usage_error(sub, "--%s needs a value; run 'rtvb-probe %s --help'.", o->name, sub);
        } else if (eq) {
            return usage_error(sub, "--%s takes no value, got '%s'.", o->name, a);
        }
        o->seen++;
        int rc = apply(sub, o, arg);
        if (rc)
            return rc;
    }
    if (!stray && i < argc)
        stray = argv[i];
    return stray ? unexpected_argument(sub, stray) : 0;
}

static const char *default_meta(const struct opt *o, char *buf, size_t len)
{
    if (o->meta)
        return o->meta;
    switch (o->kind) {
    case OPT_FLAG: return "";
    case OPT_SIZE: return "SIZE";
    case OPT_NAMES: case OPT_CPUS: return "LIST";
    case OPT_ENUM:
        join_names(buf, len, o, "|", "|");
        return buf;
    default: return "X";
    }
}

void opts_help(const char *sub, const struct opt *t)
{
    char meta[512];
    printf("usage: rtvb-probe %s [options]\n", sub);
    for (const struct opt *o = t; o->kind != OPT_END; o++) {
        if (!is_option(o)) {
            if (o->help)
                printf("%s\n", o->help);
            if (o->note)
                o->note();
            continue;
        }
        if (!o->help)
            continue;
        const char *m = default_meta(o, meta, sizeof meta);
        int col = printf("  --%s%s%s", o->name, *m ? " " : "", m);
        const char *h = o->help;
        for (;;) {
            const char *nl = strchr(h, '\n');
            int len = nl ? (int)(nl - h) : (int)strlen(h);
            if (col >= HELP_COLUMN) {
                putchar('\n');
                col = 0;
            }
            printf("%*s%.*s\n", HELP_COLUMN - col, "", len, h);
            col = 0;
            if (!nl)
                break;
            h = nl + 1;
        }
    }
}

struct opt *opts_find(struct opt *t, const char *name)
{
    for (struct opt *o = t; o->kind != OPT_END; o++)
        if (is_option(o) && !strcmp(o->name, name))
            return o;
    return NULL;
}

int opts_seen(struct opt *t, const char *name)
{
    struct opt *o = opts_find(t, name);
    return o ? o->seen : 0;
}
