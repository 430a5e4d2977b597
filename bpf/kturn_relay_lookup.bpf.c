/* kturnd's relay port lookup (kturn_relay_lookup.h): a BPF_PROG_TYPE_SK_LOOKUP program that gives
 * a UDP datagram addressed to one of kturnd's relayed transport addresses to the socket of the
 * worker that holds the allocation. It runs before the kernel's own socket lookup, for every
 * datagram and connection that arrives in the namespace: a hash lookup, and for anything else
 * SK_PASS with no socket chosen, so that the usual lookup goes on as if the program were not
 * there. A relayed address whose socket is gone (kturnd stopping) is left to the usual lookup,
 * which finds nothing: the peer gets the ICMP port unreachable it would get anyway. */
#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "kturn_relay_lookup.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define AF_INET_ 2
#define AF_INET6_ 10

/* Entries allocated as relayed addresses are added (not all up front): kernel memory grows with
 * the allocations held, not with the map's size. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, KTURN_RELAY_LOOKUP_DEFAULT_PORTS);
  __type(key, struct kturn_relay_key);
  __type(value, struct kturn_relay_value);
} kturn_relay_ports SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_SOCKMAP);
  __uint(max_entries, KTURN_RELAY_LOOKUP_MAX_SOCKETS);
  __type(key, __u32);
  __type(value, __u64);
} kturn_relay_sockets SEC(".maps");

SEC("sk_lookup")
int kturn_relay_lookup(struct bpf_sk_lookup* ctx) {
  if (ctx->protocol != IPPROTO_UDP) return SK_PASS;
  struct kturn_relay_key key = {};
  if (ctx->family == AF_INET_) {
    key.addr[10] = 0xff;
    key.addr[11] = 0xff;
    __u32 ip4 = ctx->local_ip4;
    __builtin_memcpy(key.addr + 12, &ip4, 4);
  } else if (ctx->family == AF_INET6_) {
    __u32 ip6[4] = {ctx->local_ip6[0], ctx->local_ip6[1], ctx->local_ip6[2], ctx->local_ip6[3]};
    __builtin_memcpy(key.addr, ip6, 16);
  } else {
    return SK_PASS;
  }
  key.port = bpf_htons((__u16)ctx->local_port); /* local_port is in host order */
  struct kturn_relay_value* v = bpf_map_lookup_elem(&kturn_relay_ports, &key);
  if (!v) return SK_PASS;
  __u32 index = v->socket;
  struct bpf_sock* sk = bpf_map_lookup_elem(&kturn_relay_sockets, &index);
  if (!sk) return SK_PASS;
  bpf_sk_assign(ctx, sk, 0); /* on failure (a socket of the other family) nothing is chosen */
  bpf_sk_release(sk);
  return SK_PASS;
}
