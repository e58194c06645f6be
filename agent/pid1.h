/* The agent as PID 1 in the initramfs (pid1.c). */
#ifndef CONSTEL_PID1_H
#define CONSTEL_PID1_H

/* The boot: never returns (reboots or powers off at the end). */
int pid1_main(void);

#endif
