/* Kernel command-line lookup: the kernel's splitting and quoting rules. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "boot/boot.h"
#include "flow/node.h"
#include "harness.h"

TEST(cmdline_finds_values_flags_and_the_last_occurrence)
{
	const char *c = "console=ttyS0 quiet constel.csp=qemu constel.disk-kdf=min "
			"constel.disk-kdf=constellation\n";
	char v[64];

	CHECK(cmdline_get(c, "constel.csp", v, sizeof v) == 1 && !strcmp(v, "qemu"));
	CHECK(cmdline_get(c, "quiet", v, sizeof v) == 1 && !strcmp(v, ""));
	CHECK(cmdline_get(c, "constel.disk-kdf", v, sizeof v) == 1 && !strcmp(v, "constellation"));
	CHECK(cmdline_get(c, "constel", v, sizeof v) == 0);
	CHECK(cmdline_get(c, "console=ttyS0", v, sizeof v) == 0);
	CHECK(cmdline_get("", "quiet", v, sizeof v) == 0);
}

TEST(cmdline_quotes_hold_spaces_and_are_dropped)
{
	char v[64];

	CHECK(cmdline_get("a=1 b=\"x y\" c=2", "b", v, sizeof v) == 1 && !strcmp(v, "x y"));
	CHECK(cmdline_get("\"b=x y\" c=2", "b", v, sizeof v) == 1 && !strcmp(v, "x y"));
	CHECK(cmdline_get("a=1 b=\"x y\" c=2", "c", v, sizeof v) == 1 && !strcmp(v, "2"));
	CHECK(cmdline_get("b=\"unterminated c=2", "c", v, sizeof v) == 0);
}

TEST(cmdline_stops_at_the_init_separator_and_bounds_values)
{
	char v[4];

	CHECK(cmdline_get("a=1 -- b=2", "b", v, sizeof v) == 0);
	CHECK(cmdline_get("a=1 -- b=2", "a", v, sizeof v) == 1 && !strcmp(v, "1"));
	CHECK(cmdline_get("a=1234", "a", v, sizeof v) == -ENAMETOOLONG);
	CHECK(cmdline_get("a=123", "a", v, sizeof v) == 1 && !strcmp(v, "123"));
}

TEST(node_config_takes_the_init_timeout_within_its_bounds)
{
	struct node_config c;
	char arena[1024], err[256];

	node_config_defaults(&c);
	CHECK(node_config_cmdline(&c, "constel.init-timeout=7200", arena, sizeof arena, err,
				  sizeof err) == 0 &&
	      c.init_timeout_ms == 7200 * 1000);
	node_config_defaults(&c);
	CHECK(node_config_cmdline(&c, "constel.csp=qemu", arena, sizeof arena, err, sizeof err) ==
		  0 &&
	      c.init_timeout_ms == 0); /* 0: the 1 h default */
	CHECK(node_config_cmdline(&c, "constel.init-timeout=5", arena, sizeof arena, err,
				  sizeof err) < 0 &&
	      strstr(err, "constel.init-timeout"));
	CHECK(node_config_cmdline(&c, "constel.init-timeout=1h", arena, sizeof arena, err,
				  sizeof err) < 0);
}

TEST(node_config_takes_constel_disk_wipe_full_sync_or_none_and_refuses_other_words)
{
	struct node_config c;
	char arena[1024], err[256];

	node_config_defaults(&c);
	CHECK(c.disk_wipe == DISK_WIPE_NONE); /* no wipe by default: the audit holds */
	CHECK(node_config_cmdline(&c, "constel.disk-wipe=sync", arena, sizeof arena, err,
				  sizeof err) == 0 &&
	      c.disk_wipe == DISK_WIPE_SYNC);
	CHECK(node_config_cmdline(&c, "constel.disk-wipe=full", arena, sizeof arena, err,
				  sizeof err) == 0 &&
	      c.disk_wipe == DISK_WIPE_FULL);
	CHECK(node_config_cmdline(&c, "constel.disk-wipe=none", arena, sizeof arena, err,
				  sizeof err) == 0 &&
	      c.disk_wipe == DISK_WIPE_NONE);
	CHECK(node_config_cmdline(&c, "constel.disk-wipe=partial", arena, sizeof arena, err,
				  sizeof err) < 0 &&
	      strstr(err, "constel.disk-wipe=partial"));
}

TEST(node_config_takes_constel_init_secret_hash_only_as_a_bcrypt_hash)
{
	const char *h = "$2a$10$0123456789012345678901uMvcQ9mDmbXJMMvl8Lw3CHSWsWrANMO";
	struct node_config c;
	char arena[1024], line[256], err[256];

	node_config_defaults(&c);
	CHECK(c.init_secret_hash == NULL);
	snprintf(line, sizeof line, "constel.csp=aws constel.init-secret-hash=%s", h);
	CHECK(node_config_cmdline(&c, line, arena, sizeof arena, err, sizeof err) == 0 &&
	      c.init_secret_hash && !strcmp(c.init_secret_hash, h));
	node_config_defaults(&c);
	CHECK(node_config_cmdline(&c, "constel.init-secret-hash=0123", arena, sizeof arena, err,
				  sizeof err) < 0 &&
	      strstr(err, "not a bcrypt hash"));
}

TEST(node_config_takes_constel_event_log_as_an_absolute_bounded_path)
{
	struct node_config c;
	char arena[2048], line[600], err[256], path[300];

	node_config_defaults(&c);
	CHECK(c.event_log == NULL); /* securityfs's, as the issuer defaults */
	CHECK(node_config_cmdline(&c, "constel.csp=gcp constel.event-log=/preinit/eventlog", arena,
				  sizeof arena, err, sizeof err) == 0 &&
	      c.event_log && !strcmp(c.event_log, "/preinit/eventlog"));
	node_config_defaults(&c);
	CHECK(node_config_cmdline(&c, "constel.event-log=preinit/eventlog", arena, sizeof arena,
				  err, sizeof err) == -EINVAL &&
	      !strcmp(err, "command line: constel.event-log=preinit/eventlog is not an absolute "
			   "path of at most 255 bytes"));
	node_config_defaults(&c);
	CHECK(node_config_cmdline(&c, "constel.event-log=", arena, sizeof arena, err, sizeof err) ==
		  -EINVAL &&
	      strstr(err, "is not an absolute path"));
	/* 255 bytes pass, 256 do not */
	path[0] = '/';
	memset(path + 1, 'a', 254);
	path[255] = '\0';
	snprintf(line, sizeof line, "constel.event-log=%s", path);
	node_config_defaults(&c);
	CHECK(node_config_cmdline(&c, line, arena, sizeof arena, err, sizeof err) == 0 &&
	      c.event_log && strlen(c.event_log) == 255);
	snprintf(line, sizeof line, "constel.event-log=%sb", path);
	node_config_defaults(&c);
	CHECK(node_config_cmdline(&c, line, arena, sizeof arena, err, sizeof err) == -EINVAL &&
	      strstr(err, "constel.event-log=/aaaa") && strstr(err, "at most 255 bytes"));
}
