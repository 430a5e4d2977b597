/* The ABI between kturnd and its eBPF fast path (bpf/kturn_offload.bpf.c): map keys, map values
 * and counter indexes. Included by the BPF program (C, clang -target bpf) and by the C++ loader
 * (src/xdp/); nothing else describes these layouts. Fixed-width types only, explicit padding, and
 * the sizes pinned by static asserts in both languages, so that a field added on one side without
 * the other fails to build instead of corrupting a map.
 *
 * Addresses are 16 bytes in network order: IPv6 as is, IPv4 as an IPv4-mapped IPv6 address
 * (::ffff:a.b.c.d), the form the socket API already uses. Ports and channel numbers are in network
 * order, as on the wire, so that the program compares and copies them without swapping. */
#ifndef KTURN_BPF_KTURN_OFFLOAD_H_
#define KTURN_BPF_KTURN_OFFLOAD_H_

#include <linux/types.h>

/* Entries per map unless kturnd sizes them otherwise before loading; kturn_counters has one
 * slot per entry of both maps. */
#define KTURN_OFFLOAD_DEFAULT_ENTRIES 65536

/* Client -> peer: a ChannelData message from a client's 5-tuple on a listener, with this channel
 * number. RFC 8656 §12: a channel is bound per allocation, and an allocation is named by the
 * client's 5-tuple (client address, server address, transport UDP). */
struct kturn_channel_key {
  __u8 client_addr[16];
  __u8 server_addr[16];
  __be16 client_port;
  __be16 server_port;
  __be16 channel; /* 0x4000-0x7FFF (RFC 5766's range; RFC 8656 keeps 0x4000-0x4FFF) */
  __u16 pad;      /* zero */
};

/* Where the channel's data goes: from the allocation's relayed address to the bound peer, until
 * `expires_ns` (CLOCK_MONOTONIC, bpf_ktime_get_ns()): the earliest of the channel's, the
 * permission's and the allocation's expiry. The kernel stops relaying at that instant even if
 * kturnd has not yet removed the entry; kturnd moves it on when the client refreshes. */
struct kturn_channel_value {
  __u8 relay_addr[16];
  __u8 peer_addr[16];
  __be16 relay_port;
  __be16 peer_port;
  __u32 counter; /* index into kturn_counters */
  __u64 expires_ns;
};

/* Peer -> client: a UDP datagram from the bound peer's transport address to the relayed
 * transport address. */
struct kturn_peer_key {
  __u8 peer_addr[16];
  __u8 relay_addr[16];
  __be16 peer_port;
  __be16 relay_port;
  __u32 pad; /* zero */
};

/* Where it goes: to the client's 5-tuple, framed as ChannelData on this channel. */
struct kturn_peer_value {
  __u8 client_addr[16];
  __u8 server_addr[16];
  __be16 client_port;
  __be16 server_port;
  __be16 channel;
  __u16 pad;     /* zero */
  __u32 counter; /* index into kturn_counters */
  __u32 pad2;    /* zero */
  __u64 expires_ns;
};

/* What the program relayed for one map entry: the array `kturn_counters`, indexed by the entry's
 * `counter`. Kept apart from the entries so that kturnd can move an entry's expiry without losing
 * a count. The program adds atomically (a flow's packets rarely meet on two CPUs, so the cache
 * line stays put); kturnd maps the array into its memory (BPF_F_MMAPABLE) and reads the running
 * totals without a system call. A slot is never reset: kturnd keeps the value it last read. */
struct kturn_counter {
  __u64 packets;
  __u64 bytes; /* application data: the ChannelData payload, or the peer's UDP payload */
};

/* A source kturnd drops in the kernel (the fail2ban pattern of source document 001): every UDP
 * datagram from `addr` to kturnd's listener port `port` is dropped before the network stack
 * until `expires_ns` (CLOCK_MONOTONIC), because the source kept failing authentication there.
 * Written by the worker whose throttle caught the source; an LRU map, so a flood of sources
 * evicts the oldest entries instead of failing. */
struct kturn_block_key {
  __u8 addr[16];
  __be16 port;
  __u16 pad;  /* zero */
  __u32 pad2; /* zero */
};

struct kturn_block_value {
  __u64 expires_ns;
  __u64 dropped; /* datagrams the program dropped for this entry (atomic adds) */
};

/* Entries of kturn_blocked. */
#define KTURN_BLOCK_DEFAULT_ENTRIES 16384

/* Indexes of the per-CPU counter array `kturn_stats`: what the program did with a packet it
 * looked at. Everything but the first two leaves the packet to the kernel and kturnd as it was. */
enum kturn_offload_stat {
  KTURN_STAT_TO_PEER = 0,   /* ChannelData relayed to its peer */
  KTURN_STAT_TO_CLIENT,     /* peer datagram relayed to its client as ChannelData */
  KTURN_STAT_PASS_NO_ENTRY, /* ChannelData-shaped (first byte, length), but no entry for it */
  KTURN_STAT_PASS_EXPIRED,  /* an entry past its expiry: kturnd decides */
  KTURN_STAT_PASS_LENGTH,   /* ChannelData whose length is not the datagram's (padding) */
  KTURN_STAT_PASS_IP,       /* IPv4 options or fragment, IPv6 extension header */
  KTURN_STAT_PASS_SIZE,     /* larger than the program moves, or a GSO packet */
  KTURN_STAT_PASS_ROUTE,    /* no route, forwarding off, MTU too small, family change */
  KTURN_STAT_ABORTED,       /* a helper failed half-way: dropped, never seen twice */
  KTURN_STAT_DROP_BLOCKED,  /* from a source kturn_blocked holds, to its port: dropped */
  KTURN_STAT_COUNT,
};

/* The largest UDP payload the program relays; larger ones go to kturnd. Covers a 9000-byte
 * jumbo frame. */
#define KTURN_OFFLOAD_MAX_PAYLOAD 8960

#ifdef __cplusplus
static_assert(sizeof(kturn_channel_key) == 40);
static_assert(sizeof(kturn_channel_value) == 48);
static_assert(sizeof(kturn_peer_key) == 40);
static_assert(sizeof(kturn_peer_value) == 56);
static_assert(sizeof(kturn_counter) == 16);
static_assert(sizeof(kturn_block_key) == 24);
static_assert(sizeof(kturn_block_value) == 16);
#else
_Static_assert(sizeof(struct kturn_channel_key) == 40, "kturn_channel_key");
_Static_assert(sizeof(struct kturn_channel_value) == 48, "kturn_channel_value");
_Static_assert(sizeof(struct kturn_peer_key) == 40, "kturn_peer_key");
_Static_assert(sizeof(struct kturn_peer_value) == 56, "kturn_peer_value");
_Static_assert(sizeof(struct kturn_counter) == 16, "kturn_counter");
_Static_assert(sizeof(struct kturn_block_key) == 24, "kturn_block_key");
_Static_assert(sizeof(struct kturn_block_value) == 16, "kturn_block_value");
#endif

#endif /* KTURN_BPF_KTURN_OFFLOAD_H_ */
