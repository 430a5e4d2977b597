/* The ABI between kturnd and its relay port lookup (bpf/kturn_relay_lookup.bpf.c): kturnd serves
 * every relay port of a worker from one UDP socket per address family instead of a socket per
 * allocation. The sk_lookup program, attached to kturnd's network namespace, runs when the kernel
 * looks for the socket of an arriving datagram, and hands a datagram addressed to a relayed
 * transport address that kturnd holds to that worker's socket, which reads the address it was
 * sent to (IP_RECVORIGDSTADDR) to tell the allocation. Every other datagram and connection is
 * looked up as usual.
 *
 * As in kturn_offload.h: addresses are 16 bytes in network order, IPv4 as IPv4-mapped IPv6;
 * ports in network order; fixed-width types, explicit padding, sizes pinned in both languages. */
#ifndef KTURN_BPF_KTURN_RELAY_LOOKUP_H_
#define KTURN_BPF_KTURN_RELAY_LOOKUP_H_

#include <linux/types.h>

/* Relayed transport addresses held at once unless kturnd sizes the map otherwise. */
#define KTURN_RELAY_LOOKUP_DEFAULT_PORTS 262144
/* Sockets kturnd may register: two (IPv4, IPv6) per worker. */
#define KTURN_RELAY_LOOKUP_MAX_SOCKETS 256

/* A relayed transport address (RFC 8656 §2): the relay address and port a peer sends to. */
struct kturn_relay_key {
  __u8 addr[16];
  __be16 port;
  __u16 pad; /* zero */
};

/* Which socket of kturn_relay_sockets receives its datagrams. */
struct kturn_relay_value {
  __u32 socket;
};

#ifdef __cplusplus
static_assert(sizeof(kturn_relay_key) == 20);
static_assert(sizeof(kturn_relay_value) == 4);
#else
_Static_assert(sizeof(struct kturn_relay_key) == 20, "kturn_relay_key");
_Static_assert(sizeof(struct kturn_relay_value) == 4, "kturn_relay_value");
#endif

#endif /* KTURN_BPF_KTURN_RELAY_LOOKUP_H_ */
