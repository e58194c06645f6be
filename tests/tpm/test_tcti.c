/* TCTI strings: defaults, both transports, and strict refusal of anything else. */
#include <errno.h>
#include <string.h>

#include "harness.h"
#include "tpm/tpm.h"

TEST(tcti_device_default_path)
{
	struct tcti_spec t;

	CHECK(tcti_spec_parse("device", &t, NULL, 0) == 0);
	CHECK(t.kind == TCTI_DEVICE && !strcmp(t.path, "/dev/tpmrm0"));
	CHECK(tcti_spec_parse("device:", &t, NULL, 0) == 0);
	CHECK(!strcmp(t.path, "/dev/tpmrm0"));
	CHECK(tcti_spec_parse("device:/dev/tpm0", &t, NULL, 0) == 0);
	CHECK(!strcmp(t.path, "/dev/tpm0"));
}

TEST(tcti_swtpm_defaults_and_keys)
{
	struct tcti_spec t;

	CHECK(tcti_spec_parse("swtpm", &t, NULL, 0) == 0);
	CHECK(t.kind == TCTI_SWTPM && !strcmp(t.host, "127.0.0.1") && t.port == 2321);
	CHECK(tcti_spec_parse("swtpm:port=4000", &t, NULL, 0) == 0);
	CHECK(!strcmp(t.host, "127.0.0.1") && t.port == 4000);
	CHECK(tcti_spec_parse("swtpm:host=localhost,port=65534", &t, NULL, 0) == 0);
	CHECK(!strcmp(t.host, "localhost") && t.port == 65534);
}

TEST(tcti_refuses_bad_strings_with_a_reason)
{
	static const char *bad[][2] = {
	    {"device:dev/tpm0", "tcti device: path must be absolute, got 'dev/tpm0'"},
	    {"swtpm:port=0", "tcti swtpm: port must be 1 to 65534, got '0'"},
	    {"swtpm:port=65535", "tcti swtpm: port must be 1 to 65534, got '65535'"},
	    {"swtpm:port=99999999999", "tcti swtpm: port must be 1 to 65534, got '99999999999'"},
	    {"swtpm:port=12a", "tcti swtpm: port must be 1 to 65534, got '12a'"},
	    {"swtpm:host=", "tcti swtpm: host must be 1 to 63 characters"},
	    {"swtpm:hostname=x", "tcti swtpm: unknown key 'hostname' (host, port)"},
	    {"swtpm:port", "tcti swtpm: expected key=value, got 'port'"},
	    {"swtpm:port=1,", "tcti swtpm: trailing ','"},
	    {"", "unknown TPM transport '' (device, swtpm)"},
	    {"tabrmd:", "unknown TPM transport 'tabrmd' (device, swtpm)"},
	};
	struct tcti_spec t;
	char err[160];

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CHECK(tcti_spec_parse(bad[i][0], &t, err, sizeof err) == -EINVAL);
		if (strcmp(err, bad[i][1])) {
			harness_fail(__FILE__, __LINE__, "'%s': got '%s', want '%s'", bad[i][0],
				     err, bad[i][1]);
			return;
		}
	}
}

TEST(tcti_refuses_overlong_path_and_host)
{
	char s[600];
	struct tcti_spec t;

	strcpy(s, "device:/");
	memset(s + 8, 'a', 300);
	s[308] = '\0';
	CHECK(tcti_spec_parse(s, &t, NULL, 0) == -EINVAL);
	strcpy(s, "swtpm:host=");
	memset(s + 11, 'h', 64);
	s[75] = '\0';
	CHECK(tcti_spec_parse(s, &t, NULL, 0) == -EINVAL);
}
