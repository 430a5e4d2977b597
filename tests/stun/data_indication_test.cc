// writeDataIndication (src/stun/data_indication.h): the Data indication the core writes around a
// relayed payload parses as one, from either family's peer, with the payload and padding intact.
#include "stun/data_indication.h"

#include <gtest/gtest.h>

#include <vector>

namespace kturn::stun {
namespace {

TEST(DataIndication, ParsesBackWithThePeerAndThePayloadForEitherFamily) {
  for (const char* peer_text : {"10.2.3.4:5000", "[fd00::7]:6000"}) {
    const TransportAddress peer = *TransportAddress::parse(peer_text);
    for (size_t length : {0u, 1u, 3u, 4u, 5u, 1200u}) {
      const size_t headroom = dataIndicationHeadroom(peer.family());
      std::vector<uint8_t> buffer(headroom + length + 3, 0xEE);
      uint8_t* payload = buffer.data() + headroom;
      for (size_t i = 0; i < length; ++i) payload[i] = static_cast<uint8_t>(i);
      const TransactionId transaction{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
      const auto written = writeDataIndication(payload, length, peer, transaction);
      EXPECT_EQ(written.data(), buffer.data()) << peer_text;
      EXPECT_EQ(written.size(), headroom + ((length + 3) & ~size_t{3}));
      const auto m = MessageView::parse(written);
      ASSERT_TRUE(m) << peer_text << " " << length;
      EXPECT_EQ(m->method(), Method::kData);
      EXPECT_EQ(m->messageClass(), MessageClass::kIndication);
      const auto address = m->value(attr::kXorPeerAddress);
      ASSERT_TRUE(address);
      EXPECT_EQ(decodeXorAddress(*address, m->xorPad()), peer);
      const auto data = m->value(attr::kData);
      ASSERT_TRUE(data);
      ASSERT_EQ(data->size(), length);
      for (size_t i = 0; i < length; ++i) EXPECT_EQ((*data)[i], static_cast<uint8_t>(i));
      for (size_t i = length; i < ((length + 3) & ~size_t{3}); ++i) EXPECT_EQ(payload[i], 0);
    }
  }
}

TEST(DataIndication, TheHeadroomOfEachFamily) {
  EXPECT_EQ(dataIndicationHeadroom(AddressFamily::kIPv4), 36u);
  EXPECT_EQ(dataIndicationHeadroom(AddressFamily::kIPv6), 48u);
}

}  // namespace
}  // namespace kturn::stun
