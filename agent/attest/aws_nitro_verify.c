/* aws-nitro-tpm, the validator's side (tools and tests): Constellation's nitrotpm Validator.
 * The AK is taken as it is (NitroTPM has no EK certificate); validate_cvm is its tpmEnabled:
 * InstanceInfo's imageId, looked up with EC2 DescribeImages in InstanceInfo's region with the
 * validator's own credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and, for temporary
 * ones, AWS_SESSION_TOKEN from the environment), must be exactly one image whose TpmSupport is
 * "v2.0". --api URL replaces https://ec2.<region>.amazonaws.com/ (tests). The identity
 * document's own signature is not checked, as Constellation does not. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "attest.h"
#include "base/base.h"
#include "cloud/aws_api.h"
#include "cloud/sigv4.h"
#include "net/net.h"
#include "vtpm.h"

#define NAME_MAX_ 64

static int plain(const char *s)
{
	if (!*s || strlen(s) >= NAME_MAX_)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
			return 0;
	return 1;
}

static struct secret *secret_of(const char *s)
{
	struct secret *x = secret_new(strlen(s));

	if (x)
		memcpy(x->bytes, s, x->len);
	return x;
}

static int validate_cvm(const struct vtpm_policy *p, const struct vtpm_view *v, char *err,
			size_t errlen)
{
	json_object *o = json_parse_exact((const char *)v->instance_info, v->instance_info_len);
	json_object *img, *reg;
	const char *kid = getenv("AWS_ACCESS_KEY_ID"), *sk = getenv("AWS_SECRET_ACCESS_KEY"),
		   *st = getenv("AWS_SESSION_TOKEN");
	char image[NAME_MAX_], region[NAME_MAX_], tpm[32], why[64] = "";
	struct secret *secret = NULL, *token = NULL;
	struct ca_bundle ca = {0};
	int r;

	if (!o || !json_object_object_get_ex(o, "imageId", &img) ||
	    !json_object_object_get_ex(o, "region", &reg) ||
	    !json_object_is_type(img, json_type_string) ||
	    !json_object_is_type(reg, json_type_string) || !plain(json_object_get_string(img)) ||
	    !plain(json_object_get_string(reg))) {
		json_object_put(o);
		return errbuf_set(err, errlen, "InstanceInfo has no imageId and region");
	}
	snprintf(image, sizeof image, "%s", json_object_get_string(img));
	snprintf(region, sizeof region, "%s", json_object_get_string(reg));
	json_object_put(o);
	if (!kid || !sk || strlen(kid) > SIGV4_MAX_KEY_ID)
		return errbuf_set(
		    err, errlen,
		    "DescribeImages needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
	secret = secret_of(sk);
	token = st ? secret_of(st) : NULL;
	if (!secret || (st && !token)) {
		secret_free(secret);
		secret_free(token);
		return -ENOMEM;
	}
	struct sigv4_creds creds = {kid, secret, token};
	struct aws_api api = {
	    .region = region,
	    .endpoint = p->api,
	    .creds = &creds,
	    .timeout_ms = 20000,
	    .max_attempts = 4,
	    .backoff_ms = 200,
	};

	if (!p->api && (r = ca_bundle_load(CA_BUNDLE_DEFAULT, &ca, why, sizeof why)) < 0) {
		secret_free(secret);
		secret_free(token);
		return errbuf_set(err, errlen, "%s", why);
	}
	api.ca = p->api ? NULL : &ca;
	r = aws_describe_image_tpm_support(&api, image, tpm, sizeof tpm);
	secret_free(secret);
	secret_free(token);
	if (!p->api)
		ca_bundle_free(&ca);
	if (r == -ENOENT)
		return errbuf_set(err, errlen, "aws image %s not found in %s", image, region);
	if (r < 0)
		return errbuf_set(err, errlen, "DescribeImages %s in %s failed (see above)", image,
				  region);
	if (strcmp(tpm, "v2.0"))
		return errbuf_set(err, errlen, "aws image %s does not support TPM v2.0", image);
	return 0;
}

const struct vtpm_check vtpm_check_aws_nitro_tpm = {
    .name = "aws-nitro-tpm",
    .enforced = "4,8,9,11,12,13,15",
    .validate_cvm = validate_cvm,
};
