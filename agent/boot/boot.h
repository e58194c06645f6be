/* PID-1 duties of the initramfs (ARCHITECTURE.md "The boot, as one path"). So far: loading
 * the kernel modules the initrd carries, since there is no modprobe and the kernel's own
 * request_module() finds nothing; reading the kernel command line. */
#ifndef CONSTEL_BOOT_H
#define CONSTEL_BOOT_H

#include <stddef.h>

/* Loads every module named in list (one absolute .ko path per line, dependencies first) with
 * finit_module(). Already loaded (EEXIST) and no such hardware (ENODEV) are fine; any other
 * failure is logged as one line and counted. Returns the number of failures, or a negative
 * errno when the list cannot be read. */
int modules_load_list(const char *list);

/* The value of key on a kernel command line (kernel quoting rules; the last occurrence wins;
 * nothing after "--"). Returns 1 and the value in out ("" for a bare key), 0 when absent,
 * -ENAMETOOLONG when the value does not fit in outlen. */
int cmdline_get(const char *cmdline, const char *key, char *out, size_t outlen);

#endif
