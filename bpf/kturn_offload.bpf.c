/* kturnd's kernel fast path: relays UDP ChannelData between a client and its bound peer without
 * waking kturnd (RFC 8656 §12). kturnd's worker that binds a channel writes both directions into
 * the maps of bpf/kturn_offload.h; this program only looks them up and counts.
 *
 *   client -> listener   ChannelData(channel, data)      ->  relay -> peer       data
 *   peer -> relay        data                            ->  listener -> client  ChannelData
 *
 * Two attach points run the same logic: `kturn_tc` on the TC ingress hook (every interface,
 * veth and loopback included) and `kturn_xdp` (where the driver runs XDP). Whatever the program
 * cannot relay exactly as kturnd would goes up the stack unchanged: STUN messages, unknown 5-tuples
 * and channels, IPv4 options and fragments, IPv6 extension headers, padded or truncated
 * ChannelData, GSO packets, oversize payloads, no route or a too small MTU. The per-CPU array
 * `kturn_stats` counts each outcome.
 *
 * Why TC moves the payload instead of the headers: packets from a local socket through veth or
 * loopback carry CHECKSUM_PARTIAL, an offset in the skb that says where the deferred UDP checksum
 * starts. bpf_skb_adjust_room() moves the headers but not that offset, so the checksum would be
 * computed over the wrong bytes. Keeping the IP and UDP headers in place and moving the data by
 * four bytes (bpf_skb_change_tail() plus a copy) keeps every checksum state right; the helpers
 * (bpf_skb_store_bytes, bpf_l4_csum_replace) keep CHECKSUM_COMPLETE right as well. XDP frames
 * carry no such state, so there the headers are rewritten four bytes further or nearer instead.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "kturn_offload.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, KTURN_OFFLOAD_DEFAULT_ENTRIES);
  __type(key, struct kturn_channel_key);
  __type(value, struct kturn_channel_value);
} kturn_channels SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, KTURN_OFFLOAD_DEFAULT_ENTRIES);
  __type(key, struct kturn_peer_key);
  __type(value, struct kturn_peer_value);
} kturn_peers SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(map_flags, BPF_F_MMAPABLE);
  __uint(max_entries, 2 * KTURN_OFFLOAD_DEFAULT_ENTRIES);
  __type(key, __u32);
  __type(value, struct kturn_counter);
} kturn_counters SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, KTURN_STAT_COUNT);
  __type(key, __u32);
  __type(value, __u64);
} kturn_stats SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, KTURN_BLOCK_DEFAULT_ENTRIES);
  __type(key, struct kturn_block_key);
  __type(value, struct kturn_block_value);
} kturn_blocked SEC(".maps");

/* Set by kturnd once it has blocked a source: until then no datagram pays for a lookup in
 * kturn_blocked. */
volatile __u32 kturn_blocking = 0;

/* The largest payload relayed, set by the loader before loading (read-only afterwards, so the
 * verifier sees a constant); tests lower it to reach the oversize case. */
const volatile __u32 max_payload = KTURN_OFFLOAD_MAX_PAYLOAD;

/* TC's copy buffer: a map value, not the 512-byte stack. Twice the chunk, so that the mask the
 * verifier needs to bound a chunk's length (below) stays inside it. */
#define KTURN_CHUNK 512
struct chunk {
  __u8 bytes[2 * KTURN_CHUNK];
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct chunk);
} kturn_scratch SEC(".maps");

#define ETH_HLEN_ 14
#define UDP_HLEN 8
#define CHANNEL_HLEN 4
#define LOOPBACK_IFINDEX 1
#define RELAY_TTL 64 /* a relay originates its datagrams: the kernel's default TTL, as kturnd's */
#define IP_MF 0x2000
#define IP_OFFSET 0x1FFF

