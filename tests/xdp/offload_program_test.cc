// The eBPF fast path run by the kernel itself (BPF_PROG_TEST_RUN) on frames built from scratch:
// a table of (input frame, expected output frame, verdict) for both directions, IPv4 and IPv6,
// TC and XDP, and every case the program must leave to kturnd unchanged. Runs in a network
// namespace of its own (test_netns.h), so bpf_fib_lookup() routes over the test's veth pairs.
#include "xdp/offload_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#include <chrono>
#include <ctime>
#include <memory>
#include <string>

#include "test_netns.h"
#include "test_packets.h"
#include "xdp/kernel_maps.h"

namespace kturn::xdp {
namespace {

using testing::Bytes;
using testing::Endpoint;
using testing::TestNetns;

// The test's world (test_netns.h): a client behind kc, a peer behind kp.
const Endpoint kClient{"10.0.1.2", 40000};
const Endpoint kListener{"10.0.1.1", 3478};
const Endpoint kRelay{"10.0.2.1", 50000};
const Endpoint kPeer{"10.0.2.2", 60000};
const Endpoint kClient6{"fd00:1::2", 40000};
const Endpoint kListener6{"fd00:1::1", 3478};
const Endpoint kRelay6{"fd00:2::1", 50000};
const Endpoint kPeer6{"fd00:2::2", 60000};
constexpr uint16_t kChannel = 0x4001;
constexpr uint32_t kChannelSlot = 7;
constexpr uint32_t kPeerSlot = 8;

uint64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}
const uint64_t kMinute = 60'000'000'000ull;

std::string& setupError() {
  static std::string error;
  return error;
}

// The client -> peer entry of a channel (counter slot 0).
std::pair<kturn_channel_key, kturn_channel_value> channelEntry(
    const Endpoint& client, const Endpoint& server, uint16_t channel, const Endpoint& relay,
    const Endpoint& peer, uint64_t expires_ns) {
  kturn_channel_key ck{};
  auto c = client.mapped(), s = server.mapped(), r = relay.mapped(), p = peer.mapped();
  std::memcpy(ck.client_addr, c.data(), 16);
  std::memcpy(ck.server_addr, s.data(), 16);
  ck.client_port = htons(client.port);
  ck.server_port = htons(server.port);
  ck.channel = htons(channel);
  kturn_channel_value cv{};
  std::memcpy(cv.relay_addr, r.data(), 16);
  std::memcpy(cv.peer_addr, p.data(), 16);
  cv.relay_port = htons(relay.port);
  cv.peer_port = htons(peer.port);
  cv.expires_ns = expires_ns;
  return {ck, cv};
}

struct RunResult {
  uint32_t verdict = ~0u;
  Bytes out;
};

class OffloadProgramTest : public ::testing::TestWithParam<Engine> {
 protected:
  static void SetUpTestSuite() {
    setupError() = TestNetns::setUp();
    if (!setupError().empty()) return;
    auto loaded = OffloadProgram::load({.max_channels = 64});
    if (!loaded) {
      setupError() = loaded.error().message;
      return;
    }
    program_ = std::move(*loaded).release();
  }
  static void TearDownTestSuite() {
    delete program_;
    program_ = nullptr;
  }

  void SetUp() override {
    if (!setupError().empty()) GTEST_SKIP() << "eBPF tests need root and BPF: " << setupError();
    maps_ = std::make_unique<KernelMaps>(*program_);
    // Each test starts with empty maps; counters and stats are compared with where they were.
    channel_before_ = maps_->readCounter(kChannelSlot);
    peer_before_ = maps_->readCounter(kPeerSlot);
    before_ = program_->stats();
  }
  void TearDown() override {
    if (!maps_) return;
    for (auto& [key, unused] : channels_) maps_->eraseChannel(key);
    for (auto& [key, unused] : peers_) maps_->erasePeer(key);
  }

  bool tc() const { return GetParam() == Engine::kTc; }

