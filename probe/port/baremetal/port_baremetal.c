/*
 * The porting layer on the bare-metal image (port.h): a fixed-priority
 * preemptive scheduler small enough to read in one sitting.
 *
 * Every task has its own stack. A switch (port_switch, <arch>/switch.S)
 * saves the running task's registers on its stack and loads the next's,
 * always with interrupts masked. From task context a switch happens inside
 * the call that made a higher-priority task ready; from the timer
 * interrupt it is deferred to the interrupt's exit (once the interrupt
 * controller has been told the interrupt ended), where the switch is made
 * on the interrupted task's stack, above its interrupt frame: that task
 * resumes later in the exit path and returns from the interrupt as if
 * nothing had happened.
 *
 * The context port_run is called from (the image's main loop) becomes the
 * idle task, the lowest of all, which waits for interrupts while nothing
 * else is ready and returns from port_run once the main task has ended.
 */
#include "port.h"

#include <stdbool.h>

#include "arch.h"
#include "memarea.h"

#define MAIN_SLOT PORT_MAX_TASKS
#define IDLE_SLOT (PORT_MAX_TASKS + 1)
#define SLOTS (PORT_MAX_TASKS + 2)
#define STACK_BYTES 16384

enum state { SUSPENDED, READY, BLOCKED };

struct task {
    void *sp;              /* saved by port_switch while the task is not running */
    int prio;
    enum state state;
    int sem;               /* BLOCKED: the semaphore it takes */
    uint64_t since;        /* when it became ready or blocked: first come, first served among equals */
    port_entry entry;
    void *arg;
};

/* Saves the running task's registers on its stack and *save = its sp, then
 * loads next_sp's; returns when the saved task is switched back to. */
void port_switch(void **save, void *next_sp);
/* Where a new task's first switch returns: calls port_task_main(task). */
void port_task_start(void);
void port_task_main(struct task *t);

static struct task tasks[SLOTS];
static unsigned char stacks[MAIN_SLOT + 1][STACK_BYTES] __attribute__((aligned(16)));
static struct task *current;
static unsigned sem_counts[PORT_MAX_SEMS];
static uint64_t clock_of_events;
static bool in_isr, switch_pending;
static port_isr user_isr;

#if defined(__aarch64__)
#define FRAME_WORDS 80     /* switch.S: x19..x30, elr, spsr, fpcr, fpsr, q0..q31 */
#define FRAME_RA 11
#define FRAME_TASK 0       /* x19 */
unsigned long port_irq_save(void)
{
    unsigned long daif;
    __asm__ volatile("mrs %0, daif\n\tmsr daifset, #2" : "=r"(daif)::"memory");
    return daif;
}
void port_irq_restore(unsigned long saved) { __asm__ volatile("msr daif, %0" ::"r"(saved) : "memory"); }
static void frame_arch(uint64_t *frame) { (void)frame; }
#elif defined(__riscv)
#define FRAME_WORDS 28     /* switch.S: ra, s0..s11, fs0..fs11, sepc, sstatus */
#define FRAME_RA 0
#define FRAME_TASK 2       /* s1 */
#define FRAME_SSTATUS 26
unsigned long port_irq_save(void)
{
    unsigned long sstatus;
    __asm__ volatile("csrrci %0, sstatus, 2" : "=r"(sstatus)::"memory");
    return sstatus;
}
void port_irq_restore(unsigned long saved) { __asm__ volatile("csrs sstatus, %0" ::"r"(saved & 2u) : "memory"); }
/* The FPU stays on (sstatus.FS) in the new task: a frame of zeros would turn it off. */
static void frame_arch(uint64_t *frame)
{
    unsigned long sstatus;
    __asm__ volatile("csrr %0, sstatus" : "=r"(sstatus));
    frame[FRAME_SSTATUS] = sstatus & ~2ul;
}
#endif

uint64_t port_counter(void) { return counter_now(); }
uint64_t port_counter_hz(void) { return counter_hz(); }

void port_console_write(const char *s, size_t n) { uart_write(s, n); }
int port_console_getc(void) { return uart_getc(); }

void *port_shared_region(size_t *bytes)
{
    *bytes = sizeof mem_area;
    return mem_area;
}

void port_describe(struct port_info *info)
{
    *info = (struct port_info){.policy = "fifo", .policy_granted = "fifo", .priority_base = 0, .cpu = 0};
}

static void make_ready(struct task *t)
{
    t->state = READY;
    t->since = ++clock_of_events;
}

/* The ready task of the highest priority; among equals the running one
 * keeps the CPU, else the one ready longest. */
