// Fuzz target: TURN framing on a byte stream (src/stun/stream_framing.h), as TURN-TCP/TLS
// listeners cut their input. The input is the stream; it is cut frame by frame.
//
// Invariants: a complete frame fits in what was buffered, is at least a header long, holds its
// message and at most 3 bytes of padding (to a multiple of 4 for ChannelData, none for STUN);
// an incomplete answer never claims a frame that is already complete; cutting always advances.
#include <cstdint>
#include <span>

#include "fuzz_check.h"
#include "stun/stream_framing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kturn::stun::StreamFrame;
  std::span<const uint8_t> rest{data, size};
  while (!rest.empty()) {
    const StreamFrame f = kturn::stun::nextStreamFrame(rest);
    if (f.kind == StreamFrame::Kind::kInvalid || f.kind == StreamFrame::Kind::kIncomplete) {
      if (f.kind == StreamFrame::Kind::kIncomplete && f.frame_size != 0) {
        FUZZ_CHECK(f.frame_size > rest.size());
      }
      break;
    }
    FUZZ_CHECK(f.frame_size <= rest.size());
    FUZZ_CHECK(f.message_size >= 4);
    FUZZ_CHECK(f.frame_size >= f.message_size && f.frame_size - f.message_size <= 3);
    if (f.kind == StreamFrame::Kind::kChannelData) FUZZ_CHECK(f.frame_size % 4 == 0);
    if (f.kind == StreamFrame::Kind::kStun) {
      FUZZ_CHECK(f.frame_size == f.message_size && f.message_size >= 20);
    }
    // The same frame with one byte missing is incomplete.
    const StreamFrame cut = kturn::stun::nextStreamFrame(rest.first(f.frame_size - 1));
    FUZZ_CHECK(cut.kind == StreamFrame::Kind::kIncomplete);
    rest = rest.subspan(f.frame_size);
  }
  return 0;
}
