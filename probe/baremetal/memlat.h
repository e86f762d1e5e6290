/* `mem-lat` on the bare-metal image (memlat.c): argv[0] is "mem-lat".
 * Returns its exit status. */
#ifndef RTVB_BM_MEMLAT_H
#define RTVB_BM_MEMLAT_H

int memlat_command(int argc, char **argv);

#endif
