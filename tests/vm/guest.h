/* The harness side of a test program that runs as /init of a test initrd (tests/vm): the
 * early mounts, the kernel command line, vm.py's console protocol (qemu-tests/README.md). */
#ifndef CONSTEL_TESTS_VM_GUEST_H
#define CONSTEL_TESTS_VM_GUEST_H

/* Mounts proc, sys and devtmpfs (with run: a tmpfs on /run and /tmp), reads the kernel
 * command line, makes stdout unbuffered, names the program in the log and prints
 * @@INIT_START. */
void guest_start(const char *program, int with_run);

/* The value of key on the kernel command line, or def (8 values may be held at a time). */
const char *guest_arg(const char *key, const char *def);

/* One "@@RESULT name PASS|FAIL detail" line; a FAIL is counted for guest_done. */
void guest_result(const char *name, int ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Syncs, prints "@@INIT_DONE rc=N" (1 when a result failed) and powers off. */
void guest_done(void) __attribute__((noreturn));

#endif
