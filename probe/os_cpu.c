/*
 * os tests of the processor alone: the latency of arithmetic operations
 * and the cost of a procedure call. No system call is made; they give the
 * scale against which the system's figures read (a null system call is
 * worth so many divisions), as LMbench's tables of basic operations do.
 *
 * Latency, not throughput: every operation takes the previous one's result
 * as an operand, so the processor cannot overlap them, and time / count is
 * the time from an operand to its result. The compiler must neither fold
 * the chain (x + y + y ... into x + 32y) nor compute it ahead of time: the
 * operands come from volatile variables (unknown at compile time), and the
 * integer chains pass through an empty asm statement after each step,
 * which makes the value opaque to the optimiser and costs no instruction.
 * Floating-point chains need no such barrier: without -ffast-math the
 * compiler may not reassociate them.
 */
#include <stdint.h>

#include "os.h"

/* Operations per loop iteration: the loop's counter and branch are then
 * one per 32 links of the chain, and an out-of-order core runs them beside
 * it. The harness's bare loop is not subtracted (it would count those 32
 * links as 32 loop iterations); one harness operation is a block of CHAIN,
 * divided by CHAIN before the result is printed. */
#define CHAIN 32

#define REP4(s) s s s s
#define REP32(s) REP4(REP4(s)) REP4(s) REP4(s) REP4(s) REP4(s)

/* Keeps the value in a register and hides it from the optimiser. */
#define OPAQUE(x) __asm__ volatile("" : "+r"(x))

/* Operand values, read through volatile so that nothing is known at
 * compile time. Division chains x = K / x alternate between two values
 * whose product is K, so every division has a quotient of about half the
 * dividend's bits (dividers whose time depends on the quotient's length
 * are measured in their middle), and the value never reaches 0. */
static volatile uint32_t v_add = 0x9e3779b9u, v_mul = 0x2545f491u;
/* Bit chains alternate OR and AND: OR sets the bits of `or`, AND keeps those
 * of `and`, a superset, so the value is the same after every pair. */
static volatile uint32_t v_or = 0x00ff00f0u, v_and = 0x0fff0ff0u;
static volatile uint64_t v_add64 = 0x9e3779b97f4a7c15ull;
static volatile uint64_t v_or64 = 0x00ff00f000ff00f0ull, v_and64 = 0x0fff0ff00fff0ff0ull;
static volatile int32_t v_div_a = 40009, v_div_b = 50021, v_mod_r = 12345;
static volatile uint64_t v_mul64 = 0x9e3779b97f4a7c15ull;
static volatile int64_t v_div64_a = 3000000019ll, v_div64_b = 3000000037ll, v_mod64_r = 1234567891ll;
static volatile float v_fadd = 0.5f, v_fmul = 1.2345f, v_fdiv = 3.0f, v_fx = 1.7f;
static volatile double v_dadd = 0.5, v_dmul = 1.2345, v_ddiv = 3.0, v_dx = 1.7;

static volatile uint64_t sink_u;
static volatile double sink_d;

struct arith_arg {
    struct op_base b;
};

/* A chain: `init` declares x and the operands, `block` is 32 links, the
 * result goes to `sink`. */
#define CHAIN_FN(name, init, block, sink)                                       \
    static void name(void *arg, uint64_t n)                                     \
    {                                                                           \
        (void)arg;                                                              \
        init;                                                                   \
        for (uint64_t i = 0; i < n; i++) {                                      \
            block                                                               \
        }                                                                       \
        sink = x;                                                               \
    }
/* An integer chain of the link `step`, each link's result made opaque. */
#define INT_CHAIN(name, init, step) CHAIN_FN(name, init, REP32(step; OPAQUE(x);), sink_u)

INT_CHAIN(op_int_add, uint32_t x = v_add; uint32_t y = v_add, x = x + y)
#define BIT_CHAIN(name, T, vor, vand)                                                              \
    CHAIN_FN(name, T x = vor; T y = vor; T z = vand, REP4(REP4(x = x | y; OPAQUE(x); x = x & z; OPAQUE(x);)), \
             sink_u)
BIT_CHAIN(op_int_bit, uint32_t, v_or, v_and)
/* An odd multiplier: the product never becomes 0. */
INT_CHAIN(op_int_mul, uint32_t x = v_mul; uint32_t y = v_mul, x = x * y)
INT_CHAIN(op_int_div, int32_t x = v_div_a; int32_t k = v_div_a * v_div_b, x = k / x)
/* No chain of remainders alone keeps its value (each is smaller than the
 * last, down to 0), so each link is x = K % x + B, chosen so that x comes
 * back to itself: K = a*b + r, B = a - r. The add's latency (int_add,
 * timed just before) is subtracted from the figure. */
INT_CHAIN(op_int_mod, int32_t x = v_div_a; int32_t k = v_div_a * v_div_b + v_mod_r; int32_t add = v_div_a - v_mod_r,
          x = k % x + add)