/* The headers of a UDP datagram, parsed in place. */
struct packet {
  __u32 l4;          /* offset of the UDP header from the frame's start */
  __u32 ip_hlen;     /* 20 or 40 */
  __u32 payload_len; /* UDP payload bytes, from the UDP header */
  __u8 v6;
  __u8 tos;          /* IPv4 only; IPv6 keeps its first word whole in v6_flow */
  __be16 ip_id;
  __be16 frag_off;
  __be32 v6_flow;
  __u8 src[16];
  __u8 dst[16];
  __be16 sport;
  __be16 dport;
  __be16 check;
};

enum parse_result {
  PARSE_UDP,     /* an unfragmented UDP datagram without IP options */
  PARSE_IGNORE,  /* not UDP: not counted, not ours */
  PARSE_PASS_IP, /* UDP or possibly UDP, in a form the program does not rewrite */
};

static __always_inline void count(__u32 stat) {
  __u64* v = bpf_map_lookup_elem(&kturn_stats, &stat);
  if (v) *v += 1; /* per-CPU: no atomics needed */
}

static __always_inline void mapV4(__u8* out, __be32 addr) {
  __builtin_memset(out, 0, 10);
  out[10] = 0xff;
  out[11] = 0xff;
  __builtin_memcpy(out + 12, &addr, 4);
}

static __always_inline __be32 v4Of(const __u8* mapped) {
  __be32 a;
  __builtin_memcpy(&a, mapped + 12, 4);
  return a;
}

static __always_inline int parse(void* data, void* data_end, struct packet* p) {
  struct ethhdr* eth = data;
  if ((void*)(eth + 1) > data_end) return PARSE_IGNORE;
  if (eth->h_proto == bpf_htons(ETH_P_IP)) {
    struct iphdr* ip = (void*)(eth + 1);
    if ((void*)(ip + 1) > data_end) return PARSE_IGNORE;
    if (ip->protocol != IPPROTO_UDP) return PARSE_IGNORE;
    if (ip->ihl != 5 || (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET))) return PARSE_PASS_IP;
    struct udphdr* udp = (void*)(ip + 1);
    if ((void*)(udp + 1) > data_end) return PARSE_IGNORE;
    __u32 ip_len = bpf_ntohs(ip->tot_len);
    __u32 udp_len = bpf_ntohs(udp->len);
    if (udp_len < UDP_HLEN || ip_len != sizeof(*ip) + udp_len) return PARSE_PASS_IP;
    p->v6 = 0;
    p->ip_hlen = sizeof(*ip);
    p->tos = ip->tos;
    p->ip_id = ip->id;
    p->frag_off = ip->frag_off;
    mapV4(p->src, ip->saddr);
    mapV4(p->dst, ip->daddr);
    p->l4 = ETH_HLEN_ + sizeof(*ip);
    p->payload_len = udp_len - UDP_HLEN;
    p->sport = udp->source;
    p->dport = udp->dest;
    p->check = udp->check;
    return PARSE_UDP;
  }
  if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
    struct ipv6hdr* ip6 = (void*)(eth + 1);
    if ((void*)(ip6 + 1) > data_end) return PARSE_IGNORE;
    if (ip6->nexthdr != IPPROTO_UDP) {
      switch (ip6->nexthdr) { /* extension headers that may hide a UDP datagram */
        case IPPROTO_HOPOPTS:
        case IPPROTO_ROUTING:
        case IPPROTO_FRAGMENT:
        case IPPROTO_DSTOPTS:
          return PARSE_PASS_IP;
        default:
          return PARSE_IGNORE;
      }
    }
    struct udphdr* udp = (void*)(ip6 + 1);
    if ((void*)(udp + 1) > data_end) return PARSE_IGNORE;
    __u32 udp_len = bpf_ntohs(udp->len);
    if (udp_len < UDP_HLEN || bpf_ntohs(ip6->payload_len) != udp_len) return PARSE_PASS_IP;
    p->v6 = 1;
    p->ip_hlen = sizeof(*ip6);
    __builtin_memcpy(&p->v6_flow, ip6, 4);
    __builtin_memcpy(p->src, &ip6->saddr, 16);
    __builtin_memcpy(p->dst, &ip6->daddr, 16);
    p->l4 = ETH_HLEN_ + sizeof(*ip6);
    p->payload_len = udp_len - UDP_HLEN;
    p->sport = udp->source;
    p->dport = udp->dest;
    p->check = udp->check;
    return PARSE_UDP;
  }
  return PARSE_IGNORE;
}

