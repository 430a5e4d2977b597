// A write-only OpenSSL BIO that hands every write to a BioSink, for TLS and DTLS connections
// whose ciphertext goes to a kturn-owned queue instead of straight to a socket (the worker
// batches and bounds the writes). OpenSSL's memory BIO would add a buffer, and a copy, between
// the records and that queue.
#pragma once

#include <cstdint>
#include <span>

using BIO = struct bio_st;

namespace kturn::net {

class BioSink {
 public:
  virtual ~BioSink() = default;
  // One write of the record layer: for DTLS, one datagram.
  virtual void write(std::span<const uint8_t> bytes) = 0;
  // What the BIO answers to OpenSSL's datagram MTU queries; 0 for a stream.
  virtual long datagramMtu() const { return 0; }
};

// A new BIO writing to `sink`, which must outlive it. The caller (usually SSL_set_bio) owns it.
BIO* newSinkBio(BioSink& sink);

}  // namespace kturn::net
