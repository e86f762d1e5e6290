"""Why a wake-up was late: the probe's saved kernel trace of a breach, read and classified.

The probe (`latency --trace-threshold-us`) records scheduler, interrupt and timer events in a
tracefs instance, and on a wake-up later than the threshold saves the last milliseconds of every
measured CPU with the breach's deadline D and wake-up time W on CLOCK_MONOTONIC and the offset of
the trace's clock to it (docs/tracing.md). A late wake-up has three phases:

  timer      D .. E   the timer interrupt that wakes the thread fires at E (hrtimer_wakeup);
  scheduling E .. S   the woken thread waits until it is switched in at S;
  return     S .. W   back in user space, the thread reads the clock at W.

The longest phase is the one to explain. Its time is split by what the CPU was doing: a hard
interrupt handler (irq_handler_entry/exit and the per-vector events), a softirq
(softirq_entry/exit), or a task (the task column of the trace, or the next task of a
sched_switch). The largest share names the cause:

  irq          an interrupt handler ran (which one)
  softirq      softirq processing ran (which vector: NET_RX, TIMER ...)
  task         a task of higher or equal priority ran in the scheduling phase, or preempted the
               thread after its switch-in (name, pid, policy, priority)
  preempt-off  a lower-priority task kept the CPU after the wake-up (preemption disabled)
  irq-off      the timer fired late while a task ran and no event explains it (interrupts
               disabled, or the CPU taken away without steal being accounted)
  hypervisor   no event explains the delay and the CPU's steal time rose around it
  idle-exit    the CPU was idle and woke late without steal: idle-state exit, firmware, or a
               hypervisor that does not account steal
  unknown      the trace does not cover the breach (lines dropped, events missing)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

CAUSES = ("irq", "softirq", "task", "preempt-off", "irq-off", "hypervisor", "idle-exit", "unknown")
#: the words a report uses for each cause (counts tables, sentences)
CAUSE_WORDS = {
    "irq": "interrupt handlers", "softirq": "softirq processing", "task": "other tasks",
    "preempt-off": "preemption-disabled stretches", "irq-off": "interrupt-disabled stretches",
    "hypervisor": "hypervisor gaps", "idle-exit": "idle exits", "unknown": "unexplained breaches",
}
#: the same words for one spike of the cause ("1 interrupt-disabled stretch")
CAUSE_WORD = {
    "irq": "interrupt handler", "softirq": "softirq processing", "task": "other task",
    "preempt-off": "preemption-disabled stretch", "irq-off": "interrupt-disabled stretch",
    "hypervisor": "hypervisor gap", "idle-exit": "idle exit", "unknown": "unexplained breach",
}

_LINE = re.compile(r"^\s*(?P<task>.*?)-(?P<pid>\d+)\s+(?:\(\s*[\d-]+\)\s+)?\[(?P<cpu>\d+)\]\s+(?P<flags>\S+)\s+"
                   r"(?P<secs>\d+)\.(?P<frac>\d+):\s+(?P<event>\w+):\s?(?P<body>.*)$")
_FIELD = re.compile(r"(\w+)=(\S+)")
#: how far before the deadline an excerpt starts
EXCERPT_LEAD_NS = 100_000
EXCERPT_MAX_LINES = 60


@dataclass
class Event:
    t_ns: int
    task: str
    pid: int
    flags: str
    event: str
    body: str
    line: str

    def field(self, name: str) -> str | None:
        for k, v in _FIELD.findall(self.body):
            if k == name:
                return v
        return None


def parse_lines(lines: list[str]) -> list[Event]:
    """The trace lines that read as events, in order; headers and odd lines are skipped."""
    out = []
    for line in lines:
        if not isinstance(line, str):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        frac = m.group("frac")
        t = int(m.group("secs")) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])
        out.append(Event(t, m.group("task").strip(), int(m.group("pid")), m.group("flags"), m.group("event"),
                         m.group("body"), line))
    return out


@dataclass
class Task:
    """A thread as the trace and the probe's /proc reading describe it."""

    comm: str
    pid: int
    policy: str | None = None       # "fifo", "rr", "other" ... (None: not known)
    rt_priority: int | None = None
    kernel_prio: int | None = None  # the trace's prio: 0..99 real-time (99 - rt priority), 100..139 normal

    def describe(self) -> str:
        if self.pid == 0:
            return "idle"
        return f"{self.comm} (pid {self.pid}, {self.policy_text()})"

    def kind_text(self) -> str:
        """The task without its pid, which changes between repetitions: "rtvb-hog, SCHED_FIFO 90"."""
        return "idle" if self.pid == 0 else f"{self.comm}, {self.policy_text()}"

    def policy_text(self) -> str:
        if self.policy in ("fifo", "rr"):
            return f"SCHED_{self.policy.upper()} {self.rt_priority}"
        if self.policy:
            return f"SCHED_{self.policy.upper()}"
        if self.kernel_prio is not None and 0 <= self.kernel_prio < 100:
            return f"real-time priority {99 - self.kernel_prio}"
        if self.kernel_prio is not None:
            return f"SCHED_OTHER nice {self.kernel_prio - 120}"
        return "policy unknown"

    def outranks_or_equals(self, other: "Task") -> bool:
        """Whether this task may run while `other` waits without preemption being disabled: a
        real-time priority at least as high."""
        mine, theirs = self.rt_rank(), other.rt_rank()
        return mine is not None and (theirs is None or mine >= theirs)

    def rt_rank(self) -> int | None:
        if self.policy in ("fifo", "rr") and self.rt_priority is not None:
            return self.rt_priority
        if self.policy is None and self.kernel_prio is not None and 0 <= self.kernel_prio < 100:
            return 99 - self.kernel_prio
        if self.policy == "deadline" or (self.kernel_prio is not None and self.kernel_prio < 0):
            return 100
        return None