/* The datagram the program sends instead: new addresses and ports, a payload four bytes longer
 * (a ChannelData header added) or shorter (removed). */
struct rewrite {
  __u8 src[16];
  __u8 dst[16];
  __be16 sport;
  __be16 dport;
  __u32 payload_len;  /* the new UDP payload length */
  __be32 channel_hdr; /* the ChannelData header added or removed */
  __u8 add_channel;   /* 1: peer -> client, 0: client -> peer */
};

/* Folds a sum of 32-bit one's-complement partial sums to the 16-bit checksum field. */
static __always_inline __u16 csumFold(__u64 sum) {
  sum = (sum & 0xffffffff) + (sum >> 32);
  sum = (sum & 0xffffffff) + (sum >> 32);
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return (__u16)~sum;
}

/* RFC 1624 incremental update, split the way bpf_l4_csum_replace() wants it: what changes in the
 * pseudo-header (addresses, length) and what changes in the UDP header and data (ports, the length
 * field, the ChannelData header). Moving the data by four bytes keeps every 16-bit word's
 * alignment, so the rest of the payload adds nothing. */
struct csum_words {
  __u8 addrs[32];
  __be32 len;
};
struct data_words {
  __be16 sport;
  __be16 dport;
  __be16 len;
  __be16 zero;
  __be32 channel_hdr;
};

static __always_inline __s64 pseudoDiff(const struct packet* p, const struct rewrite* r) {
  struct csum_words from = {}, to = {};
  __builtin_memcpy(from.addrs, p->src, 16);
  __builtin_memcpy(from.addrs + 16, p->dst, 16);
  from.len = bpf_htonl(p->payload_len + UDP_HLEN);
  __builtin_memcpy(to.addrs, r->src, 16);
  __builtin_memcpy(to.addrs + 16, r->dst, 16);
  to.len = bpf_htonl(r->payload_len + UDP_HLEN);
  return bpf_csum_diff((__be32*)&from, sizeof(from), (__be32*)&to, sizeof(to), 0);
}

static __always_inline __s64 dataDiff(const struct packet* p, const struct rewrite* r) {
  struct data_words from = {}, to = {};
  from.sport = p->sport;
  from.dport = p->dport;
  from.len = bpf_htons(p->payload_len + UDP_HLEN);
  to.sport = r->sport;
  to.dport = r->dport;
  to.len = bpf_htons(r->payload_len + UDP_HLEN);
  if (r->add_channel)
    to.channel_hdr = r->channel_hdr;
  else
    from.channel_hdr = r->channel_hdr;
  return bpf_csum_diff((__be32*)&from, sizeof(from), (__be32*)&to, sizeof(to), 0);
}

/* The new IP header, written whole. */
static __always_inline void buildIpv4(const struct packet* p, const struct rewrite* r,
                                      struct iphdr* ip) {
  __builtin_memset(ip, 0, sizeof(*ip));
  ip->version = 4;
  ip->ihl = 5;
  ip->tos = p->tos;
  ip->tot_len = bpf_htons(sizeof(*ip) + UDP_HLEN + r->payload_len);
  ip->id = p->ip_id;
  ip->frag_off = p->frag_off; /* DF or nothing: fragments never get here */
  ip->ttl = RELAY_TTL;
  ip->protocol = IPPROTO_UDP;
  ip->saddr = v4Of(r->src);
  ip->daddr = v4Of(r->dst);
  ip->check = csumFold((__u32)bpf_csum_diff(0, 0, (__be32*)ip, sizeof(*ip), 0));
}

