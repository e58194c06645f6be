/* The boot timeline: how long each phase of the boot took, logged at the end of the boot and
 * written as JSON for the boot tests and benchmarks. A fixed table, no allocation: it runs
 * from the first instruction of /init. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "boot.h"

struct phase {
	char name[32];
	uint64_t start_ns, end_ns; /* end_ns 0: still open */
};

struct event {
	char name[32];
	uint64_t at_ns;
};

static struct timeline {
	struct phase p[TIMELINE_MAX];
	int n; /* phases used; p[n-1] is the open one */
	uint64_t t0;
	struct event e[TIMELINE_EVENTS_MAX];
	int ne;
} tl;

static void phase_open(const char *name, uint64_t now)
{
	if (tl.n == TIMELINE_MAX) {
		/* full: the last entry absorbs every later phase, so the sum stays the total */
		snprintf(tl.p[tl.n - 1].name, sizeof tl.p[0].name, "more");
		tl.p[tl.n - 1].end_ns = 0;
		return;
	}
	snprintf(tl.p[tl.n].name, sizeof tl.p[0].name, "%s", name ? name : "?");
	tl.p[tl.n].start_ns = now;
	tl.p[tl.n].end_ns = 0;
	tl.n++;
}

void timeline_start(const char *phase)
{
	memset(&tl, 0, sizeof tl);
	tl.t0 = monotonic_ns();
	phase_open(phase, tl.t0);
}

void timeline_mark(const char *next_phase)
{
	uint64_t now = monotonic_ns();

	if (tl.n == 0) {
		timeline_start(next_phase);
		return;
	}
	tl.p[tl.n - 1].end_ns = now;
	phase_open(next_phase, now);
}

void timeline_event(const char *name)
{
	if (tl.n == 0 || tl.ne == TIMELINE_EVENTS_MAX)
		return;
	snprintf(tl.e[tl.ne].name, sizeof tl.e[0].name, "%s", name ? name : "?");
	tl.e[tl.ne++].at_ns = monotonic_ns();
}

static uint64_t phase_ms(const struct phase *p, uint64_t now)
{
	return ((p->end_ns ? p->end_ns : now) - p->start_ns) / 1000000;
}

/* Appends to buf at *off; -ENOSPC once it does not fit. */
static int put(char *buf, size_t cap, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf + *off, cap - *off, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap - *off)
		return -ENOSPC;
	*off += (size_t)n;
	return 0;
}

/* Phase names come from the program, but are escaped anyway: the output is JSON. */
static int put_name(char *buf, size_t cap, size_t *off, const char *s)
{
	int r = put(buf, cap, off, "\"");

	for (; !r && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			r = put(buf, cap, off, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			r = put(buf, cap, off, "\\u%04x", c);
		else
			r = put(buf, cap, off, "%c", c);
	}
	return r ? r : put(buf, cap, off, "\"");
}

static int json_at(char *buf, size_t cap, uint64_t now)
{
	size_t off = 0;
	int r;

	if (cap == 0)
		return -ENOSPC;
	r = put(buf, cap, &off, "{\"phases\":[");
	for (int i = 0; !r && i < tl.n; i++) {
		r = put(buf, cap, &off, "%s{\"name\":", i ? "," : "");
		if (!r)
			r = put_name(buf, cap, &off, tl.p[i].name);
		if (!r)
			r = put(buf, cap, &off, ",\"ms\":%llu}",
				(unsigned long long)phase_ms(&tl.p[i], now));
	}
	if (!r && tl.ne)
		r = put(buf, cap, &off, "],\"events\":[");
	for (int i = 0; !r && i < tl.ne; i++) {
		r = put(buf, cap, &off, "%s{\"name\":", i ? "," : "");
		if (!r)
			r = put_name(buf, cap, &off, tl.e[i].name);
		if (!r)
			r = put(buf, cap, &off, ",\"ms\":%llu}",
				(unsigned long long)((tl.e[i].at_ns - tl.t0) / 1000000));
	}
	if (!r)
		r = put(buf, cap, &off, "],\"total_ms\":%llu}\n",
			(unsigned long long)(tl.n ? (now - tl.t0) / 1000000 : 0));
	if (r) {
		buf[0] = '\0';
		return r;
	}
	return (int)off;
}

int timeline_json(char *buf, size_t cap)
{
	return json_at(buf, cap, monotonic_ns());
}

int timeline_write(const char *path)
{
	char buf[12288]; /* 32 phases and 16 events of 31 characters, all escaped: about 10 KiB */
	uint64_t now = monotonic_ns();
	int len, r;

	for (int i = 0; i < tl.n; i++)
		log_info("boot timeline: %s %llu ms", tl.p[i].name,
			 (unsigned long long)phase_ms(&tl.p[i], now));
	for (int i = 0; i < tl.ne; i++)
		log_info("boot timeline: event %s at %llu ms", tl.e[i].name,
			 (unsigned long long)((tl.e[i].at_ns - tl.t0) / 1000000));
	log_info("boot timeline: total %llu ms",
		 (unsigned long long)(tl.n ? (now - tl.t0) / 1000000 : 0));
	if (!path)
		return 0;
	if ((len = json_at(buf, sizeof buf, now)) < 0)
		return log_err(len, "boot timeline: JSON");
	if ((r = write_file_replace(path, buf, (size_t)len, 0644)) < 0)
		return log_err(r, "boot timeline: writing %s", path);
	return 0;
}