@dataclass
class Spike:
    """One traced breach, explained."""

    cpu: int
    offset_s: float | None          # when in the run (deadline - start)
    latency_ns: int
    cause: str                      # one of CAUSES
    culprit: str                    # what the cause names: "rtvb-hog (pid 42, SCHED_FIFO 90)", "NET_RX"
    explanation: str                # one sentence
    group: str = ""                 # the culprit as counted across repetitions: "rtvb-hog, SCHED_FIFO 90"
    phases_ns: dict[str, int] = field(default_factory=dict)   # timer, scheduling, return
    shares_ns: dict[str, int] = field(default_factory=dict)   # what the explained phase was spent on
    steal_ns: int | None = None
    excerpt: list[str] = field(default_factory=list)
    repetition: int | None = None   # set by the caller (1-based)

    def to_dict(self) -> dict[str, Any]:
        return {"cpu": self.cpu, "offset_s": self.offset_s, "latency_ns": self.latency_ns, "cause": self.cause,
                "culprit": self.culprit, "group": self.group, "explanation": self.explanation, "phases_ns": self.phases_ns,
                "shares_ns": self.shares_ns, "steal_ns": self.steal_ns, "repetition": self.repetition,
                "excerpt": self.excerpt}


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _us(ns: float) -> str:
    return f"{ns / 1000:.0f} us" if ns >= 10_000 else f"{ns / 1000:.1f} us"