static __always_inline void buildIpv6(const struct packet* p, const struct rewrite* r,
                                      struct ipv6hdr* ip6) {
  __builtin_memcpy(ip6, &p->v6_flow, 4);
  ip6->payload_len = bpf_htons(UDP_HLEN + r->payload_len);
  ip6->nexthdr = IPPROTO_UDP;
  ip6->hop_limit = RELAY_TTL;
  __builtin_memcpy(&ip6->saddr, r->src, 16);
  __builtin_memcpy(&ip6->daddr, r->dst, 16);
}

/* Where the rewritten datagram goes. */
enum route {
  ROUTE_REDIRECT,       /* out of fib.ifindex, MAC addresses from the FIB */
  ROUTE_REDIRECT_NEIGH, /* out of fib.ifindex, the kernel resolves the neighbour (TC only) */
  ROUTE_LOCAL,          /* to a local socket: up the stack of the loopback interface */
  ROUTE_NONE,
};

static __always_inline int isV4Mapped(const __u8* a) {
  __u64 head;
  __u16 ffff;
  __builtin_memcpy(&head, a, 8);
  __builtin_memcpy(&ffff, a + 10, 2);
  return head == 0 && a[8] == 0 && a[9] == 0 && ffff == 0xFFFF;
}

static __always_inline enum route lookupRoute(void* ctx, const struct packet* p,
                                              const struct rewrite* r, __u32 ifindex, int tc,
                                              struct bpf_fib_lookup* fib) {
  /* An allocation whose relayed address is of the other family (RFC 8656 §7.1) changes the IP
   * header's size: kturnd relays those itself. */
  if (isV4Mapped(r->src) == p->v6 || isV4Mapped(r->dst) == p->v6) return ROUTE_NONE;
  __builtin_memset(fib, 0, sizeof(*fib));
  fib->l4_protocol = IPPROTO_UDP;
  fib->sport = r->sport;
  fib->dport = r->dport;
  fib->tot_len = p->ip_hlen + UDP_HLEN + r->payload_len;
  fib->ifindex = ifindex;
  if (p->v6) {
    fib->family = 10; /* AF_INET6 */
    __builtin_memcpy(fib->ipv6_src, r->src, 16);
    __builtin_memcpy(fib->ipv6_dst, r->dst, 16);
  } else {
    fib->family = 2; /* AF_INET */
    fib->ipv4_src = v4Of(r->src);
    fib->ipv4_dst = v4Of(r->dst);
  }
  long rc = bpf_fib_lookup(ctx, fib, sizeof(*fib), 0);
  if (rc == BPF_FIB_LKUP_RET_SUCCESS) return ROUTE_REDIRECT;
  if (rc == BPF_FIB_LKUP_RET_NO_NEIGH && tc) return ROUTE_REDIRECT_NEIGH;
  /* A local peer (kturnd, client and peer on one host): the rewritten datagram goes up the stack
   * as if it had arrived. Only on loopback, where a local source address is not a martian. */
  if (rc == BPF_FIB_LKUP_RET_NOT_FWDED && ifindex == LOOPBACK_IFINDEX) return ROUTE_LOCAL;
  return ROUTE_NONE;
}

/* What decide() found: the counter slot and stat of a datagram to relay, or the reason to count
 * for one that goes up the stack unchanged (KTURN_STAT_COUNT: none). */
struct decision {
  __u32 counter;
  __u32 stat;  /* what to count: a relay direction or a pass reason; KTURN_STAT_COUNT: nothing */
  __u32 bytes_relayed;
};

static __always_inline void countRelayed(const struct decision* d) {
  struct kturn_counter* c = bpf_map_lookup_elem(&kturn_counters, &d->counter);
  if (c) {
    __sync_fetch_and_add(&c->packets, 1);
    __sync_fetch_and_add(&c->bytes, d->bytes_relayed);
  }
  count(d->stat);
}