  void bindChannel(const Endpoint& client, const Endpoint& server, uint16_t channel,
                   const Endpoint& relay, const Endpoint& peer, uint64_t expires_ns) {
    auto [ck, cv] = channelEntry(client, server, channel, relay, peer, expires_ns);
    cv.counter = kChannelSlot;
    ASSERT_TRUE(maps_->putChannel(ck, cv));
    channels_.emplace_back(ck, cv);

    kturn_peer_key pk{};
    auto c = client.mapped(), s = server.mapped(), r = relay.mapped(), p = peer.mapped();
    std::memcpy(pk.peer_addr, p.data(), 16);
    std::memcpy(pk.relay_addr, r.data(), 16);
    pk.peer_port = htons(peer.port);
    pk.relay_port = htons(relay.port);
    kturn_peer_value pv{};
    std::memcpy(pv.client_addr, c.data(), 16);
    std::memcpy(pv.server_addr, s.data(), 16);
    pv.client_port = htons(client.port);
    pv.server_port = htons(server.port);
    pv.channel = htons(channel);
    pv.counter = kPeerSlot;
    pv.expires_ns = expires_ns;
    ASSERT_TRUE(maps_->putPeer(pk, pv));
    peers_.emplace_back(pk, pv);
  }
  void bindV4(uint64_t expires_ns = monotonicNs() + kMinute) {
    bindChannel(kClient, kListener, kChannel, kRelay, kPeer, expires_ns);
  }
  void bindV6() {
    bindChannel(kClient6, kListener6, kChannel, kRelay6, kPeer6, monotonicNs() + kMinute);
  }

  RunResult run(const Bytes& frame, const char* ifname) {
    return run(frame, ifname, tc() ? program_->tcProgramFd() : program_->xdpProgramFd());
  }
  RunResult run(const Bytes& frame, const char* ifname, int fd, uint32_t gso_segs = 0) {
    RunResult r;
    r.out.resize(frame.size() + 256);
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(), .data_out = r.out.data(),
                .data_size_in = static_cast<uint32_t>(frame.size()),
                .data_size_out = static_cast<uint32_t>(r.out.size()));
    __sk_buff skb{};
    xdp_md xdp{};
    if (tc()) {
      skb.ifindex = static_cast<uint32_t>(TestNetns::ifindex(ifname));
      skb.gso_segs = gso_segs;
      if (gso_segs > 1) skb.gso_size = static_cast<uint32_t>(frame.size() / gso_segs);
      opts.ctx_in = &skb;
      opts.ctx_size_in = sizeof(skb);
    } else {
      xdp.ingress_ifindex = static_cast<uint32_t>(TestNetns::ifindex(ifname));
      xdp.data_end = static_cast<uint32_t>(frame.size());
      opts.ctx_in = &xdp;
      opts.ctx_size_in = sizeof(xdp);
    }
    int err = bpf_prog_test_run_opts(fd, &opts);
    EXPECT_EQ(err, 0) << "BPF_PROG_TEST_RUN: " << std::strerror(-err);
    r.verdict = opts.retval;
    r.out.resize(opts.data_size_out);
    return r;
  }

  uint32_t redirected() const { return tc() ? TC_ACT_REDIRECT : XDP_REDIRECT; }
  uint32_t passed() const { return tc() ? TC_ACT_OK : XDP_PASS; }

  // How much a counter slot grew since the test started.
  kturn_counter grown(uint32_t slot) const {
    kturn_counter now = maps_->readCounter(slot);
    const kturn_counter& then = slot == kChannelSlot ? channel_before_ : peer_before_;
    return {now.packets - then.packets, now.bytes - then.bytes};
  }
  // How much a stat grew since the test started.
  uint64_t statDelta(kturn_offload_stat s) const { return program_->stats()[s] - before_[s]; }

