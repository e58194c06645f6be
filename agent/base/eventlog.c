/* The TCG PC Client crypto-agile event log (binary_bios_measurements): a parser and replay
 * for the qemu-vtpm validator and tools/ (spec §2.6). The first event is the SHA-1-format
 * Spec ID event listing the algorithms and digest sizes; every later event carries one digest
 * per algorithm. EV_NO_ACTION events are not extended; a StartupLocality event sets PCR 0's
 * starting value. Everything is little-endian. */
#include <errno.h>
#include <string.h>

#include <bearssl.h>

#include "base.h"
#include "eventlog.h"

#define EV_NO_ACTION 3

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

const br_hash_class *eventlog_hash(uint16_t alg)
{
	switch (alg) {
	case 0x0004:
		return &br_sha1_vtable;
	case 0x000B:
		return &br_sha256_vtable;
	case 0x000C:
		return &br_sha384_vtable;
	case 0x000D:
		return &br_sha512_vtable;
	}
	return NULL;
}

int eventlog_replay(const uint8_t *log, size_t len, uint16_t alg, struct eventlog_pcrs *out,
		    char *err, size_t errlen)
{
	return eventlog_walk(log, len, alg, out, NULL, NULL, err, errlen);
}

int eventlog_walk(const uint8_t *log, size_t len, uint16_t alg, struct eventlog_pcrs *out,
		  eventlog_fn fn, void *ctx, char *err, size_t errlen)
{
	struct {
		uint16_t alg, size;
	} algs[8];
	uint32_t n_algs, ev_size;
	size_t off, dlen = 0, k;
	const br_hash_class *hc = eventlog_hash(alg);
	int found = 0, n_events = 0;

	if (!hc)
		return errbuf_set(err, errlen, "event log: unsupported bank 0x%04x", alg);
	memset(out, 0, sizeof *out);
	out->alg = alg;
	/* Spec ID event: pcr(4) type(4) sha1(20) size(4) data */
	if (len < 32 || le32(log + 4) != EV_NO_ACTION)
		return errbuf_set(err, errlen, "event log: no Spec ID event at the start");
	ev_size = le32(log + 28);
	if (ev_size > len - 32 || ev_size < 28 || memcmp(log + 32, "Spec ID Event03", 16))
		return errbuf_set(err, errlen,
				  "event log: not a crypto-agile log (Spec ID Event03)");
	n_algs = le32(log + 32 + 24);
	if (n_algs == 0 || n_algs > 8 || 28 + 4 * (size_t)n_algs + 1 > ev_size)
		return errbuf_set(err, errlen, "event log: %u algorithms in the Spec ID event",
				  n_algs);
	for (k = 0; k < n_algs; k++) {
		algs[k].alg = le16(log + 32 + 28 + 4 * k);
		algs[k].size = le16(log + 32 + 30 + 4 * k);
		if (algs[k].size == 0 || algs[k].size > EVENTLOG_DIGEST_MAX)
			return errbuf_set(err, errlen, "event log: digest size %u", algs[k].size);
		if (algs[k].alg == alg) {
			found = 1;
			dlen = algs[k].size;
		}
	}
	if (!found)
		return errbuf_set(err, errlen, "event log: no digests for bank 0x%04x", alg);
	if (dlen != ((hc->desc >> BR_HASHDESC_OUT_OFF) & BR_HASHDESC_OUT_MASK))
		return errbuf_set(err, errlen, "event log: wrong digest size for bank 0x%04x", alg);
	out->digest_len = dlen;
	for (off = 32 + ev_size; off < len; n_events++) {
		uint32_t pcr, type, count;
		const uint8_t *mine = NULL;

		if (len - off < 12)
			return errbuf_set(err, errlen, "event log: event %d truncated", n_events);
		pcr = le32(log + off);
		type = le32(log + off + 4);
		count = le32(log + off + 8);
		off += 12;
		if (count != n_algs)
			return errbuf_set(err, errlen,
					  "event log: event %d has %u digests, want %u", n_events,
					  count, n_algs);
		for (k = 0; k < count; k++) {
			uint16_t a;
			size_t size = 0;

			if (len - off < 2)
				return errbuf_set(err, errlen, "event log: event %d truncated",
						  n_events);
			a = le16(log + off);
			for (size_t j = 0; j < n_algs; j++)
				if (algs[j].alg == a)
					size = algs[j].size;
			if (!size || len - off - 2 < size)
				return errbuf_set(err, errlen,
						  "event log: event %d: digest 0x%04x unknown or "
						  "truncated",
						  n_events, a);
			if (a == alg)
				mine = log + off + 2;
			off += 2 + size;
		}
		if (len - off < 4 || le32(log + off) > len - off - 4)
			return errbuf_set(err, errlen, "event log: event %d data truncated",
					  n_events);
		ev_size = le32(log + off);
		if (fn && pcr < EVENTLOG_PCRS && mine &&
		    fn(ctx, pcr, type, mine, dlen, log + off + 4, ev_size) < 0)
			return errbuf_set(err, errlen, "event log: event %d refused", n_events);
		if (type == EV_NO_ACTION) {
			/* StartupLocality: PCR 0 starts at 00..0<locality> */
			if (pcr == 0 && ev_size >= 17 &&
			    !memcmp(log + off + 4, "StartupLocality", 16))
				out->value[0][dlen - 1] = log[off + 4 + 16];
		} else {
			br_hash_compat_context h;

			if (pcr >= EVENTLOG_PCRS || !mine)
				return errbuf_set(err, errlen, "event log: event %d: PCR %u",
						  n_events, pcr);
			hc->init(&h.vtable);
			hc->update(&h.vtable, out->value[pcr], dlen);
			hc->update(&h.vtable, mine, dlen);
			hc->out(&h.vtable, out->value[pcr]);
			out->extended |= 1u << pcr;
		}
		off += 4 + ev_size;
	}
	out->events = n_events;
	return 0;
}
