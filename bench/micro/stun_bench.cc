// Codec micro-benchmarks: parsing, building, MESSAGE-INTEGRITY and FINGERPRINT (src/stun).
#include <benchmark/benchmark.h>

#include "micro_support.h"
#include "stun/channel_data.h"
#include "turn/authenticator.h"

namespace kturn::bench::micro {
namespace {

std::vector<uint8_t> authenticatedAllocate() {
  Harness h;
  return h.request(stun::Method::kAllocate, "0123456789abcdef0123456789abcdef",
                   [](stun::MessageBuilder& b) { Harness::allocateBody(b); });
}

std::vector<uint8_t> dataIndication(size_t payload) {
  uint8_t buf[2048];
  stun::TransactionId txid{};
  std::vector<uint8_t> data(payload, 0xA5);
  stun::MessageBuilder b(buf, stun::Method::kData, stun::MessageClass::kIndication, txid);
  b.addXorAddress(stun::attr::kXorPeerAddress, kPeer).add(stun::attr::kData, data);
  auto out = *b.finish();
  return {out.begin(), out.end()};
}

void BM_ParseAuthenticatedAllocate(benchmark::State& state) {
  const auto bytes = authenticatedAllocate();
  for (auto _ : state) {
    auto m = stun::MessageView::parse(bytes);
    benchmark::DoNotOptimize(m);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_ParseAuthenticatedAllocate);

void BM_ParseDataIndication(benchmark::State& state) {
  const auto bytes = dataIndication(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    auto m = stun::MessageView::parse(bytes);
    benchmark::DoNotOptimize(m->value(stun::attr::kData));
  }
}
BENCHMARK(BM_ParseDataIndication)->Arg(100)->Arg(1200);

void BM_ParseChannelData(benchmark::State& state) {
  std::vector<uint8_t> bytes(4 + 100, 0xA5);
  stun::writeChannelDataHeader(bytes.data(), 0x4000, 100);
  for (auto _ : state) {
    auto cd = stun::parseChannelData(bytes);
    benchmark::DoNotOptimize(cd);
  }
}
BENCHMARK(BM_ParseChannelData);

void BM_BuildAuthenticatedRequest(benchmark::State& state) {
  const auto key = stun::longTermKey("user1", "kturn.bench", "pass1");
  uint8_t buf[512];
  stun::TransactionId txid{};
  for (auto _ : state) {
    stun::MessageBuilder b(buf, stun::Method::kAllocate, stun::MessageClass::kRequest, txid);
    const uint8_t udp[] = {17, 0, 0, 0};
    b.add(stun::attr::kRequestedTransport, udp)
        .addString(stun::attr::kUsername, "user1")
        .addString(stun::attr::kRealm, "kturn.bench")
        .addString(stun::attr::kNonce, "0123456789abcdef0123456789abcdef")
        .addMessageIntegrity(key.span())
        .addFingerprint();
    benchmark::DoNotOptimize(b.finish());
  }
}
BENCHMARK(BM_BuildAuthenticatedRequest);

void BM_BuildSuccessResponse(benchmark::State& state) {
  const auto key = stun::longTermKey("user1", "kturn.bench", "pass1");
  uint8_t buf[512];
  stun::TransactionId txid{};
  for (auto _ : state) {
    stun::MessageBuilder b(buf, stun::Method::kAllocate, stun::MessageClass::kSuccessResponse,
                           txid);
    b.addXorAddress(stun::attr::kXorRelayedAddress, kPeer)
        .addUint32(stun::attr::kLifetime, 600)
        .addXorAddress(stun::attr::kXorMappedAddress, kServerAddress)
        .addString(stun::attr::kSoftware, "kturn")
        .addMessageIntegrity(key.span())
        .addFingerprint();
    benchmark::DoNotOptimize(b.finish());
  }
}
BENCHMARK(BM_BuildSuccessResponse);

void BM_CheckMessageIntegrity(benchmark::State& state) {
  const auto bytes = authenticatedAllocate();
  const auto key = stun::longTermKey("user1", "kturn.bench", "pass1");
  const auto m = *stun::MessageView::parse(bytes);
  for (auto _ : state) {
    benchmark::DoNotOptimize(stun::checkMessageIntegrity(m, key.span()));
  }
}
BENCHMARK(BM_CheckMessageIntegrity);

void BM_CheckFingerprint(benchmark::State& state) {
  const auto bytes = authenticatedAllocate();
  const auto m = *stun::MessageView::parse(bytes);
  for (auto _ : state) benchmark::DoNotOptimize(stun::checkFingerprint(m));
}
BENCHMARK(BM_CheckFingerprint);

void BM_LongTermKeyMd5(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(stun::longTermKey("user1", "kturn.bench", "pass1"));
  }
}
BENCHMARK(BM_LongTermKeyMd5);

void BM_RestPassword(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(turn::restPassword("kturn-bench-secret", "1800000000:bench42"));
  }
}
BENCHMARK(BM_RestPassword);

}  // namespace
}  // namespace kturn::bench::micro