  // The frame a client sends to the listener (arrives on kc) and the one the peer receives
  // (leaves through kp), and the way back.
  static Bytes fromClient(const Endpoint& client, const Endpoint& listener, const Bytes& payload,
                          const testing::FrameOptions& o = {.ttl = 63}) {
    return testing::udpFrame(TestNetns::kKcMac, TestNetns::kKcPeerMac, client, listener, payload,
                             o);
  }
  static Bytes toPeer(const Endpoint& relay, const Endpoint& peer, const Bytes& payload,
                      const testing::FrameOptions& o = {}) {
    return testing::udpFrame(TestNetns::kKpPeerMac, TestNetns::kKpMac, relay, peer, payload, o);
  }
  static Bytes fromPeer(const Endpoint& peer, const Endpoint& relay, const Bytes& payload,
                        const testing::FrameOptions& o = {.ttl = 63}) {
    return testing::udpFrame(TestNetns::kKpMac, TestNetns::kKpPeerMac, peer, relay, payload, o);
  }
  static Bytes toClient(const Endpoint& listener, const Endpoint& client, const Bytes& payload,
                        const testing::FrameOptions& o = {}) {
    return testing::udpFrame(TestNetns::kKcPeerMac, TestNetns::kKcMac, listener, client, payload,
                             o);
  }

  void expectLeftAlone(const Bytes& frame, const char* ifname) {
    RunResult r = run(frame, ifname);
    EXPECT_EQ(r.verdict, passed());
    EXPECT_EQ(r.out, frame);
  }

  static OffloadProgram* program_;
  std::unique_ptr<KernelMaps> maps_;
  std::vector<uint64_t> before_;
  kturn_counter channel_before_{}, peer_before_{};
  std::vector<std::pair<kturn_channel_key, kturn_channel_value>> channels_;
  std::vector<std::pair<kturn_peer_key, kturn_peer_value>> peers_;
};

OffloadProgram* OffloadProgramTest::program_ = nullptr;

// ---- relayed --------------------------------------------------------------------------------

TEST_P(OffloadProgramTest, ChannelDataFromTheClientGoesToThePeerWithoutItsHeader) {
  bindV4();
  for (size_t size : {0u, 1u, 100u, 101u, 1200u, 1401u}) {
    SCOPED_TRACE(size);
    Bytes payload = testing::data(size);
    RunResult r =
        run(fromClient(kClient, kListener, testing::channelData(kChannel, payload)), "kc");
    EXPECT_EQ(r.verdict, redirected());
    EXPECT_EQ(r.out, toPeer(kRelay, kPeer, payload));
  }
  kturn_counter c = grown(kChannelSlot);
  EXPECT_EQ(c.packets, 6u);
  EXPECT_EQ(c.bytes, 0u + 1 + 100 + 101 + 1200 + 1401);
  EXPECT_EQ(statDelta(KTURN_STAT_TO_PEER), 6u);
}

TEST_P(OffloadProgramTest, APeerDatagramGoesToTheClientAsChannelData) {
  bindV4();
  for (size_t size : {0u, 1u, 100u, 101u, 1200u, 1401u}) {
    SCOPED_TRACE(size);
    Bytes payload = testing::data(size, 0x33);
    RunResult r = run(fromPeer(kPeer, kRelay, payload), "kp");
    EXPECT_EQ(r.verdict, redirected());
    EXPECT_EQ(r.out, toClient(kListener, kClient, testing::channelData(kChannel, payload)));
  }
  kturn_counter c = grown(kPeerSlot);
  EXPECT_EQ(c.packets, 6u);
  EXPECT_EQ(c.bytes, 0u + 1 + 100 + 101 + 1200 + 1401);
  EXPECT_EQ(statDelta(KTURN_STAT_TO_CLIENT), 6u);
}

