/* DER, the subset our certificates, CSRs and keys use: a forward writer whose constructed
 * elements get their length once their content is known, and a strict reader (definite,
 * minimal lengths; low tag numbers). Neither allocates. */
#ifndef CONSTEL_BASE_DER_H
#define CONSTEL_BASE_DER_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

enum {
	DER_INTEGER = 0x02,
	DER_BIT_STRING = 0x03,
	DER_OCTET_STRING = 0x04,
	DER_NULL = 0x05,
	DER_OID = 0x06,
	DER_UTF8_STRING = 0x0c,
	DER_PRINTABLE_STRING = 0x13,
	DER_UTC_TIME = 0x17,
	DER_GENERALIZED_TIME = 0x18,
	DER_SEQUENCE = 0x30,
	DER_SET = 0x31,
};

/* ---- writer ---- The first failure sticks in err (-ENOBUFS); check it once at the end. */
struct der_out {
	uint8_t *p;
	size_t len, cap;
	int err;
};

void der_put_raw(struct der_out *d, const void *src, size_t n);
void der_put_tlv(struct der_out *d, uint8_t tag, const void *src, size_t n);
/* A constructed element: der_begin() marks where its content starts, der_end() inserts
 * the tag and length in front of it. */
size_t der_begin(const struct der_out *d);
void der_end(struct der_out *d, size_t start, uint8_t tag);
/* An INTEGER from unsigned big-endian bytes, minimal and positive. */
void der_put_uint(struct der_out *d, const uint8_t *b, size_t n);
/* UTCTime through 2049, GeneralizedTime from 2050 on (RFC 5280). */
void der_put_time(struct der_out *d, time_t t);

/* ---- reader ---- */
struct der_in {
	const uint8_t *p;
	size_t len;
};

/* Reads one element: *tag, its content in *el and (when raw is not NULL) the whole TLV.
 * -EBADMSG for anything not strict DER. */
int der_next(struct der_in *in, uint8_t *tag, struct der_in *el, struct der_in *raw);
/* Like der_next for an element with tag want; -ENOENT (input unchanged) for another tag. */
int der_expect(struct der_in *in, uint8_t want, struct der_in *el, struct der_in *raw);
/* UTCTime YYMMDDHHMMSSZ or GeneralizedTime YYYYMMDDHHMMSSZ, as Go's parser requires. */
int der_time(struct der_in *in, time_t *ret);
int der_oid_is(const struct der_in *oid, const uint8_t *want, size_t n);

#endif
