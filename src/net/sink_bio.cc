#include "net/sink_bio.h"

#include <openssl/bio.h>

namespace kturn::net {
namespace {

int sinkWrite(BIO* bio, const char* data, size_t size, size_t* written) {
  auto* sink = static_cast<BioSink*>(BIO_get_data(bio));
  sink->write({reinterpret_cast<const uint8_t*>(data), size});
  *written = size;
  return 1;
}

long sinkCtrl(BIO* bio, int cmd, long, void*) {
  switch (cmd) {
    case BIO_CTRL_FLUSH:  // after each flight; there is nothing to flush
      return 1;
    case BIO_CTRL_DGRAM_QUERY_MTU:
    case BIO_CTRL_DGRAM_GET_FALLBACK_MTU:
      return static_cast<const BioSink*>(BIO_get_data(bio))->datagramMtu();
    default:  // pending counts, peer addresses and the like mean nothing here
      return 0;
  }
}

int sinkCreate(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

const BIO_METHOD* sinkMethod() {
  static const BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "kturn sink");
    BIO_meth_set_write_ex(m, sinkWrite);
    BIO_meth_set_ctrl(m, sinkCtrl);
    BIO_meth_set_create(m, sinkCreate);
    return m;
  }();
  return method;
}

}  // namespace

BIO* newSinkBio(BioSink& sink) {
  BIO* bio = BIO_new(sinkMethod());
  BIO_set_data(bio, &sink);
  return bio;
}

}  // namespace kturn::net