/* Returns 1 and fills `r` and `d` for a datagram the program relays; 0 for one it leaves. */
static __always_inline int decide(void* data, void* data_end, const struct packet* p,
                                  struct rewrite* r, struct decision* d) {
  d->stat = KTURN_STAT_COUNT;
  /* Client -> peer: ChannelData. RFC 8656 §12 numbers channels 0x4000-0x4FFF, but RFC 5766
   * allowed 0x4000-0x7FFF and clients still bind there (coturn's turnutils_uclient picks up to
   * 0x7FFF); kturnd accepts both (src/stun/channel_data.h), so the kernel path must too: the
   * first byte's two top bits 01, as user space tells ChannelData from STUN. */
  __u8* payload = data + p->l4 + UDP_HLEN;
  /* ChannelData-shaped: the first byte's top bits, and a length field that the datagram holds
   * with at most 3 bytes of padding. What has no entry of either kind is counted as `no_entry`
   * only if so shaped, not every foreign datagram that starts with a byte 0x40-0x7F. */
  int channel_shaped = 0;
  if (p->payload_len >= CHANNEL_HLEN) {
    if ((void*)(payload + CHANNEL_HLEN) > data_end) return 0;
    __u32 len = ((__u32)payload[2] << 8) | payload[3];
    channel_shaped = (payload[0] & 0xC0) == 0x40 && len + CHANNEL_HLEN <= p->payload_len &&
                     p->payload_len - (len + CHANNEL_HLEN) < 4;
    if ((payload[0] & 0xC0) == 0x40) {
      struct kturn_channel_key key = {};
      __builtin_memcpy(key.client_addr, p->src, 16);
      __builtin_memcpy(key.server_addr, p->dst, 16);
      key.client_port = p->sport;
      key.server_port = p->dport;
      __builtin_memcpy(&key.channel, payload, 2);
      struct kturn_channel_value* v = bpf_map_lookup_elem(&kturn_channels, &key);
      /* No channel: unless it is a peer's datagram that happens to start like ChannelData,
       * kturnd's (an unbound channel, or one not offloaded). */
      if (!v) goto peer;
      if (bpf_ktime_get_ns() >= v->expires_ns) {
        d->stat = KTURN_STAT_PASS_EXPIRED;
        return 0;
      }
      if (len + CHANNEL_HLEN != p->payload_len) {
        d->stat = KTURN_STAT_PASS_LENGTH;
        return 0;
      }
      __builtin_memcpy(r->src, v->relay_addr, 16);
      __builtin_memcpy(r->dst, v->peer_addr, 16);
      r->sport = v->relay_port;
      r->dport = v->peer_port;
      r->payload_len = len;
      __builtin_memcpy(&r->channel_hdr, payload, 4);
      r->add_channel = 0;
      d->counter = v->counter;
      d->bytes_relayed = len;
      d->stat = KTURN_STAT_TO_PEER;
      return 1;
    }
  }
peer:
  /* Peer -> client: any datagram from a bound peer to its relayed address. */
  ;
  struct kturn_peer_key key = {};
  __builtin_memcpy(key.peer_addr, p->src, 16);
  __builtin_memcpy(key.relay_addr, p->dst, 16);
  key.peer_port = p->sport;
  key.relay_port = p->dport;
  struct kturn_peer_value* v = bpf_map_lookup_elem(&kturn_peers, &key);
  if (!v) {
    if (channel_shaped) d->stat = KTURN_STAT_PASS_NO_ENTRY;
    return 0; /* otherwise somebody else's datagram: not counted */
  }
  if (bpf_ktime_get_ns() >= v->expires_ns) {
    d->stat = KTURN_STAT_PASS_EXPIRED;
    return 0;
  }
  if (p->payload_len > max_payload - CHANNEL_HLEN) {
    d->stat = KTURN_STAT_PASS_SIZE;
    return 0;
  }
  __builtin_memcpy(r->src, v->server_addr, 16);
  __builtin_memcpy(r->dst, v->client_addr, 16);
  r->sport = v->server_port;
  r->dport = v->client_port;
  r->payload_len = p->payload_len + CHANNEL_HLEN;
  __u32 hdr = ((__u32)bpf_ntohs(v->channel) << 16) | p->payload_len;
  r->channel_hdr = bpf_htonl(hdr);
  r->add_channel = 1;
  d->counter = v->counter;
  d->bytes_relayed = p->payload_len;
  d->stat = KTURN_STAT_TO_CLIENT;
  return 1;
}