// RFC 5766 numbered channels 0x4000-0x7FFF; RFC 8656 narrowed that to 0x4000-0x4FFF, but kturnd
// binds the old range too (coturn's turnutils_uclient picks channels such as 0x7da6), so the
// kernel relays those channels both ways as well.
TEST_P(OffloadProgramTest, ChannelsOfRfc5766sWholeRangeAreRelayedBothWays) {
  for (uint16_t channel :
       {uint16_t{0x4FFF}, uint16_t{0x5000}, uint16_t{0x7da6}, uint16_t{0x7FFF}}) {
    SCOPED_TRACE(channel);
    bindChannel(kClient, kListener, channel, kRelay, kPeer, monotonicNs() + kMinute);
    Bytes payload = testing::data(200);
    RunResult out =
        run(fromClient(kClient, kListener, testing::channelData(channel, payload)), "kc");
    EXPECT_EQ(out.verdict, redirected());
    EXPECT_EQ(out.out, toPeer(kRelay, kPeer, payload));
    RunResult back = run(fromPeer(kPeer, kRelay, payload), "kp");
    EXPECT_EQ(back.verdict, redirected());
    EXPECT_EQ(back.out, toClient(kListener, kClient, testing::channelData(channel, payload)));
    TearDown();
    channels_.clear();
    peers_.clear();
  }
  EXPECT_EQ(statDelta(KTURN_STAT_TO_PEER), 4u);
  EXPECT_EQ(statDelta(KTURN_STAT_TO_CLIENT), 4u);
  EXPECT_EQ(statDelta(KTURN_STAT_PASS_NO_ENTRY), 0u);
}

TEST_P(OffloadProgramTest, APeerPayloadThatStartsLikeChannelDataIsStillRelayed) {
  bindV4();
  Bytes payload = testing::data(50);
  payload[0] = 0x41;  // a channel number's first byte: no channel entry, but a peer entry
  RunResult r = run(fromPeer(kPeer, kRelay, payload), "kp");
  EXPECT_EQ(r.verdict, redirected());
  EXPECT_EQ(r.out, toClient(kListener, kClient, testing::channelData(kChannel, payload)));
  EXPECT_EQ(statDelta(KTURN_STAT_TO_CLIENT), 1u);
  EXPECT_EQ(statDelta(KTURN_STAT_PASS_NO_ENTRY), 0u);
}

TEST_P(OffloadProgramTest, IPv6BothWays) {
  bindV6();
  for (size_t size : {0u, 101u, 1200u}) {
    SCOPED_TRACE(size);
    Bytes payload = testing::data(size);
    RunResult r =
        run(fromClient(kClient6, kListener6, testing::channelData(kChannel, payload)), "kc");
    EXPECT_EQ(r.verdict, redirected());
    EXPECT_EQ(r.out, toPeer(kRelay6, kPeer6, payload));
    r = run(fromPeer(kPeer6, kRelay6, payload), "kp");
    EXPECT_EQ(r.verdict, redirected());
    EXPECT_EQ(r.out, toClient(kListener6, kClient6, testing::channelData(kChannel, payload)));
  }
}

TEST_P(OffloadProgramTest, TheTosAndIdentificationCarryOverAndTheTtlIsTheRelays) {
  bindV4();
  Bytes payload = testing::data(64);
  testing::FrameOptions in{.ttl = 5, .tos = 0xb8, .ip_id = 0xbeef, .dont_fragment = false};
  testing::FrameOptions out{.ttl = 64, .tos = 0xb8, .ip_id = 0xbeef, .dont_fragment = false};
  RunResult r =
      run(fromClient(kClient, kListener, testing::channelData(kChannel, payload), in), "kc");
  EXPECT_EQ(r.verdict, redirected());
  EXPECT_EQ(r.out, toPeer(kRelay, kPeer, payload, out));
}

TEST_P(OffloadProgramTest, AnIPv4DatagramWithoutChecksumStaysWithout) {
  bindV4();
  Bytes payload = testing::data(99);
  RunResult r = run(fromPeer(kPeer, kRelay, payload, {.ttl = 63, .zero_udp_checksum = true}), "kp");
  EXPECT_EQ(r.verdict, redirected());
  EXPECT_EQ(r.out, toClient(kListener, kClient, testing::channelData(kChannel, payload),
                            {.zero_udp_checksum = true}));
}

// ---- the drop list (admin.limits.block_seconds) ------------------------------------------------

kturn_block_key blockKey(const Endpoint& source, uint16_t port) {
  kturn_block_key k{};
  const auto a = source.mapped();
  std::memcpy(k.addr, a.data(), 16);
  k.port = htons(port);
  return k;
}

