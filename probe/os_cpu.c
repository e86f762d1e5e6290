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
static volatile int32_t v_div_a = 40009, v_div_b = 50021, v_mod_r = 12345;
static volatile uint64_t v_mul64 = 0x9e3779b97f4a7c15ull;
static volatile int64_t v_div64_a = 3000000019ll, v_div64_b = 3000000037ll;
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
/* An odd multiplier: the product never becomes 0. */
INT_CHAIN(op_int_mul, uint32_t x = v_mul; uint32_t y = v_mul, x = x * y)
INT_CHAIN(op_int_div, int32_t x = v_div_a; int32_t k = v_div_a * v_div_b, x = k / x)
/* No chain of remainders alone keeps its value (each is smaller than the
 * last, down to 0), so each link is x = K % x + B, chosen so that x comes
 * back to itself: K = a*b + r, B = a - r. The add's latency (int_add,
 * timed just before) is subtracted from the figure. */
INT_CHAIN(op_int_mod, int32_t x = v_div_a; int32_t k = v_div_a * v_div_b + v_mod_r; int32_t add = v_div_a - v_mod_r,
          x = k % x + add)
INT_CHAIN(op_int64_mul, uint64_t x = v_mul64; uint64_t y = v_mul64, x = x * y)
INT_CHAIN(op_int64_div, int64_t x = v_div64_a; int64_t k = v_div64_a * v_div64_b, x = k / x)

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

static const struct {
    const char *op;
    timed_fn fn;
} arith_ops[] = {
    {"int_add", op_int_add},       {"int_mul", op_int_mul},       {"int_div", op_int_div},
    {"int_mod", op_int_mod},       {"int64_mul", op_int64_mul},   {"int64_div", op_int64_div},
    {"float_add", op_float_add},   {"float_mul", op_float_mul},   {"float_div", op_float_div},
    {"double_add", op_double_add}, {"double_mul", op_double_mul}, {"double_div", op_double_div},
};

void os_test_arith(struct os_run *r)
{
    struct timing_opts o = r->o->timing;
    double add_ns = 0;
    o.subtract_loop = 0;
    for (size_t i = 0; i < sizeof arith_ops / sizeof *arith_ops && !os_stop; i++) {
        struct arith_arg a = {{0}};
        struct timing t;
        struct jw w;
        if (os_time(r, "arith", arith_ops[i].fn, &a.b, &o, &t))
            return;
        int is_mod = arith_ops[i].fn == op_int_mod;
        /* Per operation; int_mod without the add each of its links has. */
        os_timing_derive(&t, 1.0 / CHAIN, is_mod ? add_ns : 0, NULL, o.target_rel_error);
        if (arith_ops[i].fn == op_int_add)
            add_ns = t.ns_per_op;
        os_result_begin(&w, "arith");
        jw_str(&w, "op", arith_ops[i].op);
        jw_int(&w, "chain", CHAIN);
        if (is_mod)
            jw_double(&w, "add_subtracted_ns", add_ns);
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
