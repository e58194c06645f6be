/* Shared inside the rpc layer. */
#ifndef CONSTEL_RPC_INTERNAL_H
#define CONSTEL_RPC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <nghttp2/nghttp2.h>

#include "rpc.h"

void grpc_frame_header(uint8_t hdr[5], size_t len);
void grpc_percent_encode(const char *in, char *out, size_t cap);
void grpc_percent_decode(const uint8_t *in, size_t len, char *out, size_t cap);
ssize_t rpc_h2_write(const struct rpc_io *io, const uint8_t *data, size_t len);
short rpc_h2_events(const struct rpc_io *io, nghttp2_session *h2);
int rpc_poll_timeout(int64_t left);
/* nghttp2's allocator: wiped, counted against RPC_MEM_BUDGET. */
nghttp2_mem *rpc_h2_mem(void);
/* The same allocator, counted against a's share too (mem must outlive the session). */
void rpc_h2_mem_for(nghttp2_mem *mem, struct rpc_mem_account *a);

#endif