def attribute(record: dict[str, Any]) -> Spike | None:
    """The explained breach of one `trace` record; None when the record lacks its times."""
    cpu, tid = _int(record.get("cpu")), _int(record.get("tid"))
    deadline, wake = _int(record.get("deadline_ns")), _int(record.get("wake_ns"))
    if cpu is None or tid is None or deadline is None or wake is None or wake < deadline:
        return None
    offset = _int(record.get("offset_ns"))
    steal = _int(record.get("steal_ns"))
    lines: list[str] = []
    tasks_proc: list[dict] = []
    dropped = 0
    for c in record.get("cpus") or []:
        if isinstance(c, dict) and c.get("cpu") == cpu:
            lines = [x for x in c.get("lines") or [] if isinstance(x, str)]
            tasks_proc = [t for t in c.get("tasks") or [] if isinstance(t, dict)]
            dropped = _int(c.get("dropped_lines")) or 0
    events = parse_lines(lines)
    if record.get("clock") == "local":
        # The trace runs on the CPU's own clock; the probe measured the offset to CLOCK_MONOTONIC at
        # the breach marker. Without it, the events cannot be placed against the deadline.
        shift = record.get("clock_offset_ns")
        if not isinstance(shift, int) or isinstance(shift, bool):
            events = []
        for e in events:
            e.t_ns -= shift
    spike = Spike(cpu=cpu, offset_s=offset / 1e9 if offset is not None else None, latency_ns=wake - deadline,
                  cause="unknown", culprit="", explanation="", steal_ns=steal)
    known = {t["pid"]: t for t in tasks_proc if _int(t.get("pid")) is not None}
    spike.excerpt = _excerpt(events, deadline, wake)
    if not events or events[0].t_ns > deadline:
        spike.explanation = ("The saved trace does not reach back to the deadline (lines dropped, the buffer "
                             "started later, or its clock could not be aligned), so the breach cannot be "
                             "explained.")
        return spike
    Timeline(events, known, tid, steal).explain(spike, deadline, wake)
    if dropped:
        spike.explanation += (f" ({dropped:,} trace lines in the middle of this stretch were left out to keep the "
                              "record small; their time counts for what ran before them.)")
    return spike


def _excerpt(events: list[Event], deadline: int, wake: int) -> list[str]:
    """The lines from shortly before the deadline to the wake-up, the newest kept when too many."""
    picked = [e.line.rstrip() for e in events if deadline - EXCERPT_LEAD_NS <= e.t_ns <= wake + 20_000]
    if len(picked) > EXCERPT_MAX_LINES:
        head = picked[:10]
        tail = picked[-(EXCERPT_MAX_LINES - 11):]
        picked = head + [f"... {len(picked) - len(head) - len(tail)} lines left out ..."] + tail
    return picked


_IRQ_PAIRS = (("irq_handler_entry", "irq_handler_exit"), ("ipi_entry", "ipi_exit"))