INT_CHAIN(op_int64_add, uint64_t x = v_add64; uint64_t y = v_add64, x = x + y)
BIT_CHAIN(op_int64_bit, uint64_t, v_or64, v_and64)
INT_CHAIN(op_int64_mul, uint64_t x = v_mul64; uint64_t y = v_mul64, x = x * y)
INT_CHAIN(op_int64_div, int64_t x = v_div64_a; int64_t k = v_div64_a * v_div64_b, x = k / x)
/* As int_mod; a x b + r stays below 2^63. */
INT_CHAIN(op_int64_mod, int64_t x = v_div64_a; int64_t k = v_div64_a * v_div64_b + v_mod64_r;
          int64_t add = v_div64_a - v_mod64_r, x = k % x + add)

/* Floating point: adds alternate +y and -y and multiplications y and 1/y,
 * so the value stays near where it started (never overflowing, never
 * denormal: some processors take a slow path for those). Divisions are
 * x = K / x, as for integers. */
#define FP_OPS(T, name, vadd, vmul, vdiv, vx)                                                      \
    CHAIN_FN(op_##name##_add, T x = vx; T y = vadd; T z = -vadd, REP4(REP4(x = x + y; x = x + z;)), \
             sink_d)                                                                               \
    CHAIN_FN(op_##name##_mul, T x = vx; T y = vmul; T z = (T)1 / vmul,                             \
             REP4(REP4(x = x * y; x = x * z;)), sink_d)                                            \
    CHAIN_FN(op_##name##_div, T x = vx; T k = vdiv, REP32(x = k / x;), sink_d)

FP_OPS(float, float, v_fadd, v_fmul, v_fdiv, v_fx)
FP_OPS(double, double, v_dadd, v_dmul, v_ddiv, v_dx)

/* `less`: the op whose figure (timed earlier) is subtracted from this one's,
 * -1 for none. */
static const struct {
    const char *op;
    timed_fn fn;
    int less;
} arith_ops[] = {
    {"int_add", op_int_add, -1},       {"int_bit", op_int_bit, -1},       {"int_mul", op_int_mul, -1},
    {"int_div", op_int_div, -1},       {"int_mod", op_int_mod, 0},        {"int64_add", op_int64_add, -1},
    {"int64_bit", op_int64_bit, -1},   {"int64_mul", op_int64_mul, -1},   {"int64_div", op_int64_div, -1},
    {"int64_mod", op_int64_mod, 5},    {"float_add", op_float_add, -1},   {"float_mul", op_float_mul, -1},
    {"float_div", op_float_div, -1},   {"double_add", op_double_add, -1}, {"double_mul", op_double_mul, -1},
    {"double_div", op_double_div, -1},
};
#define ARITH_OPS (sizeof arith_ops / sizeof *arith_ops)

void os_test_arith(struct os_run *r)
{
    struct timing_opts o = r->o->timing;
    double ns[ARITH_OPS] = {0};
    o.subtract_loop = 0;
    for (size_t i = 0; i < ARITH_OPS && !os_stop; i++) {
        struct arith_arg a = {{0}};
        struct timing t;
        struct jw w;
        if (os_time(r, "arith", arith_ops[i].fn, &a.b, &o, &t))
            return;
        int less = arith_ops[i].less;
        /* Per operation; a remainder without the add each of its links has. */
        os_timing_derive(&t, 1.0 / CHAIN, less >= 0 ? ns[less] : 0, NULL, o.target_rel_error);
        ns[i] = t.ns_per_op;
        os_result_begin(&w, "arith");
        jw_str(&w, "op", arith_ops[i].op);
        jw_int(&w, "chain", CHAIN);
        if (less >= 0)
            jw_double(&w, "add_subtracted_ns", ns[less]);
        os_result_end(&w, &t);
    }
}

/* ------------------------------------------------------- procedure call */

/* A function the compiler may not inline, with three arguments, whose
 * result it cannot know (the asm makes the arguments opaque, so it is not
 * a pure function either, and no call is hoisted out of the loop). */
__attribute__((noinline)) static uint32_t callee(uint32_t a, uint32_t b, uint32_t c)
{
    __asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c));
    return a + b + c;
}

static void op_proc_call(void *arg, uint64_t n)
{
    (void)arg;
    uint32_t x = v_add;
    /* Each call's first argument is the previous call's result: calls do
     * not overlap, so this is call + return + one add, in sequence. */
    for (uint64_t i = 0; i < n; i++)
        x = callee(x, (uint32_t)i, 3);
    sink_u = x;
}

void os_test_proc_call(struct os_run *r)
{
    struct op_base b = {0};
    struct timing t;
    struct jw w;
    if (os_time(r, "proc_call", op_proc_call, &b, NULL, &t))
        return;
    os_result_begin(&w, "proc_call");
    jw_int(&w, "args", 3);
    os_result_end(&w, &t);
}