static struct task *pick(void)
{
    struct task *best = current->state == READY ? current : &tasks[IDLE_SLOT];
    for (int i = 0; i < SLOTS; i++) {
        struct task *t = &tasks[i];
        if (t->state != READY || t == best)
            continue;
        if (t->prio > best->prio || (t->prio == best->prio && best != current && t->since < best->since))
            best = t;
    }
    return best;
}

/* Interrupts masked. In the timer handler only noted: the switch waits for
 * the interrupt's exit. */
static void schedule(void)
{
    if (in_isr) {
        switch_pending = true;
        return;
    }
    struct task *next = pick();
    if (next != current) {
        struct task *prev = current;
        current = next;
        port_switch(&prev->sp, next->sp);
    }
}

static void on_timer(uint64_t now)
{
    timer_off();
    in_isr = true;
    if (user_isr)
        user_isr(now);
    in_isr = false;
}

static void on_irq_exit(void)
{
    if (switch_pending) {
        switch_pending = false;
        schedule();
    }
}

void port_task_main(struct task *t)
{
    irq_unmask();
    t->entry(t->arg);
    irq_mask();
    t->state = SUSPENDED;
    schedule();   /* never comes back: a suspended task is only restarted afresh */
}

int port_task_create(int task, int priority, port_entry entry, void *arg)
{
    if (task < 0 || task > MAIN_SLOT || priority < 1 || priority > PORT_PRIO_MAX || tasks[task].state != SUSPENDED)
        return -1;
    tasks[task].prio = priority;
    tasks[task].entry = entry;
    tasks[task].arg = arg;
    return 0;
}

/* A fresh frame at the top of the task's stack, as port_switch would have
 * left it, returning into port_task_start. */
static void *fresh_frame(int slot)
{
    uint64_t *frame = (uint64_t *)(stacks[slot] + STACK_BYTES) - FRAME_WORDS;
    for (int i = 0; i < FRAME_WORDS; i++)
        frame[i] = 0;
    frame[FRAME_RA] = (uint64_t)(uintptr_t)port_task_start;
    frame[FRAME_TASK] = (uint64_t)(uintptr_t)&tasks[slot];
    frame_arch(frame);
    return frame;
}

int port_task_activate(int task)
{
    if (task < 0 || task > MAIN_SLOT || !tasks[task].entry)
        return -1;
    unsigned long saved = port_irq_save();
    int rc = -1;
    if (tasks[task].state == SUSPENDED) {
        tasks[task].sp = fresh_frame(task);
        make_ready(&tasks[task]);
        schedule();
        rc = 0;
    }
    port_irq_restore(saved);
    return rc;
}

int port_sem_create(int sem, unsigned count)
{
    if (sem < 0 || sem >= PORT_MAX_SEMS)
        return -1;
    sem_counts[sem] = count;
    return 0;
}

void port_sem_give(int sem)
{
    unsigned long saved = port_irq_save();
    struct task *taker = NULL;
    for (int i = 0; i < SLOTS; i++) {
        struct task *t = &tasks[i];
        if (t->state == BLOCKED && t->sem == sem &&
            (!taker || t->prio > taker->prio || (t->prio == taker->prio && t->since < taker->since)))
            taker = t;
    }
    if (taker) {
        make_ready(taker);   /* the count it would take is handed over */
        schedule();
    } else {
        sem_counts[sem]++;
    }
    port_irq_restore(saved);
}

void port_sem_take(int sem)
{
    unsigned long saved = port_irq_save();
    if (sem_counts[sem]) {
        sem_counts[sem]--;
    } else {
        current->state = BLOCKED;
        current->sem = sem;
        current->since = ++clock_of_events;
        schedule();
    }
    port_irq_restore(saved);
}

unsigned port_sem_count(int sem) { return sem_counts[sem]; }

void port_timer_handler(port_isr isr) { user_isr = isr; }
void port_timer_arm(uint64_t deadline) { timer_arm(deadline); }

int port_run(int priority, port_entry main, void *arg, const char **why)
{
    for (int i = 0; i < SLOTS; i++)
        tasks[i] = (struct task){.state = SUSPENDED};
    tasks[IDLE_SLOT].state = READY;
    current = &tasks[IDLE_SLOT];
    user_isr = NULL;
    if (port_task_create(MAIN_SLOT, priority, main, arg)) {
        *why = "the main task's priority is out of range";
        return -1;
    }
    irq_set_timer_handler(on_timer);
    irq_set_exit_handler(on_irq_exit);
    port_task_activate(MAIN_SLOT);
    /* Idle: back here whenever nothing else is ready. Masked, check, wait,
     * unmask: a wake-up between the check and the wait is not lost. */
    for (;;) {
        irq_mask();
        if (tasks[MAIN_SLOT].state == SUSPENDED)
            break;
        wait_for_interrupt();
        irq_unmask();
    }
    timer_off();
    irq_set_exit_handler(NULL);
    irq_unmask();
    return 0;
}
