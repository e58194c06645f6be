/* libFuzzer target: Intel PCS's TCB info and QE identity JSON (attest/tdx_verify.c) and the
 * azure-tdx policy JSON (tdx_policy_parse). The first byte picks TCB info or QE identity; the
 * rest is the signed object ({...}), which the target wraps as PCS does and signs with the
 * test TCB signing key (tdx_collateral_fixture.h, made by tests/attest/tdx-test/make.py), so
 * that the checks after the signature (id, version, dates, FMSPC, PCE ID, TDX module, QE
 * fields, the TCB level selection) run on the test quote under the test root. The same bytes
 * are also parsed as a policy and checked against the quote. Seeds: the test collateral's
 * signed objects and a policy. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bearssl.h>

#include "attest/tdx.h"
#include "base/base.h"
#include "tdx_collateral_fixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char doc[64 * 1024 + 256];
	static const br_ec_private_key sk = {BR_EC_secp256r1, (unsigned char *)fx_tcbsign_key,
					     sizeof fx_tcbsign_key};
	const char *name;
	struct tdx_verify_opts o;
	struct tdx_quote q;
	struct tdx_policy pol;
	uint8_t h[32], sig[64];
	br_sha256_context sc;
	char err[256] = "";
	size_t n, len;

	if (size < 1 || size > 64 * 1024)
		return 0;
	name = data[0] & 1 ? "enclaveIdentity" : "tcbInfo";
	br_sha256_init(&sc);
	br_sha256_update(&sc, data + 1, size - 1);
	br_sha256_out(&sc, h);
	if (br_ecdsa_i31_sign_raw(&br_ec_p256_m31, &br_sha256_vtable, h, &sk, sig) != 64)
		abort();
	n = (size_t)snprintf(doc, sizeof doc, "{\"%s\":", name);
	memcpy(doc + n, data + 1, size - 1);
	n += size - 1;
	memcpy(doc + n, ",\"signature\":\"", 14);
	n += 14;
	hex_encode(sig, sizeof sig, doc + n, 129);
	n += 128;
	memcpy(doc + n, "\"}", 2);
	len = n + 2;

	tdx_verify_opts_init(&o);
	o.at = 1798761600; /* 2027-01-01 */
	o.root = fx_root;
	o.root_len = sizeof fx_root;
	if (data[0] & 1) {
		o.qe_identity = doc;
		o.qe_identity_len = len;
		o.qe_identity_chain = (const char *)fx_chain;
		o.qe_identity_chain_len = sizeof fx_chain;
		o.allow_qe_out_of_date = data[0] & 2;
	} else {
		o.tcb_info = doc;
		o.tcb_info_len = len;
		o.tcb_info_chain = (const char *)fx_chain;
		o.tcb_info_chain_len = sizeof fx_chain;
	}
	tdx_verify(fx_quote, sizeof fx_quote, &o, &q, err, sizeof err);
	if (strlen(err) >= sizeof err)
		abort();
	if (tdx_policy_parse((const char *)data + 1, size - 1, &pol, err, sizeof err) == 0 &&
	    tdx_quote_parse(fx_quote, sizeof fx_quote, &q, err, sizeof err) == 0)
		tdx_policy_check(&q, &pol, err, sizeof err);
	return 0;
}
