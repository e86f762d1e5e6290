/* `ipc` on the bare-metal image (pingpong.c). */
#ifndef RTVB_BM_PINGPONG_H
#define RTVB_BM_PINGPONG_H

int ipc_command(int argc, char **argv);

#endif