/* Parses and decides: 1 for a datagram to relay (p, r, d filled); 0 for one to leave, its
 * reason counted. */
/* Whether the datagram comes from a source kturnd blocked on its destination port (and counts
 * it). */
static __always_inline int blocked(const struct packet* p) {
  if (!kturn_blocking) return 0;
  struct kturn_block_key key = {};
  __builtin_memcpy(key.addr, p->src, 16);
  key.port = p->dport;
  struct kturn_block_value* b = bpf_map_lookup_elem(&kturn_blocked, &key);
  if (!b || bpf_ktime_get_ns() >= b->expires_ns) return 0;
  __sync_fetch_and_add(&b->dropped, 1);
  count(KTURN_STAT_DROP_BLOCKED);
  return 1;
}

/* 1: relay the packet as `r` says; 0: leave it to the kernel and kturnd; -1: drop it (a blocked
 * source). */
static __always_inline int classify(void* data, void* data_end, struct packet* p,
                                    struct rewrite* r, struct decision* d) {
  int parsed = parse(data, data_end, p);
  if (parsed == PARSE_IGNORE) return 0;
  if (parsed == PARSE_PASS_IP) {
    count(KTURN_STAT_PASS_IP);
    return 0;
  }
  if (blocked(p)) return -1;
  if (decide(data, data_end, p, r, d)) return 1;
  if (d->stat != KTURN_STAT_COUNT) count(d->stat);
  return 0;
}

/* ---- TC ---------------------------------------------------------------------------------- */

/* Moves `len` bytes of the skb from `from` to `to` (|from - to| = 4), in chunks through the
 * per-CPU scratch buffer: front to back when moving down, back to front when moving up.
 * A global function: the verifier checks its loop once, not once per inlined call site, which
 * keeps loading the program fast. */
__attribute__((noinline)) int moveData(struct __sk_buff* skb, __u32 from, __u32 to, __u32 len) {
  __u32 zero = 0;
  struct chunk* buf = bpf_map_lookup_elem(&kturn_scratch, &zero);
  if (!buf) return -1;
  __u32 done = 0;
  for (int i = 0; i < KTURN_OFFLOAD_MAX_PAYLOAD / KTURN_CHUNK + 1; i++) {
    if (done >= len) return 0;
    __u32 n = len - done;
    if (n > KTURN_CHUNK) n = KTURN_CHUNK;
    __u32 off = to < from ? done : len - done - n;
    /* Clang proves 1 <= n <= KTURN_CHUNK and drops any check of it, but the verifier tracks
     * another copy of the register: bound the register passed, to [1, 2 * KTURN_CHUNK]. */
    asm volatile("%[n] += -1\n%[n] &= %[mask]\n%[n] += 1"
                 : [n] "+r"(n)
                 : [mask] "i"(2 * KTURN_CHUNK - 1));
    if (bpf_skb_load_bytes(skb, from + off, buf->bytes, n)) return -1;
    if (bpf_skb_store_bytes(skb, to + off, buf->bytes, n, BPF_F_RECOMPUTE_CSUM)) return -1;
    done += n;
  }
  return done >= len ? 0 : -1;
}