// The entry's dropped count, read back from the kernel's map.
uint64_t droppedFor(const OffloadProgram& program, const kturn_block_key& key) {
  kturn_block_value v{};
  if (bpf_map_lookup_elem(program.blockedMapFd(), &key, &v) != 0) return UINT64_MAX;
  return v.dropped;
}

TEST_P(OffloadProgramTest, ABlockedSourceIsDroppedOnItsPortOnly) {
  bindV4();
  const kturn_block_key key = blockKey(kClient, kListener.port);
  ASSERT_TRUE(maps_->putBlock(key, {.expires_ns = monotonicNs() + kMinute, .dropped = 0}));
  const uint32_t dropped = tc() ? TC_ACT_SHOT : XDP_DROP;
  // Requests and ChannelData alike, even of a bound channel: nothing of it reaches kturnd.
  Bytes binding = {0x00, 0x03, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42, 1,  2,
                   3,    4,    5,    6,    7,    8,    9,    10,   11, 12};
  EXPECT_EQ(run(fromClient(kClient, kListener, binding), "kc").verdict, dropped);
  EXPECT_EQ(run(fromClient(Endpoint{kClient.ip, 40001}, kListener,
                           testing::channelData(kChannel, testing::data(10))),
                "kc")
                .verdict,
            dropped);
  EXPECT_EQ(statDelta(KTURN_STAT_DROP_BLOCKED), 2u);
  EXPECT_EQ(droppedFor(*program_, key), 2u);
  // Another source, and the blocked source to another port, are untouched.
  expectLeftAlone(fromClient(Endpoint{kPeer.ip, 40000}, kListener, binding), "kc");
  expectLeftAlone(fromClient(kClient, Endpoint{kListener.ip, 3479}, binding), "kc");
  EXPECT_EQ(statDelta(KTURN_STAT_DROP_BLOCKED), 2u);
  ASSERT_EQ(bpf_map_delete_elem(program_->blockedMapFd(), &key), 0);
  // Unblocked: the bound channel is relayed again.
  EXPECT_EQ(
      run(fromClient(kClient, kListener, testing::channelData(kChannel, testing::data(10))), "kc")
          .verdict,
      redirected());
}

TEST_P(OffloadProgramTest, AnExpiredBlockLetsTheSourceThrough) {
  bindV4();
  const kturn_block_key key = blockKey(kClient, kListener.port);
  ASSERT_TRUE(maps_->putBlock(key, {.expires_ns = monotonicNs() - 1, .dropped = 0}));
  EXPECT_EQ(
      run(fromClient(kClient, kListener, testing::channelData(kChannel, testing::data(10))), "kc")
          .verdict,
      redirected());
  EXPECT_EQ(statDelta(KTURN_STAT_DROP_BLOCKED), 0u);
  EXPECT_TRUE(program_->blockedSources(monotonicNs()).empty());
  ASSERT_EQ(bpf_map_delete_elem(program_->blockedMapFd(), &key), 0);
}

TEST_P(OffloadProgramTest, BlockedSourcesListsTheLiveEntriesWithTheirCounts) {
  const kturn_block_key v4 = blockKey(kClient, 3478);
  const kturn_block_key v6 = blockKey(kClient6, 3478);
  ASSERT_TRUE(maps_->putBlock(v4, {.expires_ns = monotonicNs() + kMinute, .dropped = 7}));
  ASSERT_TRUE(maps_->putBlock(v6, {.expires_ns = monotonicNs() + kMinute, .dropped = 0}));
  const auto listed = program_->blockedSources(monotonicNs());
  EXPECT_EQ(listed.size(), 2u);
  for (const auto& b : listed) {
    const bool is_v4 = std::memcmp(&b.key, &v4, sizeof(v4)) == 0;
    EXPECT_TRUE(is_v4 || std::memcmp(&b.key, &v6, sizeof(v6)) == 0);
    EXPECT_EQ(b.value.dropped, is_v4 ? 7u : 0u);
  }
  bpf_map_delete_elem(program_->blockedMapFd(), &v4);
  bpf_map_delete_elem(program_->blockedMapFd(), &v6);
}

// ---- left to kturnd -------------------------------------------------------------------------

