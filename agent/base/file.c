/* Writing files the way the Go bootstrapper does (spec §5.4): create-exclusive, so an
 * existing file is an error and nothing is overwritten. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
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