static __always_inline int tcRewrite(struct __sk_buff* skb, const struct packet* p,
                                     const struct rewrite* r) {
  __u32 data_off = p->l4 + UDP_HLEN;
  if (r->add_channel) {
    if (bpf_skb_change_tail(skb, data_off + r->payload_len, 0)) return -1;
    if (moveData(skb, data_off, data_off + CHANNEL_HLEN, p->payload_len)) return -1;
    if (bpf_skb_store_bytes(skb, data_off, &r->channel_hdr, 4, BPF_F_RECOMPUTE_CSUM)) return -1;
  } else {
    if (moveData(skb, data_off + CHANNEL_HLEN, data_off, r->payload_len)) return -1;
    if (bpf_skb_change_tail(skb, data_off + r->payload_len, 0)) return -1;
  }
  if (p->v6) {
    struct ipv6hdr ip6;
    buildIpv6(p, r, &ip6);
    if (bpf_skb_store_bytes(skb, ETH_HLEN_, &ip6, sizeof(ip6), BPF_F_RECOMPUTE_CSUM)) return -1;
  } else {
    struct iphdr ip;
    buildIpv4(p, r, &ip);
    if (bpf_skb_store_bytes(skb, ETH_HLEN_, &ip, sizeof(ip), BPF_F_RECOMPUTE_CSUM)) return -1;
  }
  struct data_words udp = {.sport = r->sport, .dport = r->dport,
                           .len = bpf_htons(r->payload_len + UDP_HLEN)};
  if (bpf_skb_store_bytes(skb, p->l4, &udp, 6, BPF_F_RECOMPUTE_CSUM)) return -1;
  __u32 check_off = p->l4 + offsetof(struct udphdr, check);
  if (bpf_l4_csum_replace(skb, check_off, 0, pseudoDiff(p, r),
                          BPF_F_PSEUDO_HDR | BPF_F_MARK_MANGLED_0))
    return -1;
  if (bpf_l4_csum_replace(skb, check_off, 0, dataDiff(p, r), BPF_F_MARK_MANGLED_0)) return -1;
  return 0;
}

SEC("tc")
int kturn_tc(struct __sk_buff* skb) {
  /* Headers and the ChannelData header in the linear part, for direct reads. */
  __u32 pull = ETH_HLEN_ + sizeof(struct ipv6hdr) + UDP_HLEN + CHANNEL_HLEN;
  if (skb->len < pull) pull = skb->len;
  if (bpf_skb_pull_data(skb, pull)) return TC_ACT_OK;
  void* data = (void*)(long)skb->data;
  void* data_end = (void*)(long)skb->data_end;

  struct packet p = {};
  struct rewrite r = {};
  struct decision d = {};
  const int verdict = classify(data, data_end, &p, &r, &d);
  if (verdict < 0) return TC_ACT_SHOT;
  if (verdict == 0) return TC_ACT_OK;
  if (skb->gso_segs > 1 || p.payload_len > max_payload) {
    count(KTURN_STAT_PASS_SIZE);
    return TC_ACT_OK;
  }
  struct bpf_fib_lookup fib;
  enum route route = lookupRoute(skb, &p, &r, skb->ifindex, 1, &fib);
  if (route == ROUTE_NONE) {
    count(KTURN_STAT_PASS_ROUTE);
    return TC_ACT_OK;
  }
  if (tcRewrite(skb, &p, &r)) {
    count(KTURN_STAT_ABORTED);
    return TC_ACT_SHOT; /* half rewritten: neither kturnd nor the peer may see it */
  }
  countRelayed(&d);
  bpf_set_hash_invalid(skb);
  if (route == ROUTE_LOCAL) return TC_ACT_OK;
  if (route == ROUTE_REDIRECT_NEIGH) return bpf_redirect_neigh(fib.ifindex, 0, 0, 0);
  __u8 macs[12];
  __builtin_memcpy(macs, fib.dmac, 6);
  __builtin_memcpy(macs + 6, fib.smac, 6);
  if (bpf_skb_store_bytes(skb, 0, macs, sizeof(macs), 0)) return TC_ACT_SHOT;
  return bpf_redirect(fib.ifindex, 0);
}

/* ---- XDP --------------------------------------------------------------------------------- */

/* Writes the new Ethernet, IP and UDP headers (and ChannelData header) at the frame's start,
 * which bpf_xdp_adjust_head() has moved four bytes back (header added) or forward (removed). */
