/* libFuzzer target: arbitrary bytes after a valid HTTP/2 client preface, fed into a gRPC
 * server connection with an echo method. It must neither crash nor leak, whatever the frames
 * say. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "rpc/rpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct feed {
	const uint8_t *p;
	size_t len, off;
	int preface_done;
};

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

static ssize_t feed_read(void *ctx, void *buf, size_t len)
{
	struct feed *f = ctx;
	size_t n;

	if (!f->preface_done) {
		f->preface_done = 1;
		memcpy(buf, preface, sizeof preface - 1);
		return sizeof preface - 1;
	}
	if (f->off >= f->len)
		return -ECONNRESET;
	n = f->len - f->off < len ? f->len - f->off : len;
	if (n > 64)
		n = 64;
	memcpy(buf, f->p + f->off, n);
	f->off += n;
	return (ssize_t)n;
}

static ssize_t sink_write(void *ctx, const void *buf, size_t len)
{
	(void)ctx;
	(void)buf;
	return (ssize_t)len;
}

static short no_events(void *ctx)
{
	(void)ctx;
	return 0;
}

static void echo(void *ctx, struct grpc_stream *s, const uint8_t *req, size_t len)
{
	(void)ctx;
	grpc_stream_send(s, req, len);
	grpc_stream_finish(s, 0, NULL);
}

static const struct grpc_method methods[] = {{"/t.API/Echo", echo, NULL}};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct feed f = {data, size, 0, 0};
	struct rpc_io io = {feed_read, sink_write, no_events, &f, NULL};
	struct grpc_server_conn *c;

	if (size > 65536 || grpc_server_conn_new(&io, methods, 1, &c) < 0)
		return 0;
	for (int i = 0; i < 4 && grpc_server_conn_step(c) == 0; i++)
		;
	grpc_server_conn_free(c);
	return 0;
}
