/*
 * `rtos` on the bare-metal image: the RTOS-primitive tests written against
 * the porting layer (probe/port/port_tests.c), run on the image's own
 * scheduler (probe/port/baremetal/), with the records of the Linux probe's
 * `rtos --port`.
 */
#ifndef RTVB_BM_RTOS_H
#define RTVB_BM_RTOS_H

/* argv[0] is "rtos". Returns its exit status. */
int rtos_command(int argc, char **argv);

#endif
