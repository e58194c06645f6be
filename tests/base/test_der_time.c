/* der_put_time: the certificates' validity times. It formats them with snprintf, not strftime
 * (docs/size.md: strftime and the time-zone code it pulls in were 4 KiB of the agent); the
 * digits must stay strftime's, UTCTime through 2049 and GeneralizedTime from 2050 on, and
 * der_time must read back the same second. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/der.h"
#include "harness.h"

/* Writes t and returns its tag; the content goes to s (NUL-terminated). */
static int put(time_t t, char *s, size_t cap)
{
	uint8_t buf[64];
	struct der_out d = {.p = buf, .cap = sizeof buf};

	der_put_time(&d, t);
	if (d.err || d.len < 2 || buf[1] != d.len - 2 || (size_t)buf[1] >= cap)
		return -1;
	memcpy(s, buf + 2, buf[1]);
	s[buf[1]] = '\0';
	return buf[0];
}

static time_t read_back(time_t t)
{
	uint8_t buf[64];
	struct der_out d = {.p = buf, .cap = sizeof buf};
	struct der_in in;
	time_t got = -1;

	der_put_time(&d, t);
	in = (struct der_in){.p = buf, .len = d.len};
	return der_time(&in, &got) == 0 ? got : (time_t)-1;
}

TEST(der_time_utc_and_generalized_at_the_2050_boundary)
{
	char s[32];

	CHECK(put(0, s, sizeof s) == DER_UTC_TIME && !strcmp(s, "700101000000Z"));
	CHECK(put(2524607999, s, sizeof s) == DER_UTC_TIME && !strcmp(s, "491231235959Z"));
	CHECK(put(2524608000, s, sizeof s) == DER_GENERALIZED_TIME &&
	      !strcmp(s, "20500101000000Z"));
	CHECK(put(253402300799, s, sizeof s) == DER_GENERALIZED_TIME &&
	      !strcmp(s, "99991231235959Z"));
	CHECK(put(1709251199, s, sizeof s) == DER_UTC_TIME && !strcmp(s, "240229235959Z"));
}

/* Every day boundary's neighbourhood over 1970..9999 in steps that hit every month, day,
 * hour, minute and second digit: the same text as strftime's %y / %Y formats. */
TEST(der_time_matches_strftime)
{
	for (long long t = 0; t < 253402300800LL; t += 7919LL * 3607 + 13) {
		struct tm tm;
		char got[32], want[32];
		int tag = put((time_t)t, got, sizeof got);

		CHECK(gmtime_r(&(time_t){(time_t)t}, &tm));
		strftime(want, sizeof want,
			 tm.tm_year + 1900 < 2050 ? "%y%m%d%H%M%SZ" : "%Y%m%d%H%M%SZ", &tm);
		if (tag != (tm.tm_year + 1900 < 2050 ? DER_UTC_TIME : DER_GENERALIZED_TIME) ||
		    strcmp(got, want)) {
			harness_fail(__FILE__, __LINE__, "t=%lld: tag 0x%02x \"%s\", want \"%s\"",
				     t, tag, got, want);
			return;
		}
		CHECK(read_back((time_t)t) == (time_t)t);
	}
}
