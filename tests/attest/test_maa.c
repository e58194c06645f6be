/* The MAA fallback's token check (attest/maa_check.c) against tests/attest/fake_maa.py: a
 * token MAA signed for this handshake's nonce is accepted; one with a wrong signature, expired,
 * not yet valid, from a key MAA does not publish, with another nonce or none, or in another
 * algorithm is refused with one line naming why. go-jose's one-minute leeway kept. The JWKS
 * reader: keys without a certificate skipped, a broken certificate refuses the set. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attest/maa.h"
#include "base/base.h"
#include "attest/maa_fake.h"
#include "harness.h"

static uint8_t extra[32];
static char nonce[64];

/* maa_validate of the token the fake mints for req ("%s" in req: this test's nonce) */
static int judge(const struct maa_fake *f, const char *req_fmt, char *err, size_t errlen)
{
	char req[512], *tok;
	int r;

	snprintf(req, sizeof req, req_fmt, nonce);
	if (!(tok = maa_fake_token(f, req)))
		return -EIO;
	err[0] = 0;
	r = maa_validate(f->base, tok, time(NULL), extra, sizeof extra, err, errlen);
	free(tok);
	return r;
}

TEST(maa_token_for_this_nonce_accepted_others_refused_one_line_each)
{
	struct maa_fake f = {0};
	char err[256];

	for (size_t i = 0; i < sizeof extra; i++)
		extra[i] = (uint8_t)(i * 7 + 1);
	base64_encode(BASE64_STD, extra, sizeof extra, nonce, sizeof nonce);
	CHECK(maa_fake_start(&f) == 0);
	CHECK(judge(&f, "{\"nonce\":\"%s\"}", err, sizeof err) == 0);
	if (err[0])
		fprintf(stderr, "refused: %s\n", err);
	/* within go-jose's leeway: expired 30 s ago, valid from 30 s on */
	CHECK(judge(&f, "{\"nonce\":\"%s\",\"exp_in\":-30,\"nbf_in\":30}", err, sizeof err) == 0);

	CHECK(judge(&f, "{\"nonce\":\"%s\",\"tamper\":true}", err, sizeof err) == -EKEYREJECTED);
	CHECK(strstr(err, "signature does not verify") != NULL);
	CHECK(judge(&f, "{\"nonce\":\"%s\",\"exp_in\":-3600}", err, sizeof err) == -EKEYREJECTED);
	CHECK(strstr(err, "expired") != NULL);
	CHECK(judge(&f, "{\"nonce\":\"%s\",\"nbf_in\":3600}", err, sizeof err) == -EKEYREJECTED);
	CHECK(strstr(err, "not valid before") != NULL);
	CHECK(judge(&f, "{\"nonce\":\"%s\",\"iat_in\":3600}", err, sizeof err) == -EKEYREJECTED);
	CHECK(strstr(err, "future") != NULL);
	CHECK(judge(&f, "{\"nonce\":\"%s\",\"key\":\"unlisted\"}", err, sizeof err) ==
	      -EKEYREJECTED);
	CHECK(strstr(err, "does not publish") != NULL);
	CHECK(judge(&f, "{\"nonce\":\"AAAA%s\"}", err, sizeof err) == -EKEYREJECTED);
	CHECK(strstr(err, "nonce claim is not") != NULL);
	CHECK(judge(&f, "{\"nonce\":\"%s\",\"no_nonce\":true}", err, sizeof err) == -EKEYREJECTED);
	CHECK(strstr(err, "client-payload") != NULL);
	CHECK(judge(&f, "{\"nonce\":\"%s\",\"alg\":\"RS512\"}", err, sizeof err) < 0);
	CHECK(strstr(err, "RS256") != NULL);
	/* no token at all, no MAA URL, an MAA that is not there */
	CHECK(maa_validate(f.base, "", time(NULL), extra, 32, err, sizeof err) == -EKEYREJECTED);
	CHECK(strstr(err, "empty") != NULL);
	CHECK(maa_validate(NULL, "a.b.c", time(NULL), extra, 32, err, sizeof err) < 0);
	CHECK(strstr(err, "MAAFallback") != NULL);
	CHECK(maa_validate("http://127.0.0.1:1", "a.b.c", time(NULL), extra, 32, err, sizeof err) <
	      0);
	CHECK(strstr(err, "/certs") != NULL);
	maa_fake_stop(&f);
}

TEST(maa_jwks_keys_without_certificate_skipped_broken_certificate_refused)
{
	struct maa_jwks ks;
	char err[256];
	const char *skip = "{\"keys\":[{\"kid\":\"a\",\"kty\":\"RSA\"},{\"kid\":\"b\",\"x5c\":[]},"
			   "{\"kid\":\"c\",\"x5c\":null}]}";
	const char *broken = "{\"keys\":[{\"kid\":\"a\",\"x5c\":[\"AAAA\"]}]}";

	CHECK(maa_jwks_parse(skip, strlen(skip), &ks, err, sizeof err) == 0);
	CHECK(ks.n == 0);
	maa_jwks_free(&ks);
	CHECK(maa_jwks_parse(broken, strlen(broken), &ks, err, sizeof err) < 0);
	CHECK(strstr(err, "certificate") != NULL);
	CHECK(maa_jwks_parse("{\"keys\":{}}", 11, &ks, err, sizeof err) < 0);
	CHECK(maa_jwks_parse("[]", 2, &ks, err, sizeof err) < 0);
	CHECK(maa_jwks_parse("{}", 2, &ks, err, sizeof err) == 0 && ks.n == 0);
	/* a token that is no compact JWS */
	CHECK(maa_token_check("a.b", 3, &ks, 0, extra, 32, err, sizeof err) == -EINVAL);
	CHECK(maa_token_check("a.b.c.d", 7, &ks, 0, extra, 32, err, sizeof err) == -EINVAL);
	CHECK(maa_token_check("!.b.c", 5, &ks, 0, extra, 32, err, sizeof err) == -EINVAL);
}
