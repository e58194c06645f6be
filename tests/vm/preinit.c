/* preinit: /init of a test overlay initrd (qemu-tests/preinit.sh) that prepares what the guest's
 * hardware cannot give under TCG (a fake /dev/sev-guest, GCE's firmware events) and then
 * becomes the agent, PID 1 kept:
 *   1. devtmpfs on /dev, proc on /proc, sysfs on /sys (the agent mounts them again later: its
 *      mount table tolerates EBUSY and stacking);
 *   2. every .ko file in /preinit/modules in lexical order (finit_module; NN-name.ko fixes the order,
 *      EEXIST is fine);
 *   3. every executable file in /preinit.d, in lexical order, argv[0] its path, the environment we were
 *      given, each waited for; a step that keeps running (a fake device) forks, and its parent
 *      exits 0 once the child is ready. A step that fails: one line "preinit: STEP: exit N"
 *      and the VM powers off;
 *   4. execve("/constel-agent") with the kernel's argv and envp.
 * Console lines start "preinit: ". docs/sevboot.md. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MODULE_DIR "/preinit/modules"
#define STEP_DIR   "/preinit.d"
#define AGENT	   "/constel-agent"

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	n = snprintf(line, sizeof line, "preinit: ");
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	va_end(ap);
	dprintf(STDOUT_FILENO, "%s\n", line);
}

static void __attribute__((noreturn)) power_off(void)
{
	sync();
	reboot(RB_POWER_OFF);
	_exit(1); /* PID 1 exiting panics the kernel: panic=-1 ends the VM too */
}

/* the kernel opens /dev/console as 0, 1 and 2 when the initramfs has it; else after devtmpfs */
static void console(void)
{
	int fd;

	if (fcntl(STDOUT_FILENO, F_GETFD) >= 0)
		return;
	fd = open("/dev/console", O_RDWR | O_NOCTTY);
	if (fd < 0)
		return;
	for (int i = 0; i < 3; i++)
		if (fd != i)
			dup2(fd, i);
	if (fd > 2)
		close(fd);
}

static void mounts(void)
{
	static const struct {
		const char *src, *target, *type;
	} m[] = {{"devtmpfs", "/dev", "devtmpfs"},
		 {"proc", "/proc", "proc"},
		 {"sysfs", "/sys", "sysfs"}};

	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
		mkdir(m[i].target, 0755);
		if (mount(m[i].src, m[i].target, m[i].type, 0, NULL) < 0 && errno != EBUSY)
			say("mount %s on %s: %s", m[i].type, m[i].target, strerror(errno));
	}
}

static int visible(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

static int load_modules(void)
{
	struct dirent **names;
	int n = scandir(MODULE_DIR, &names, visible, alphasort), r = 0;

	if (n < 0)
		return errno == ENOENT ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		char path[512];
		size_t l = strlen(names[i]->d_name);
		int fd;

		if (r < 0 || l < 4 || strcmp(names[i]->d_name + l - 3, ".ko"))
			goto next;
		snprintf(path, sizeof path, MODULE_DIR "/%s", names[i]->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST)) {
			r = -errno;
			say("module %s: %s", names[i]->d_name, strerror(errno));
		} else {
			say("module %s loaded", names[i]->d_name);
		}
		if (fd >= 0)
			close(fd);
	next:
		free(names[i]);
	}
	free(names);
	return r;
}

/* 0 when every step exited 0; else the failing step has said so */
static int run_steps(char **envp)
{
	struct dirent **names;
	int n = scandir(STEP_DIR, &names, visible, alphasort), r = 0;

	if (n < 0)
		return errno == ENOENT ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		char path[512];
		struct stat st;
		pid_t pid;
		int status;

		snprintf(path, sizeof path, STEP_DIR "/%s", names[i]->d_name);
		if (r < 0 || stat(path, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & S_IXUSR))
			goto next;
		say("step %s", path);
		pid = fork();
		if (pid < 0) {
			r = -errno;
			say("%s: fork: %s", path, strerror(errno));
			goto next;
		}
		if (pid == 0) {
			char *argv[] = {path, NULL};

			execve(path, argv, envp);
			dprintf(STDOUT_FILENO, "preinit: %s: exec: %s\n", path, strerror(errno));
			_exit(127);
		}
		while (waitpid(pid, &status, 0) < 0)
			if (errno != EINTR) {
				status = 255 << 8;
				break;
			}
		if (WIFSIGNALED(status)) {
			say("%s: exit %d (signal %d)", path, 128 + WTERMSIG(status),
			    WTERMSIG(status));
			r = -ECHILD;
		} else if (WEXITSTATUS(status)) {
			say("%s: exit %d", path, WEXITSTATUS(status));
			r = -ECHILD;
		}
	next:
		free(names[i]);
	}
	free(names);
	return r;
}

int main(int argc, char **argv, char **envp)
{
	(void)argc;
	mounts();
	console();
	setvbuf(stdout, NULL, _IONBF, 0);
	say("PID %d, preparing the guest", (int)getpid());
	if (load_modules() < 0 || run_steps(envp) < 0) {
		say("a step failed: powering off");
		power_off();
	}
	say("exec " AGENT);
	execve(AGENT, argv, envp);
	say("exec " AGENT ": %s", strerror(errno));
	power_off();
}