TEST_P(OffloadProgramTest, StunMessagesAndForeignDatagramsAreLeftAloneAndNotCounted) {
  bindV4();
  Bytes binding = {0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42, 1,  2,
                   3,    4,    5,    6,    7,    8,    9,    10,   11, 12};
  expectLeftAlone(fromClient(kClient, kListener, binding), "kc");
  // From the peer's address but another port: a Data indication, kturnd's job.
  expectLeftAlone(fromPeer(Endpoint{kPeer.ip, 60001}, kRelay, testing::data(40)), "kp");
  for (auto s : {KTURN_STAT_TO_PEER, KTURN_STAT_TO_CLIENT, KTURN_STAT_PASS_NO_ENTRY})
    EXPECT_EQ(statDelta(s), 0u);
}

TEST_P(OffloadProgramTest, AnUnboundChannelIsLeftAlone) {
  bindV4();
  expectLeftAlone(fromClient(kClient, kListener, testing::channelData(0x4002, testing::data(10))),
                  "kc");
  // The bound channel number from another client port.
  expectLeftAlone(fromClient(Endpoint{kClient.ip, 40001}, kListener,
                             testing::channelData(kChannel, testing::data(10))),
                  "kc");
  EXPECT_EQ(statDelta(KTURN_STAT_PASS_NO_ENTRY), 2u);
  EXPECT_EQ(grown(kChannelSlot).packets, 0u);
}

TEST_P(OffloadProgramTest, PaddedOrTruncatedChannelDataIsLeftAlone) {
  bindV4();
  expectLeftAlone(
      fromClient(kClient, kListener, testing::channelData(kChannel, testing::data(10), 2)), "kc");
  Bytes truncated = testing::channelData(kChannel, testing::data(10));
  truncated.resize(truncated.size() - 3);
  expectLeftAlone(fromClient(kClient, kListener, truncated), "kc");
  EXPECT_EQ(statDelta(KTURN_STAT_PASS_LENGTH), 2u);
}

TEST_P(OffloadProgramTest, AnExpiredEntryIsLeftToKturnd) {
  bindV4(monotonicNs() - 1);
  expectLeftAlone(fromClient(kClient, kListener, testing::channelData(kChannel, testing::data(10))),
                  "kc");
  expectLeftAlone(fromPeer(kPeer, kRelay, testing::data(10)), "kp");
  EXPECT_EQ(statDelta(KTURN_STAT_PASS_EXPIRED), 2u);
  EXPECT_EQ(grown(kChannelSlot).packets, 0u);
  EXPECT_EQ(grown(kPeerSlot).packets, 0u);
}

TEST_P(OffloadProgramTest, IpOptionsAndFragmentsAreLeftAlone) {
  bindV4();
  Bytes frame = fromClient(kClient, kListener, testing::channelData(kChannel, testing::data(10)));
  Bytes fragment = frame;
  fragment[14 + 6] |= 0x20;  // more fragments
  expectLeftAlone(fragment, "kc");
  Bytes options = frame;  // IHL 6: one word of options (NOPs) before the UDP header
  options.insert(options.begin() + 34, {1, 1, 1, 1});
  options[14] = 0x46;
  testing::put16(options, 16, static_cast<uint16_t>(options.size() - 14));
  expectLeftAlone(options, "kc");
  EXPECT_EQ(statDelta(KTURN_STAT_PASS_IP), 2u);
}

TEST_P(OffloadProgramTest, AnIPv6ExtensionHeaderIsLeftAlone) {
  bindV6();
  Bytes frame = fromClient(kClient6, kListener6, testing::channelData(kChannel, testing::data(10)));
  // A Destination Options header (8 bytes of PadN) between the IPv6 and UDP headers.
  frame.insert(frame.begin() + 54, {17, 0, 1, 4, 0, 0, 0, 0});
  frame[14 + 6] = 60;
  testing::put16(frame, 14 + 4, static_cast<uint16_t>(frame.size() - 54));
  expectLeftAlone(frame, "kc");
  EXPECT_EQ(statDelta(KTURN_STAT_PASS_IP), 1u);
}

