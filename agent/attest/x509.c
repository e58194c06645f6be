/* X.509 v3 certificates: the generic part (x509.h). */
#include <errno.h>
#include <string.h>

#include "x509.h"

static const uint8_t oid_cn[] = {0x55, 0x04, 0x03};

int x509_name_cn(struct der_in name, struct der_in *cn)
{
	struct der_in rdn, atv, oid, val;
	uint8_t tag;

	cn->p = NULL;
	cn->len = 0;
	while (name.len) {
		if (der_expect(&name, DER_SET, &rdn, NULL) < 0)
			return -EBADMSG;
		while (rdn.len) {
			if (der_expect(&rdn, DER_SEQUENCE, &atv, NULL) < 0 ||
			    der_expect(&atv, DER_OID, &oid, NULL) < 0 ||
			    der_next(&atv, &tag, &val, NULL) < 0 || atv.len)
				return -EBADMSG;
			if (der_oid_is(&oid, oid_cn, sizeof oid_cn))
				*cn = val;
		}
	}
	return 0;
}

/* A BIT STRING with no unused bits, that byte dropped. */
static int bits(struct der_in *b)
{
	if (b->len < 2 || b->p[0])
		return -EBADMSG;
	b->p++;
	b->len--;
	return 0;
}

static int parse_spki(struct x509_cert *c, struct der_in spki)
{
	struct der_in alg;

	if (der_expect(&spki, DER_SEQUENCE, &alg, NULL) < 0 ||
	    der_expect(&spki, DER_BIT_STRING, &c->key, NULL) < 0 || spki.len ||
	    der_expect(&alg, DER_OID, &c->key_alg_oid, NULL) < 0 || bits(&c->key) < 0)
		return -EBADMSG;
	c->key_alg_params = alg;
	return 0;
}

int x509_parse(const uint8_t *der, size_t len, struct x509_cert *c)
{
	struct der_in in = {der, len}, crt, tbs, ver, tmp, alg, alg2, validity, spki, exts;
	uint8_t tag;

	memset(c, 0, sizeof *c);
	if (der_expect(&in, DER_SEQUENCE, &crt, NULL) < 0 || in.len ||
	    der_expect(&crt, DER_SEQUENCE, &tbs, &c->tbs_raw) < 0 ||
	    der_expect(&crt, DER_SEQUENCE, &alg, &c->sigalg_raw) < 0 ||
	    der_expect(&alg, DER_OID, &c->sigalg_oid, NULL) < 0 ||
	    der_expect(&crt, DER_BIT_STRING, &c->sig, NULL) < 0 || crt.len || bits(&c->sig) < 0)
		return -EBADMSG;
	if (der_expect(&tbs, 0xa0, &ver, NULL) < 0 || ver.len != 3 || ver.p[0] != 2 ||
	    ver.p[1] != 1 || ver.p[2] != 2 || der_expect(&tbs, DER_INTEGER, &c->serial, NULL) < 0 ||
	    der_expect(&tbs, DER_SEQUENCE, &tmp, &alg2) < 0 || alg2.len != c->sigalg_raw.len ||
	    memcmp(alg2.p, c->sigalg_raw.p, alg2.len) ||
	    der_expect(&tbs, DER_SEQUENCE, &tmp, &c->issuer_raw) < 0 ||
	    x509_name_cn(tmp, &alg) < 0 || der_expect(&tbs, DER_SEQUENCE, &validity, NULL) < 0 ||
	    der_time(&validity, &c->not_before) < 0 || der_time(&validity, &c->not_after) < 0 ||
	    validity.len || der_expect(&tbs, DER_SEQUENCE, &tmp, &c->subject_raw) < 0 ||
	    x509_name_cn(tmp, &c->cn) < 0 ||
	    der_expect(&tbs, DER_SEQUENCE, &spki, &c->spki_raw) < 0 || parse_spki(c, spki) < 0)
		return -EBADMSG;
	/* issuerUniqueID [1], subjectUniqueID [2]: not in the certificates we meet */
	if (der_expect(&tbs, 0xa3, &exts, NULL) == 0 &&
	    (der_expect(&exts, DER_SEQUENCE, &c->exts, NULL) < 0 || exts.len))
		return -EBADMSG;
	if (tbs.len || der_next(&tbs, &tag, &tmp, NULL) == 0)
		return -EBADMSG;
	/* every extension well formed */
	exts = c->exts;
	for (struct x509_ext e;;) {
		int r = x509_ext_next(&exts, &e);

		if (r <= 0)
			return r;
	}
}

