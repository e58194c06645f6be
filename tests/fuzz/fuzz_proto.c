/* libFuzzer target: every nanopb message decoder of nanopb-proto/. The first input byte picks
 * the message; callback fields are consumed. What decodes must encode again and decode to
 * the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <pb_common.h>
#include <pb_decode.h>
#include <pb_encode.h>

#include "components.pb.h"
#include "init.pb.h"
#include "join.pb.h"
#include "recover.pb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool skip_cb(pb_istream_t *s, const pb_field_t *f, void **arg)
{
	(void)f;
	(void)arg;
	return pb_read(s, NULL, s->bytes_left);
}

static const pb_msgdesc_t *const messages[] = {
    join_IssueJoinTicketRequest_fields,
    join_IssueJoinTicketResponse_fields,
    join_IssueRejoinTicketRequest_fields,
    join_IssueRejoinTicketResponse_fields,
    join_ControlPlaneFile_fields,
    init_InitRequest_fields,
    init_InitResponse_fields,
    recoverproto_RecoverMessage_fields,
    recoverproto_RecoverResponse_fields,
    components_Component_fields,
};

/* Big enough for the largest message struct; static to keep it off the fuzzer's stack. */
static union {
	join_IssueJoinTicketRequest a;
	join_IssueJoinTicketResponse b;
	init_InitRequest c;
	init_InitResponse d;
	components_Component e;
	recoverproto_RecoverMessage f;
} msg, again;
static uint8_t out[1 << 20], out2[1 << 20];

/* Sets every callback of the top-level message to skip its bytes when decoding (decode != 0),
 * or to write nothing when encoding: funcs is a union, so the two must never mix. */
static void set_callbacks(const pb_msgdesc_t *fields, void *m, int decode)
{
	pb_field_iter_t it;

	if (!pb_field_iter_begin(&it, fields, m))
		return;
	do {
		if (PB_ATYPE(it.type) == PB_ATYPE_CALLBACK)
			((pb_callback_t *)it.pData)->funcs.decode = decode ? skip_cb : NULL;
	} while (pb_field_iter_next(&it));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const pb_msgdesc_t *fields;
	pb_istream_t is;
	pb_ostream_t os, os2;

	if (size < 1 || size > (1 << 20))
		return 0;
	fields = messages[data[0] % (sizeof messages / sizeof messages[0])];
	memset(&msg, 0, sizeof msg);
	set_callbacks(fields, &msg, 1);
	is = pb_istream_from_buffer(data + 1, size - 1);
	if (!pb_decode(&is, fields, &msg))
		return 0;
	/* Callback fields were skipped, so re-encoding is only compared for what remains. */
	memset(&again, 0, sizeof again);
	os = pb_ostream_from_buffer(out, sizeof out);
	set_callbacks(fields, &msg, 0);
	if (!pb_encode(&os, fields, &msg))
		return 0;
	set_callbacks(fields, &again, 1);
	is = pb_istream_from_buffer(out, os.bytes_written);
	if (!pb_decode(&is, fields, &again))
		abort();
	os2 = pb_ostream_from_buffer(out2, sizeof out2);
	set_callbacks(fields, &again, 0);
	if (!pb_encode(&os2, fields, &again) || os2.bytes_written != os.bytes_written ||
	    memcmp(out, out2, os.bytes_written))
		abort();
	return 0;
}