class Timeline:
    """One CPU's events as who ran when."""

    def __init__(self, events: list[Event], known: dict[int, dict], tid: int, steal: int | None):
        self.events = events
        self.known = known
        self.tid = tid
        self.steal = steal
        # The kernel priority of every thread the scheduler events mention: what is left of a task
        # that ended before the probe could read its policy from /proc.
        self.prios: dict[int, int] = {}
        for e in events:
            for pid_key, prio_key in (("prev_pid", "prev_prio"), ("next_pid", "next_prio"), ("pid", "prio")):
                pid, prio = e.field(pid_key), e.field(prio_key)
                if pid and prio and pid.isdigit() and prio.lstrip("-").isdigit():
                    self.prios[int(pid)] = int(prio)

    def task(self, comm: str, pid: int, kernel_prio: int | None = None) -> Task:
        info = self.known.get(pid)
        prio = kernel_prio if kernel_prio is not None else self.prios.get(pid)
        if info:
            return Task(str(info.get("comm") or comm), pid, info.get("policy"), _int(info.get("rt_priority")), prio)
        return Task(comm, pid, None, None, prio)

    def _wakeup(self, deadline: int, wake: int) -> int | None:
        """When the timer woke the measured thread: the `now` of the hrtimer expiry just before its
        sched_wakeup, or the wakeup's own time."""
        for i, e in enumerate(self.events):
            if e.t_ns < deadline - 5_000 or e.t_ns > wake:
                continue
            if e.event in ("sched_wakeup", "sched_waking") and e.field("pid") == str(self.tid):
                for back in range(i - 1, max(-1, i - 6), -1):
                    prev = self.events[back]
                    if prev.event == "hrtimer_expire_entry" and prev.field("function") == "hrtimer_wakeup":
                        now = prev.field("now")
                        if now and now.isdigit():
                            return max(deadline, int(now))
                        return max(deadline, prev.t_ns)
                return max(deadline, e.t_ns)
        return None

    def _switched_in(self, after: int, wake: int) -> int | None:
        for e in self.events:
            if e.t_ns < after or e.t_ns > wake:
                continue
            if e.event == "sched_switch" and e.field("next_pid") == str(self.tid):
                return e.t_ns
            if e.pid == self.tid:
                return e.t_ns
        return None

    def shares(self, start: int, end: int) -> tuple[dict[tuple[str, str], int], dict[str, Task], int]:
        """Time in [start, end) by (kind, name): kind "irq", "softirq" or "task"; the tasks by
        name; and the longest stretch without any event."""
        out: dict[tuple[str, str], int] = {}
        tasks: dict[str, Task] = {}
        stack: list[tuple[str, str]] = []
        current: Task | None = None
        longest_silence = 0
        evs = self.events
        for i, e in enumerate(evs):
            current = self._running(e, current)
            if len(e.flags) > 2 and e.flags[2] == ".":
                stack.clear()        # the event came from task context: no handler is running (a lost exit)
            self._enter_exit(e, stack)
            nxt = evs[i + 1].t_ns if i + 1 < len(evs) else end
            lo, hi = max(e.t_ns, start), min(nxt, end)
            if hi <= lo:
                continue
            if stack:
                key = stack[-1]
            else:
                who = current or self.task(e.task, e.pid)
                key = ("task", who.describe())
                tasks[key[1]] = who
            out[key] = out.get(key, 0) + (hi - lo)
            longest_silence = max(longest_silence, hi - lo)
        return out, tasks, longest_silence

    def _running(self, e: Event, current: Task | None) -> Task:
        if e.event == "sched_switch":
            pid = e.field("next_pid")
            prio = e.field("next_prio")
            if pid and pid.lstrip("-").isdigit():
                return self.task(e.field("next_comm") or "?", int(pid),
                                 int(prio) if prio and prio.lstrip("-").isdigit() else None)
        if current is not None and current.pid == e.pid:
            return current
        return self.task(e.task, e.pid)

    @staticmethod
    def _enter_exit(e: Event, stack: list[tuple[str, str]]) -> None:
        name = e.event
        # The probe leaves the local timer interrupt's own events out (they fire on every wake-up);
        # an hrtimer expiring in hard interrupt context ('h' or 'H' in the flags' third column)
        # marks that interrupt instead.
        hardirq = len(e.flags) > 2 and e.flags[2] in "hH"
        if name == "hrtimer_expire_entry":
            if hardirq:
                stack.append(("irq", "timer interrupt"))
            return
        if name == "hrtimer_expire_exit":
            if hardirq and stack and stack[-1] == ("irq", "timer interrupt"):
                stack.pop()
            return
        if name == "softirq_entry":
            m = re.search(r"action=(\w+)", e.body)
            stack.append(("softirq", m.group(1) if m else f"vector {e.field('vec')}"))
        elif name == "irq_handler_entry":
            stack.append(("irq", f"IRQ {e.field('irq')} ({e.field('name')})"))
        elif name.endswith("_entry"):
            vector = name[: -len("_entry")].replace("_", " ")
            stack.append(("irq", vector))
        elif name.endswith("_exit"):
            if stack:
                stack.pop()

    def explain(self, spike: Spike, deadline: int, wake: int) -> None:
        timer_at = self._wakeup(deadline, wake)
        if timer_at is None:
            # No wake-up event: the thread was not asleep at its deadline (it was still running or
            # runnable from the previous cycle), so the whole delay is scheduling.
            timer_at = deadline
        switched = self._switched_in(timer_at, wake) or wake
        phases = {"timer": timer_at - deadline, "scheduling": max(0, switched - timer_at),
                  "return": max(0, wake - switched)}
        spike.phases_ns = phases
        phase = max(phases, key=lambda k: phases[k])
        start, end = {"timer": (deadline, timer_at), "scheduling": (timer_at, switched),
                      "return": (switched, wake)}[phase]
        shares, tasks, silence = self.shares(start, end)
        spike.shares_ns = {f"{k}: {n}": v for (k, n), v in sorted(shares.items(), key=lambda kv: -kv[1])}
        me = self.task("rtvb-probe", self.tid)
        length = max(end - start, 1)
        irqs = {k: v for k, v in shares.items() if k[0] in ("irq", "softirq")}
        top = max(shares.items(), key=lambda kv: kv[1]) if shares else None
        where = {"timer": "before the timer fired", "scheduling": "between the wake-up and the switch to the thread",
                 "return": "after the switch, before the thread read the clock"}[phase]
        lead = (f"The wake-up was {_us(spike.latency_ns)} late; {_us(phases[phase])} of it passed {where}")
        if top is None:
            spike.cause, spike.culprit = "unknown", ""
            spike.explanation = lead + ", and the trace has no event in that stretch."
            return
        (kind, name), took = top
        irq_total = sum(irqs.values())
        if irqs and irq_total * 2 >= length:
            # Interrupt work comes in bursts of several handlers and vectors (a timer interrupt raising
            # the softirqs that process the packets): the kind with the most time is the cause, its two
            # largest names the culprit.
            by_kind = {k: sum(v for (kk, _), v in irqs.items() if kk == k) for k in ("irq", "softirq")}
            kind = max(by_kind, key=lambda k: by_kind[k])
            named = sorted(((n, v) for (kk, n), v in irqs.items() if kk == kind), key=lambda nv: -nv[1])[:2]
            spike.cause, spike.culprit = kind, " + ".join(n for n, _ in named)
            spike.group = spike.culprit
            what = "interrupt handlers" if kind == "irq" else "softirq processing"
            parts = ", ".join(f"{n} {_us(v)}" for n, v in named)
            spike.explanation = f"{lead}: {what} took {_us(by_kind[kind])} of it ({parts})."
            return
        task = tasks.get(name)
        silent = silence * 2 >= length
        culprit = task.describe() if task is not None else name
        spike.group = task.kind_text() if task is not None else name
        idle = task is not None and task.pid == 0
        # A task entitled to the CPU explains the time it ran whatever the steal counter did (it
        # moves in whole ticks); a silent stretch nobody was entitled to is the hypervisor's when
        # steal rose.
        # After the switch-in, another task can only have run by preempting the measuring thread: one
        # of higher priority is as entitled to that as to the CPU before the switch.
        entitled = (phase in ("scheduling", "return") and task is not None and not idle and task.pid != self.tid
                    and task.outranks_or_equals(me))
        if self.steal and (idle or silent) and not entitled:
            self._hypervisor(spike, lead, silence)
        elif idle:
            spike.cause, spike.culprit = "idle-exit", "idle"
            spike.explanation = (f"{lead}, while the CPU was idle and no event explains it: the exit from an idle "
                                 "state, firmware, or a hypervisor that does not account steal time.")
        elif task is not None and task.pid == self.tid:
            spike.cause, spike.culprit = "irq-off", culprit
            spike.explanation = (f"{lead}, in the measuring thread itself with no event in between: on its way "
                                 "back to user space the CPU was taken away or slowed (a virtual CPU not running, "
                                 "an emulated one) without steal being accounted, or interrupts were disabled.")
        elif phase == "timer":
            spike.cause, spike.culprit = "irq-off", culprit
            spike.explanation = (f"{lead}, while {culprit} ran and no interrupt came: interrupts disabled "
                                 "(or the CPU taken away without steal being accounted).")
        elif entitled:
            spike.cause, spike.culprit = "task", culprit
            how = "preempted it and ran" if phase == "return" else "ran"
            spike.explanation = (f"{lead}: {culprit}, of higher or equal priority than the measuring thread, "
                                 f"{how} for {_us(took)} of it.")
        else:
            spike.cause, spike.culprit = "preempt-off", culprit
            spike.explanation = (f"{lead}: {culprit}, of lower priority, kept the CPU for {_us(took)} after the "
                                 "wake-up (preemption disabled).")

    def _hypervisor(self, spike: Spike, lead: str, silence: int) -> None:
        spike.cause, spike.culprit, spike.group = "hypervisor", "hypervisor", "hypervisor"
        spike.explanation = (f"{lead}, with no event for {_us(silence)} while the CPU's steal time rose by "
                             f"{_us(self.steal or 0)}: the hypervisor did not run this CPU.")
