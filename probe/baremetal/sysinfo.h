/*
 * `sysinfo` on the bare-metal image: what the host keeps as the
 * environment's fingerprint, said by the image itself.
 */
#ifndef RTVB_BM_SYSINFO_H
#define RTVB_BM_SYSINFO_H

/* The `sysinfo` command: argv[0] is "sysinfo". Returns its exit status. */
int sysinfo_command(int argc, char **argv);

#endif