int x509_ext_next(struct der_in *exts, struct x509_ext *e)
{
	struct der_in ext, crit;

	if (!exts->len)
		return 0;
	memset(e, 0, sizeof *e);
	if (der_expect(exts, DER_SEQUENCE, &ext, NULL) < 0 ||
	    der_expect(&ext, DER_OID, &e->oid, NULL) < 0)
		return -EBADMSG;
	switch (der_expect(&ext, 0x01, &crit, NULL)) {
	case 0:
		/* a BOOLEAN; FALSE is the default, which strict DER leaves out (Go accepts it) */
		if (crit.len != 1 || (crit.p[0] && crit.p[0] != 0xff))
			return -EBADMSG;
		e->critical = crit.p[0] != 0;
		break;
	case -ENOENT:
		break;
	default:
		return -EBADMSG;
	}
	if (der_expect(&ext, DER_OCTET_STRING, &e->val, NULL) < 0 || ext.len)
		return -EBADMSG;
	return 1;
}

int x509_valid_at(const struct x509_cert *c, time_t at)
{
	return at >= c->not_before && at <= c->not_after;
}

int x509_issued_by(const struct x509_cert *c, const struct x509_cert *issuer)
{
	return c->issuer_raw.len == issuer->subject_raw.len &&
	       !memcmp(c->issuer_raw.p, issuer->subject_raw.p, c->issuer_raw.len);
}

/* The next revoked entry's serial: 1, 0 at the end, -EBADMSG. */
static int crl_next(struct der_in *rev, struct der_in *serial)
{
	struct der_in ent, ext;
	time_t t;

	if (!rev->len)
		return 0;
	if (der_expect(rev, DER_SEQUENCE, &ent, NULL) < 0 ||
	    der_expect(&ent, DER_INTEGER, serial, NULL) < 0 || der_time(&ent, &t) < 0)
		return -EBADMSG;
	if (ent.len && (der_expect(&ent, DER_SEQUENCE, &ext, NULL) < 0 || ent.len))
		return -EBADMSG;
	return 1;
}

int x509_crl_parse(const uint8_t *der, size_t len, struct x509_crl *c)
{
	struct der_in in = {der, len}, crl, tbs, alg, alg2, tmp, ver, rev, serial;
	uint8_t tag;
	int r;

	memset(c, 0, sizeof *c);
	if (der_expect(&in, DER_SEQUENCE, &crl, NULL) < 0 || in.len ||
	    der_expect(&crl, DER_SEQUENCE, &tbs, &c->tbs_raw) < 0 ||
	    der_expect(&crl, DER_SEQUENCE, &alg, &c->sigalg_raw) < 0 ||
	    der_expect(&alg, DER_OID, &c->sigalg_oid, NULL) < 0 ||
	    der_expect(&crl, DER_BIT_STRING, &c->sig, NULL) < 0 || crl.len || bits(&c->sig) < 0)
		return -EBADMSG;
	if (der_expect(&tbs, DER_INTEGER, &ver, NULL) < 0 || ver.len != 1 || ver.p[0] != 1 ||
	    der_expect(&tbs, DER_SEQUENCE, &tmp, &alg2) < 0 || alg2.len != c->sigalg_raw.len ||
	    memcmp(alg2.p, c->sigalg_raw.p, alg2.len) ||
	    der_expect(&tbs, DER_SEQUENCE, &tmp, &c->issuer_raw) < 0 ||
	    x509_name_cn(tmp, &alg) < 0 || der_time(&tbs, &c->this_update) < 0 ||
	    der_time(&tbs, &c->next_update) < 0)
		return -EBADMSG;
	/* revokedCertificates and crlExtensions are both optional: a CRL may end here */
	switch (tbs.len ? der_expect(&tbs, DER_SEQUENCE, &c->revoked, NULL) : -ENOENT) {
	case 0:
		break;
	case -ENOENT: /* none revoked (der_expect left the next element's content) */
		c->revoked.p = NULL;
		c->revoked.len = 0;
		break;
	default:
		return -EBADMSG;
	}
	/* crlExtensions [0] */
	if (tbs.len && der_expect(&tbs, 0xa0, &tmp, NULL) == -EBADMSG)
		return -EBADMSG;
	if (tbs.len || der_next(&tbs, &tag, &tmp, NULL) == 0)
		return -EBADMSG;
	rev = c->revoked;
	while ((r = crl_next(&rev, &serial)) > 0)
		;
	return r;
}

int x509_crl_revokes(const struct x509_crl *c, const struct der_in *serial)
{
	struct der_in rev = c->revoked, s;

	while (crl_next(&rev, &s) > 0)
		if (s.len == serial->len && !memcmp(s.p, serial->p, s.len))
			return 1;
	return 0;
}
