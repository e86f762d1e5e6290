/* `mem-bw` on the bare-metal image (membw.c): argv[0] is "mem-bw".
 * Returns its exit status. */
#ifndef RTVB_BM_MEMBW_H
#define RTVB_BM_MEMBW_H

int membw_command(int argc, char **argv);

#endif
