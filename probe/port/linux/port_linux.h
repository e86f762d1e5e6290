/*
 * What the Linux implementation of the porting layer needs besides port.h:
 * the policy its threads run at (as the `rtos` subcommand was granted it),
 * the Linux priority port priority 0 maps to, and the one CPU every thread
 * is pinned to. Call before port_run.
 */
#ifndef RTVB_PORT_LINUX_H
#define RTVB_PORT_LINUX_H

void port_linux_configure(int policy_asked, int policy_granted, int priority_base, int cpu);

#endif
