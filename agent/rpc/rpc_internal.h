/* Shared inside the rpc layer. */
#ifndef CONSTEL_RPC_INTERNAL_H
#define CONSTEL_RPC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

void grpc_frame_header(uint8_t hdr[5], size_t len);
void grpc_percent_encode(const char *in, char *out, size_t cap);
void grpc_percent_decode(const uint8_t *in, size_t len, char *out, size_t cap);

#endif
