// RelaySockets' UDP relays in a listener's relay port range, on loopback: EVEN-PORT (with and
// without the R bit) finds a free even port, and its successor, wherever they are in the window,
// however many taken ports come first. interop_ops_drain's 508s came from here: every try
// scanned from the next hint, so a run of taken ports ending in a free odd one made all 32 tries
// find that same odd port, with even pairs free further on.
#include "worker/relay_sockets.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace kturn::worker {
namespace {

const IpAddress kLoopback = *IpAddress::parse("127.0.0.1");

// A window of `size` ports below the ephemeral range, whose ports [0, held) except those in
// `free` this test holds (bound by a socket each), so that the first free ports are known.
struct Window {
  uint16_t min = 0;
  uint16_t max = 0;
  std::vector<net::UdpSocket> held;
};

Window holdWindow(uint16_t size, uint16_t held, std::vector<uint16_t> free) {
  for (uint16_t base = 21000; base + size < 32000; base += 2 * size) {
    Window w{.min = base, .max = static_cast<uint16_t>(base + size - 1), .held = {}};
    bool ok = true;
    for (uint16_t i = 0; i < held && ok; ++i) {
      if (std::find(free.begin(), free.end(), i) != free.end()) continue;
      auto s = net::UdpSocket::bind({kLoopback, static_cast<uint16_t>(base + i)}, {});
      ok = s.has_value();
      if (ok) w.held.push_back(std::move(*s));
    }
    if (ok) return w;
  }
  ADD_FAILURE() << "no window of " << size << " ports to hold";
  return {};
}

class RelaySocketsTest : public ::testing::Test {
 protected:
  void useRange(uint16_t min, uint16_t max) {
    auto snapshot = std::make_shared<ConfigSnapshot>();
    ListenerSpec listener;
    listener.id = 1;
    listener.min_relay_port = min;
    listener.max_relay_port = max;
    snapshot->listeners.push_back(listener);
    relays_.setDataplane(std::move(snapshot));
  }
  Result<turn::RelayGrant> open(bool even, bool reserve_next) {
    turn::RelayRequest request;
    request.allocation = {.index = next_++, .generation = 1};
    request.listener = 1;
    request.five_tuple.server = {kLoopback, 3478};
    request.five_tuple.client = {kLoopback, 50000};
    request.even_port = even;
    request.reserve_next = reserve_next;
    return relays_.open(request);
  }

  net::EventLoop loop_;
  ReservationPool reservations_;
  // Hint seed 0: the first try starts at the window's first port.
  RelaySockets relays_{
      loop_, reservations_, [](turn::AllocationId, int) {}, [](turn::AllocationId, int) {}, {}, 0};
  uint32_t next_ = 0;
};

TEST_F(RelaySocketsTest, AnEvenPortPairIsFoundPastARunOfTakenPortsEndingInAFreeOddOne) {
  // Ports 0-59 of the window held but 41: the first free port is odd, 41, and every scan that
  // starts before it lands on it. 60-99 are free.
  Window w = holdWindow(100, 60, {41});
  useRange(w.min, w.max);
  auto pair = open(/*even=*/true, /*reserve_next=*/true);
  ASSERT_TRUE(pair) << pair.error().message;
  EXPECT_EQ(pair->relayed.port % 2, 0);
  EXPECT_GE(pair->relayed.port, w.min + 60);
  EXPECT_TRUE(pair->reservation_token.has_value());

  auto even = open(/*even=*/true, /*reserve_next=*/false);
  ASSERT_TRUE(even) << even.error().message;
  EXPECT_EQ(even->relayed.port % 2, 0);
  EXPECT_NE(even->relayed.port, pair->relayed.port);
  EXPECT_NE(even->relayed.port, pair->relayed.port + 1);  // held for the token

  // Without EVEN-PORT any free port will do, 41 included.
  auto any = open(/*even=*/false, /*reserve_next=*/false);
  ASSERT_TRUE(any) << any.error().message;
  EXPECT_EQ(any->relayed.port, w.min + 41);
}

TEST_F(RelaySocketsTest, AnEvenPortWhoseSuccessorIsTakenIsPassedOver) {
  // Only even ports free up to 80 (each one's successor held), then free pairs.
  std::vector<uint16_t> evens;
  for (uint16_t i = 0; i < 80; i += 2) evens.push_back(i);
  Window w = holdWindow(120, 80, evens);
  useRange(w.min, w.max);
  auto pair = open(/*even=*/true, /*reserve_next=*/true);
  ASSERT_TRUE(pair) << pair.error().message;
  EXPECT_GE(pair->relayed.port, w.min + 80);
  EXPECT_EQ(pair->relayed.port % 2, 0);
  // An even port alone is found among the first.
  auto even = open(/*even=*/true, /*reserve_next=*/false);
  ASSERT_TRUE(even) << even.error().message;
  EXPECT_LT(even->relayed.port, w.min + 80);
}

TEST_F(RelaySocketsTest, AFullWindowIsExhaustedNotAnEndlessSearch) {
  Window w = holdWindow(40, 40, {1, 3, 5});  // only odd ports free
  useRange(w.min, w.max);
  auto pair = open(/*even=*/true, /*reserve_next=*/true);
  ASSERT_FALSE(pair);
  EXPECT_EQ(pair.error().code, Error::Code::kExhausted);
  auto odd = open(/*even=*/false, /*reserve_next=*/false);
  ASSERT_TRUE(odd) << odd.error().message;
}

}  // namespace
}  // namespace kturn::worker
