/* Files: writing the way the Go bootstrapper does (spec §5.4: create-exclusive, so an
 * existing file is an error and nothing is overwritten), replacing a file whole, reading
 * with a bound; and the monotonic clock. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base.h"

int write_file_excl(const char *path, const void *data, size_t len, mode_t mode)
{
	const unsigned char *p = data;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);

	if (fd < 0)
		return -errno;
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;

			close(fd);
			unlink(path);
			return r;
		}
		p += n;
		len -= (size_t)n;
	}
	if (fsync(fd) < 0 || close(fd) < 0) {
		unlink(path);
		return -EIO;
	}
	return 0;
}

int mkdir_parents(const char *path, mode_t mode)
{
	char tmp[4096];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof tmp)
		return -EINVAL;
	memcpy(tmp, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (tmp[i] != '/' && tmp[i] != '\0')
			continue;
		tmp[i] = '\0';
		if (mkdir(tmp, mode) < 0 && errno != EEXIST)
			return -errno;
		tmp[i] = path[i];
	}
	return 0;
}

int write_file_replace(const char *path, const void *data, size_t len, mode_t mode)
{
	char tmp[4096], *slash;
	int r;

	if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
		return -ENAMETOOLONG;
	slash = strrchr(tmp, '/');
	if (slash && slash != tmp) {
		*slash = '\0';
		r = mkdir_parents(tmp, 0755);
		*slash = '/';
		if (r < 0)
			return r;
	}
	unlink(tmp);
	if ((r = write_file_excl(tmp, data, len, mode)) < 0)
		return r;
	if (rename(tmp, path) < 0) {
		r = -errno;
		unlink(tmp);
		return r;
	}
	return 0;
}

ssize_t read_full(int fd, void *buf, size_t cap)
{
	size_t n = 0;

	while (n < cap) {
		ssize_t k = read(fd, (char *)buf + n, cap - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		n += (size_t)k;
	}
	return (ssize_t)n;
}

uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int path_in(char *out, size_t cap, const char *root, const char *path)
{
	if (snprintf(out, cap, "%s%s", root, path) >= (int)cap)
		return log_err(-ENAMETOOLONG, "path %s%s too long", root, path);
	return 0;
}

int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 ? -1 : 0;
}
