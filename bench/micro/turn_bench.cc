// TURN core micro-benchmarks (src/turn): the per-packet relay decision in both directions with
// N allocations in the table, Send indications, and the allocation lifecycle (authenticated
// Allocate + Refresh(0), and expiry through the timer wheel).
#include <benchmark/benchmark.h>

#include "micro_support.h"
#include "stun/channel_data.h"

namespace kturn::bench::micro {
namespace {

// N allocations with a permission and channel each; the benchmark drives allocation `probe`.
struct Populated {
  explicit Populated(size_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      nonce = h.allocateAndBind(clientTuple(i), 0x4000);
    }
  }
  Harness h;
  std::string nonce;
};

void BM_ChannelDataClientToPeer(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  Populated p(n);
  const size_t payload = static_cast<size_t>(state.range(1));
  std::vector<uint8_t> packet(4 + payload, 0xA5);
  stun::writeChannelDataHeader(packet.data(), 0x4000, static_cast<uint16_t>(payload));
  if (p.nonce.empty()) state.SkipWithError("setup failed");
  uint32_t i = 0;
  for (auto _ : state) {
    const FiveTuple tuple = clientTuple(i);
    i = i + 1 == n ? 0 : i + 1;
    p.h.actions.clear();
    p.h.server->onClientPacket(kListener, tuple, packet, p.h.now, p.h.actions);
    benchmark::DoNotOptimize(p.h.actions.to_peers.data());
  }
  if (p.h.server->stats().client_packets_relayed == 0) state.SkipWithError("nothing relayed");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_ChannelDataClientToPeer)
    ->Args({1, 100})
    ->Args({100, 100})
    ->Args({10000, 100})
    ->Args({100, 1200});

void BM_PeerToClientChannelData(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  Populated p(n);
  std::vector<turn::AllocationId> ids;
  for (uint32_t i = 0; i < n; ++i) ids.push_back(p.h.server->findAllocation(clientTuple(i))->id);
  const size_t payload = 100;
  std::vector<uint8_t> buffer(turn::PeerPacket::kHeadroom + payload + turn::PeerPacket::kTailroom);
  size_t i = 0;
  for (auto _ : state) {
    p.h.actions.clear();
    p.h.server->onPeerPacket(ids[i], kPeer, {buffer, turn::PeerPacket::kHeadroom, payload}, p.h.now,
                             p.h.actions);
    i = i + 1 == n ? 0 : i + 1;
    benchmark::DoNotOptimize(p.h.actions.to_clients.data());
  }
  if (p.h.server->stats().peer_packets_relayed == 0) state.SkipWithError("nothing relayed");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_PeerToClientChannelData)->Arg(1)->Arg(100)->Arg(10000);

void BM_PeerToClientDataIndication(benchmark::State& state) {
  Harness h;
  const FiveTuple tuple = clientTuple(0);
  if (h.allocateAndBind(tuple, 0x4000, /*bind=*/false).empty()) state.SkipWithError("setup");
  const auto id = h.server->findAllocation(tuple)->id;
  const size_t payload = 100;
  std::vector<uint8_t> buffer(turn::PeerPacket::kHeadroom + payload + turn::PeerPacket::kTailroom);
  for (auto _ : state) {
    h.actions.clear();
    h.server->onPeerPacket(id, kPeer, {buffer, turn::PeerPacket::kHeadroom, payload}, h.now,
                           h.actions);
    benchmark::DoNotOptimize(h.actions.to_clients.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_PeerToClientDataIndication);

void BM_SendIndication(benchmark::State& state) {
  Harness h;
  const FiveTuple tuple = clientTuple(0);
  if (h.allocateAndBind(tuple, 0x4000, /*bind=*/false).empty()) state.SkipWithError("setup");
  uint8_t buf[256];
  stun::TransactionId txid{};
  std::vector<uint8_t> data(100, 0xA5);
  stun::MessageBuilder b(buf, stun::Method::kSend, stun::MessageClass::kIndication, txid);
  b.addXorAddress(stun::attr::kXorPeerAddress, kPeer).add(stun::attr::kData, data);
  const auto bytes = *b.finish();
  for (auto _ : state) {
    h.actions.clear();
    h.server->onClientPacket(kListener, tuple, bytes, h.now, h.actions);
    benchmark::DoNotOptimize(h.actions.to_peers.data());
  }
  if (h.server->stats().client_packets_relayed == 0) state.SkipWithError("nothing relayed");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_SendIndication);

// One authenticated Allocate followed by Refresh(0) on the same 5-tuple: what a server spends
// per allocation (nonce check, two HMACs, relay open/close, table insert/erase, two responses).
void BM_AllocateRefresh0(benchmark::State& state) {
  Harness h;
  const FiveTuple tuple = clientTuple(7);
  auto alloc = [](stun::MessageBuilder& b) { Harness::allocateBody(b); };
  const std::string nonce =
      Harness::nonceOf(*h.feed(tuple, h.request(stun::Method::kAllocate, "", alloc)));
  const auto release = [](stun::MessageBuilder& b) { b.addUint32(stun::attr::kLifetime, 0); };
  // Distinct transaction IDs per iteration: a repeated Allocate ID would be a retransmission.
  std::vector<std::vector<uint8_t>> allocates, releases;
  for (int i = 0; i < 1024; ++i) {
    allocates.push_back(h.request(stun::Method::kAllocate, nonce, alloc));
    releases.push_back(h.request(stun::Method::kRefresh, nonce, release));
  }
  size_t i = 0;
  for (auto _ : state) {
    auto a = h.feed(tuple, allocates[i]);
    auto r = h.feed(tuple, releases[i]);
    i = (i + 1) & 1023;
    benchmark::DoNotOptimize(a);
    benchmark::DoNotOptimize(r);
  }
  if (h.server->stats().allocations_created == 0) state.SkipWithError("no allocation created");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_AllocateRefresh0);

// Expiry: N allocations (with permission and channel) reach the end of their lifetime and
// onTick() removes them. Reported per allocation.
void BM_AllocationExpire(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  size_t removed = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto p = std::make_unique<Populated>(n);
    p->h.now.mono += std::chrono::seconds(3700);
    p->h.now.unix_seconds += 3700;
    state.ResumeTiming();
    p->h.server->onTick(p->h.now);
    state.PauseTiming();
    removed += n - p->h.server->allocationCount();
    p.reset();
    state.ResumeTiming();
  }
  if (removed == 0) state.SkipWithError("nothing expired");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}
BENCHMARK(BM_AllocationExpire)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kturn::bench::micro