TEST_P(OffloadProgramTest, APeerWithoutRouteIsLeftToKturnd) {
  bindChannel(kClient, kListener, kChannel, kRelay, Endpoint{"198.51.100.7", 60000},
              monotonicNs() + kMinute);
  expectLeftAlone(fromClient(kClient, kListener, testing::channelData(kChannel, testing::data(10))),
                  "kc");
  EXPECT_EQ(statDelta(KTURN_STAT_PASS_ROUTE), 1u);
}

TEST_P(OffloadProgramTest, AnAllocationOfTheOtherFamilyIsLeftToKturnd) {
  // An IPv4 client with an IPv6 relay (RFC 8656 §7.1): the IP header changes size.
  bindChannel(kClient, kListener, kChannel, kRelay6, kPeer6, monotonicNs() + kMinute);
  expectLeftAlone(fromClient(kClient, kListener, testing::channelData(kChannel, testing::data(10))),
                  "kc");
  EXPECT_EQ(statDelta(KTURN_STAT_PASS_ROUTE), 1u);
}

TEST_P(OffloadProgramTest, ALocalPeerOnLoopbackGetsTheDatagramUpTheStack) {
  const Endpoint client{"127.0.0.1", 40000}, listener{"127.0.0.1", 3478};
  const Endpoint relay{"127.0.0.1", 50000}, peer{"127.0.0.1", 60000};
  bindChannel(client, listener, kChannel, relay, peer, monotonicNs() + kMinute);
  const testing::Mac zero{};
  Bytes payload = testing::data(33);
  RunResult r =
      run(testing::udpFrame(zero, zero, client, listener, testing::channelData(kChannel, payload)),
          "lo");
  EXPECT_EQ(r.verdict, passed());  // up the stack, rewritten
  EXPECT_EQ(r.out, testing::udpFrame(zero, zero, relay, peer, payload));
  EXPECT_EQ(statDelta(KTURN_STAT_TO_PEER), 1u);
}

// ---- attaching -----------------------------------------------------------------------------

bool tcAttached(int ifindex) {
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
  LIBBPF_OPTS(bpf_tc_opts, opts, .handle = 0x6b74, .priority = 1);
  return bpf_tc_query(&hook, &opts) == 0;
}

uint32_t xdpProgramId(int ifindex) {
  uint32_t id = 0;
  bpf_xdp_query_id(ifindex, 0, &id);
  return id;
}

class OffloadAttachTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { error_ = TestNetns::setUp(); }
  void SetUp() override {
    if (!error_.empty()) GTEST_SKIP() << "eBPF tests need root and BPF: " << error_;
    auto loaded = OffloadProgram::load({.max_channels = 16});
    ASSERT_TRUE(loaded) << loaded.error().message;
    program_ = std::move(*loaded);
  }
  static std::string error_;
  std::unique_ptr<OffloadProgram> program_;
};
std::string OffloadAttachTest::error_;

TEST_F(OffloadAttachTest, TcAttachesToIngressAndDetachesWithoutATrace) {
  int kc = TestNetns::ifindex("kc");
  auto engine = program_->attach(kc, Engine::kTc);
  ASSERT_TRUE(engine) << engine.error().message;
  EXPECT_EQ(*engine, Engine::kTc);
  EXPECT_TRUE(tcAttached(kc));
  program_->detach(kc);
  EXPECT_FALSE(tcAttached(kc));
  EXPECT_TRUE(program_->attachments().empty());
}

TEST_F(OffloadAttachTest, XdpAttachesInDriverModeWhereTheDriverHasIt) {
  int kc = TestNetns::ifindex("kc");  // veth runs XDP in its driver
  auto engine = program_->attach(kc, Engine::kXdp);
  ASSERT_TRUE(engine) << engine.error().message;
  EXPECT_NE(xdpProgramId(kc), 0u);
  program_->detach(kc);
  EXPECT_EQ(xdpProgramId(kc), 0u);
}

