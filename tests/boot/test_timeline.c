/* The boot timeline's JSON, read back with json-c: the phases in the order they were marked,
 * no negative durations, a total that is the sum of the phases (each phase rounds down by
 * less than 1 ms), a table bounded at TIMELINE_MAX phases whose last entry absorbs the rest,
 * -ENOSPC for a short buffer, and the file written by timeline_write. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "boot/boot.h"
#include "harness.h"

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L};

	nanosleep(&ts, NULL);
}

/* Checks the document; returns the number of phases, or -1 (after a failed CHECK). */
static int check_doc(const char *buf, const char *const *names, int n_names)
{
	struct json_object *doc = json_tokener_parse(buf), *phases, *total;
	long long sum = 0;
	int n = -1;

	if (!doc)
		return -1;
	if (json_object_object_get_ex(doc, "phases", &phases) &&
	    json_object_is_type(phases, json_type_array) &&
	    json_object_object_get_ex(doc, "total_ms", &total) &&
	    json_object_is_type(total, json_type_int)) {
		n = (int)json_object_array_length(phases);
		for (int i = 0; i < n; i++) {
			struct json_object *p = json_object_array_get_idx(phases, i), *name, *ms;

			if (!json_object_object_get_ex(p, "name", &name) ||
			    !json_object_object_get_ex(p, "ms", &ms) ||
			    !json_object_is_type(ms, json_type_int) ||
			    json_object_get_int64(ms) < 0 ||
			    (i < n_names && strcmp(json_object_get_string(name), names[i]))) {
				n = -1;
				break;
			}
			sum += json_object_get_int64(ms);
		}
		/* each phase is rounded down: the total is the sum plus less than 1 ms a phase */
		if (n >= 0 && !(json_object_get_int64(total) >= sum &&
				json_object_get_int64(total) <= sum + n))
			n = -1;
	}
	json_object_put(doc);
	return n;
}

TEST(timeline_json_has_the_phases_in_order_and_sums_to_the_total)
{
	static const char *const names[] = {"mounts", "modules", "network", "disk"};
	char buf[4096];
	struct json_object *doc, *phases, *ms;
	int len;

	timeline_start("mounts");
	sleep_ms(20);
	timeline_mark("modules");
	timeline_mark("network");
	sleep_ms(30);
	timeline_mark("disk");
	len = timeline_json(buf, sizeof buf);
	CHECK(len > 0 && (size_t)len == strlen(buf));
	CHECK(check_doc(buf, names, 4) == 4);
	doc = json_tokener_parse(buf);
	CHECK(doc);
	CHECK(json_object_object_get_ex(doc, "phases", &phases));
	CHECK(json_object_object_get_ex(json_object_array_get_idx(phases, 0), "ms", &ms));
	CHECK(json_object_get_int64(ms) >= 20);
	CHECK(json_object_object_get_ex(json_object_array_get_idx(phases, 2), "ms", &ms));
	CHECK(json_object_get_int64(ms) >= 30);
	json_object_put(doc);
}

TEST(timeline_is_bounded_and_the_last_entry_absorbs_the_rest)
{
	char buf[8192], name[16];
	struct json_object *doc, *phases, *last;
	int len;

	timeline_start("p0");
	for (int i = 1; i < 50; i++) {
		snprintf(name, sizeof name, "p%d", i);
		timeline_mark(name);
	}
	len = timeline_json(buf, sizeof buf);
	CHECK(len > 0);
	CHECK(check_doc(buf, NULL, 0) == TIMELINE_MAX);
	doc = json_tokener_parse(buf);
	CHECK(doc && json_object_object_get_ex(doc, "phases", &phases));
	CHECK(json_object_object_get_ex(json_object_array_get_idx(phases, TIMELINE_MAX - 2), "name",
					&last));
	CHECK(!strcmp(json_object_get_string(last), "p30"));
	CHECK(json_object_object_get_ex(json_object_array_get_idx(phases, TIMELINE_MAX - 1), "name",
					&last));
	CHECK(!strcmp(json_object_get_string(last), "more"));
	json_object_put(doc);
}

TEST(timeline_json_refuses_a_short_buffer_and_escapes_names)
{
	static const char *const names[] = {"a\"b\\c\n", "x"};
	char small[16], buf[1024];

	timeline_start(names[0]);
	timeline_mark("x");
	CHECK(timeline_json(small, sizeof small) == -ENOSPC);
	CHECK(small[0] == '\0');
	CHECK(timeline_json(buf, 0) == -ENOSPC);
	CHECK(timeline_json(buf, sizeof buf) > 0);
	CHECK(check_doc(buf, names, 2) == 2);
}

TEST(timeline_write_makes_the_file_and_its_parent)
{
	static const char *const names[] = {"one", "two"};
	char dir[] = "/tmp/constel-timeline-XXXXXX", path[128], buf[4096], cmd[160];
	struct stat st;
	int fd, n;

	CHECK(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/sub/boot-timeline.json", dir);
	timeline_start("one");
	timeline_mark("two");
	log_set_fd(-1);
	CHECK(timeline_write(path) == 0);
	log_set_fd(STDERR_FILENO);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	n = (int)read_full(fd, buf, sizeof buf - 1);
	close(fd);
	CHECK(n > 0);
	buf[n] = '\0';
	CHECK(check_doc(buf, names, 2) == 2);
	CHECK(timeline_write(NULL) == 0);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

TEST(timeline_events_are_moments_after_the_phases_and_bounded)
{
	static const char *const names[] = {"disk", "join"};
	char buf[8192];
	struct json_object *doc, *events, *e, *v;
	int len;

	timeline_event("before-start"); /* no timeline yet: dropped */
	timeline_start("disk");
	timeline_event("wipe-start");
	sleep_ms(20);
	timeline_mark("join");
	timeline_event("wipe-end");
	for (int i = 0; i < 2 * TIMELINE_EVENTS_MAX; i++)
		timeline_event("more");
	len = timeline_json(buf, sizeof buf);
	CHECK(len > 0);
	CHECK(check_doc(buf, names, 2) == 2); /* the phases still sum to the total */
	doc = json_tokener_parse(buf);
	CHECK(doc && json_object_object_get_ex(doc, "events", &events));
	CHECK(json_object_array_length(events) == TIMELINE_EVENTS_MAX);
	e = json_object_array_get_idx(events, 0);
	CHECK(json_object_object_get_ex(e, "name", &v) &&
	      !strcmp(json_object_get_string(v), "wipe-start"));
	e = json_object_array_get_idx(events, 1);
	CHECK(json_object_object_get_ex(e, "name", &v) &&
	      !strcmp(json_object_get_string(v), "wipe-end"));
	CHECK(json_object_object_get_ex(e, "ms", &v) && json_object_get_int64(v) >= 20);
	json_object_put(doc);
	timeline_start("again"); /* a new timeline has no events: no key */
	CHECK(timeline_json(buf, sizeof buf) > 0 && !strstr(buf, "events"));
}