static __always_inline int xdpWrite(struct xdp_md* ctx, const struct packet* p,
                                    const struct rewrite* r, const __u8* macs) {
  void* data = (void*)(long)ctx->data;
  void* data_end = (void*)(long)ctx->data_end;
  struct ethhdr* eth = data;
  if ((void*)(eth + 1) > data_end) return -1;
  __builtin_memcpy(eth->h_dest, macs, 6);
  __builtin_memcpy(eth->h_source, macs + 6, 6);
  struct udphdr* udp;
  if (p->v6) {
    eth->h_proto = bpf_htons(ETH_P_IPV6);
    struct ipv6hdr* ip6 = (void*)(eth + 1);
    if ((void*)(ip6 + 1) > data_end) return -1;
    buildIpv6(p, r, ip6);
    udp = (void*)(ip6 + 1);
  } else {
    eth->h_proto = bpf_htons(ETH_P_IP);
    struct iphdr* ip = (void*)(eth + 1);
    if ((void*)(ip + 1) > data_end) return -1;
    buildIpv4(p, r, ip);
    udp = (void*)(ip + 1);
  }
  if ((void*)(udp + 1) > data_end) return -1;
  udp->source = r->sport;
  udp->dest = r->dport;
  udp->len = bpf_htons(r->payload_len + UDP_HLEN);
  if (r->add_channel) {
    if ((void*)(udp + 1) + CHANNEL_HLEN > data_end) return -1;
    __builtin_memcpy(udp + 1, &r->channel_hdr, 4);
  }
  if (p->check == 0 && !p->v6) {
    udp->check = 0; /* IPv4 without a checksum stays without */
  } else {
    __u64 sum = (__u16)~p->check;
    sum += (__u32)pseudoDiff(p, r);
    sum += (__u32)dataDiff(p, r);
    __u16 check = csumFold(sum);
    udp->check = check ? check : 0xFFFF;
  }
  return 0;
}

SEC("xdp")
int kturn_xdp(struct xdp_md* ctx) {
  void* data = (void*)(long)ctx->data;
  void* data_end = (void*)(long)ctx->data_end;
  struct packet p = {};
  struct rewrite r = {};
  struct decision d = {};
  const int verdict = classify(data, data_end, &p, &r, &d);
  if (verdict < 0) return XDP_DROP;
  if (verdict == 0) return XDP_PASS;
  /* The payload must be in the frame as the UDP header says (no multi-buffer frames). */
  if (data + p.l4 + UDP_HLEN + p.payload_len > data_end ||
      p.payload_len > max_payload) {
    count(KTURN_STAT_PASS_SIZE);
    return XDP_PASS;
  }
  struct bpf_fib_lookup fib;
  enum route route = lookupRoute(ctx, &p, &r, ctx->ingress_ifindex, 0, &fib);
  if (route == ROUTE_NONE) {
    count(KTURN_STAT_PASS_ROUTE);
    return XDP_PASS;
  }
  __u8 macs[12] = {};
  if (route == ROUTE_REDIRECT) {
    __builtin_memcpy(macs, fib.dmac, 6);
    __builtin_memcpy(macs + 6, fib.smac, 6);
  }
  /* Frames end where the IP header says; anything after it (Ethernet padding) is cut. */
  __u32 frame_len = p.l4 + UDP_HLEN + p.payload_len;
  int tail = (int)frame_len - (int)(data_end - data);
  if (tail < 0 && bpf_xdp_adjust_tail(ctx, tail)) {
    count(KTURN_STAT_ABORTED);
    return XDP_DROP;
  }
  if (bpf_xdp_adjust_head(ctx, r.add_channel ? -CHANNEL_HLEN : CHANNEL_HLEN) ||
      xdpWrite(ctx, &p, &r, macs)) {
    count(KTURN_STAT_ABORTED);
    return XDP_DROP;
  }
  countRelayed(&d);
  if (route == ROUTE_LOCAL) return XDP_PASS;
  if (fib.ifindex == ctx->ingress_ifindex) return XDP_TX;
  return bpf_redirect(fib.ifindex, 0);
}