TEST_F(OffloadAttachTest, AutoTakesTcOnVirtualInterfaces) {
  // veth has XDP in its driver, but its local senders' packets may carry a checksum still to be
  // completed, which XDP frames lose: Auto keeps XDP for NICs.
  int kp = TestNetns::ifindex("kp");
  auto on_veth = program_->attach(kp, Engine::kAuto);
  ASSERT_TRUE(on_veth) << on_veth.error().message;
  EXPECT_EQ(*on_veth, Engine::kTc);
  EXPECT_EQ(xdpProgramId(kp), 0u);
  auto on_lo = program_->attach(1, Engine::kAuto);
  ASSERT_TRUE(on_lo) << on_lo.error().message;
  EXPECT_EQ(*on_lo, Engine::kTc);
  EXPECT_TRUE(tcAttached(1));
  EXPECT_EQ(program_->attachments().size(), 2u);
}

TEST_F(OffloadAttachTest, DestroyingTheProgramDetachesEverything) {
  int kc = TestNetns::ifindex("kc"), kp = TestNetns::ifindex("kp");
  ASSERT_TRUE(program_->attach(kc, Engine::kTc));
  ASSERT_TRUE(program_->attach(kp, Engine::kXdp));
  program_.reset();
  EXPECT_FALSE(tcAttached(kc));
  EXPECT_EQ(xdpProgramId(kp), 0u);
}

TEST(OffloadEngineTest, ParsesStunnersNames) {
  EXPECT_EQ(*parseEngine("None"), Engine::kNone);
  EXPECT_EQ(*parseEngine(""), Engine::kNone);
  EXPECT_EQ(*parseEngine("tc"), Engine::kTc);
  EXPECT_EQ(*parseEngine("XDP"), Engine::kXdp);
  EXPECT_EQ(*parseEngine("auto"), Engine::kAuto);
  auto bad = parseEngine("ebpf");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("None, TC, XDP or Auto"), std::string::npos);
}

TEST_P(OffloadProgramTest, APayloadOverTheLimitIsLeftToKturnd) {
  auto small = OffloadProgram::load({.max_channels = 4, .max_payload = 1000});
  ASSERT_TRUE(small) << small.error().message;
  KernelMaps maps(**small);
  const Endpoint client{kClient.ip, 41000};
  auto [ck, cv] = channelEntry(client, kListener, kChannel, kRelay, kPeer, monotonicNs() + kMinute);
  ASSERT_TRUE(maps.putChannel(ck, cv));
  for (size_t size : {996u, 997u}) {  // a UDP payload of 1000 bytes relays, 1001 does not
    Bytes frame =
        fromClient(client, kListener, testing::channelData(kChannel, testing::data(size)));
    RunResult out = run(frame, "kc", tc() ? (*small)->tcProgramFd() : (*small)->xdpProgramFd());
    if (size == 996) {
      EXPECT_EQ(out.verdict, redirected());
    } else {
      EXPECT_EQ(out.verdict, passed());
      EXPECT_EQ(out.out, frame);
    }
  }
  EXPECT_EQ((*small)->stats()[KTURN_STAT_PASS_SIZE], 1u);
}

// XDP frames are never GSO packets: TC only.
class OffloadTcOnlyTest : public OffloadProgramTest {};

TEST_P(OffloadTcOnlyTest, AGsoPacketIsLeftToKturnd) {
  bindV4();
  Bytes frame = fromClient(kClient, kListener, testing::channelData(kChannel, testing::data(100)));
  RunResult r = run(frame, "kc", program_->tcProgramFd(), /*gso_segs=*/2);
  EXPECT_EQ(r.verdict, passed());
  EXPECT_EQ(r.out, frame);
  EXPECT_EQ(statDelta(KTURN_STAT_PASS_SIZE), 1u);
}

INSTANTIATE_TEST_SUITE_P(Tc, OffloadTcOnlyTest, ::testing::Values(Engine::kTc),
                         [](const auto& info) { return std::string(toString(info.param)); });
INSTANTIATE_TEST_SUITE_P(Engines, OffloadProgramTest, ::testing::Values(Engine::kTc, Engine::kXdp),
                         [](const auto& info) { return std::string(toString(info.param)); });

}  // namespace
}  // namespace kturn::xdp
