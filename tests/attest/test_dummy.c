/* The dummy attestation variant: the exact document Go's encoding/json would write, a round
 * trip through issuer and validator, and refusal of another nonce or a malformed document. */
#include <errno.h>
#include <string.h>

#include "attest/attest.h"
#include "harness.h"

static const char zero_doc[] = "{\"UserData\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\","
			       "\"Nonce\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"}";

TEST(dummy_document_is_go_json_of_two_byte_fields)
{
	uint8_t ud[32] = {0}, nonce[32] = {0}, doc[DUMMY_DOC_MAX];
	size_t n;
	char err[128];

	CHECK(attest_dummy_issuer.issue(NULL, ud, nonce, 32, doc, sizeof doc, &n, err,
					sizeof err) == 0);
	CHECK(n == strlen(zero_doc));
	CHECK_BYTES(doc, zero_doc, n);
}

TEST(dummy_oid_is_1_3_9900_1_1)
{
	CHECK(attest_dummy_issuer.oid_len == 5);
	CHECK_BYTES(attest_dummy_issuer.oid, "\x2b\xcd\x2c\x01\x01", 5);
	CHECK_BYTES(attest_dummy_validator.oid, "\x2b\xcd\x2c\x01\x01", 5);
}

TEST(dummy_round_trip_returns_user_data)
{
	uint8_t ud[32], nonce[32], doc[DUMMY_DOC_MAX], got[32];
	size_t n;
	char err[128];

	for (int i = 0; i < 32; i++) {
		ud[i] = (uint8_t)(0xf0 + i);
		nonce[i] = (uint8_t)(3 * i);
	}
	CHECK(attest_dummy_issuer.issue(NULL, ud, nonce, 32, doc, sizeof doc, &n, err,
					sizeof err) == 0);
	CHECK(attest_dummy_validator.validate(NULL, doc, n, nonce, 32, got, err, sizeof err) == 0);
	CHECK_BYTES(got, ud, 32);
}

TEST(dummy_refuses_another_nonce)
{
	uint8_t ud[32] = {1}, nonce[32] = {2}, other[32] = {3}, doc[DUMMY_DOC_MAX], got[32];
	size_t n;
	char err[128];

	CHECK(attest_dummy_issuer.issue(NULL, ud, nonce, 32, doc, sizeof doc, &n, err,
					sizeof err) == 0);
	CHECK(attest_dummy_validator.validate(NULL, doc, n, other, 32, got, err, sizeof err) ==
	      -EINVAL);
	CHECK(!strcmp(err, "dummy: document is for another nonce"));
}

TEST(dummy_refuses_malformed_documents)
{
	static const char *bad[] = {
	    "",
	    "{}",
	    "{\"Nonce\":\"\",\"UserData\":\"\"}",
	    "{\"UserData\":\"AA\",\"Nonce\":\"\"}",
	    "{\"UserData\":\"\",\"Nonce\":\"\"} ",
	    "{\"UserData\":\"\" ,\"Nonce\":\"\"}",
	    "{\"UserData\":\"\",\"Nonce\":\"\",\"X\":1}",
	    "{\"UserData\":\"\",\"Nonce\":\"",
	};
	uint8_t ud[DUMMY_FIELD_MAX], nb[DUMMY_FIELD_MAX];
	size_t udl, nbl;
	char err[128];

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK(attest_dummy_parse((const uint8_t *)bad[i], strlen(bad[i]), ud, &udl, nb,
					 &nbl, err, sizeof err) == -EINVAL);
	static const char empty[] = "{\"UserData\":\"\",\"Nonce\":\"\"}";

	CHECK(attest_dummy_parse((const uint8_t *)empty, strlen(empty), ud, &udl, nb, &nbl, err,
				 sizeof err) == 0);
	CHECK(udl == 0 && nbl == 0);
}
