/* aTLS as the transport under gRPC: the TLS engine's application data is the HTTP/2 byte
 * stream, and the engine's own record I/O adds to what the poll loop waits for. */
#include "atls/atls.h"
#include "rpc.h"

static ssize_t atls_io_read(void *ctx, void *buf, size_t len)
{
	return atls_read(ctx, buf, len);
}

static ssize_t atls_io_write(void *ctx, const void *buf, size_t len)
{
	return atls_write(ctx, buf, len);
}

static short atls_io_events(void *ctx)
{
	return atls_events(ctx);
}

static int atls_io_writable(void *ctx)
{
	return atls_writable(ctx);
}

void rpc_io_atls(struct rpc_io *io, struct atls_conn *c)
{
	io->writable = atls_io_writable;
	io->read = atls_io_read;
	io->write = atls_io_write;
	io->events = atls_io_events;
	io->ctx = c;
}
