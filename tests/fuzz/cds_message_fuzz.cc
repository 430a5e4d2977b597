// Fuzz target: what the CDS client and server decode from the network (src/cds): list documents
// (GET /api/v1/configs), config ids, origins, request targets and their query strings, and the
// config a watch pushes. The first input byte picks the decoder, the rest is its input.
//
// Invariants: a list that parses comes back equal through toListJson; a config id, an origin and
// a routed request target survive being written out and read again (configPath() routes back to
// the id it was made from); percent-encoding round-trips every byte string; a pushed config that
// parses is either the zero config of its own name or not, and that verdict does not change when
// it is re-serialized the way the CDS server forwards it.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cds/origin.h"
#include "cds/protocol.h"
#include "cds/server_routes.h"
#include "cds/url_util.h"
#include "config/parser.h"
#include "config/serializer.h"
#include "fuzz_check.h"

namespace {

using namespace kturn;

void listDocument(std::string_view text) {
  auto items = cds::parseListJson(text);
  if (!items) {
    FUZZ_CHECK(!items.error().message.empty());
    return;
  }
  std::vector<const config::StunnerConfig*> ptrs;
  for (const auto& c : *items) ptrs.push_back(&c);
  auto again = cds::parseListJson(cds::toListJson(ptrs));
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(*again == *items);
}

void configId(std::string_view text) {
  auto id = cds::parseConfigId(text);
  if (!id) return;
  auto again = cds::parseConfigId(id->toString());
  FUZZ_CHECK(again.has_value() && *again == *id);
  // The server's router reads the client's path back to the same id.
  const cds::Route r = cds::routeTarget(cds::configPath(*id));
  FUZZ_CHECK(r.kind == cds::Route::Kind::kConfig);
  FUZZ_CHECK(r.id == *id && !r.watch);
}

void origin(std::string_view text) {
  auto o = cds::parseOrigin(text);
  if (!o) return;
  auto again = cds::parseOrigin(o->toString());
  FUZZ_CHECK(again.has_value() && *again == *o);
}

void requestTarget(std::string_view text) {
  const cds::Route r = cds::routeTarget(text);
  switch (r.kind) {
    case cds::Route::Kind::kConfig: {
      FUZZ_CHECK(!r.id.namespace_.empty() && !r.id.name.empty());
      const cds::Route again = cds::routeTarget(cds::configPath(r.id));
      FUZZ_CHECK(again.kind == cds::Route::Kind::kConfig && again.id == r.id);
      break;
    }
    case cds::Route::Kind::kListNamespace: {
      FUZZ_CHECK(!r.id.namespace_.empty());
      const cds::Route again = cds::routeTarget(cds::namespacePath(r.id.namespace_));
      FUZZ_CHECK(again.kind == cds::Route::Kind::kListNamespace);
      FUZZ_CHECK(again.id.namespace_ == r.id.namespace_);
      break;
    }
    case cds::Route::Kind::kBadRequest:
      FUZZ_CHECK(!r.error.empty());
      break;
    default:
      break;
  }
  if (const size_t q = text.find('?'); q != std::string_view::npos) {
    (void)cds::parseQuery(text.substr(q + 1));
  }
  (void)cds::parseGoBool(text);
}

void percentCoding(std::string_view text) {
  const std::string encoded = cds::percentEncode(text);
  for (const char c : encoded) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
                            c == '~' || c == '%';
    FUZZ_CHECK(unreserved);
  }
  auto decoded = cds::percentDecode(encoded, false);
  FUZZ_CHECK(decoded.has_value() && *decoded == text);
  (void)cds::percentDecode(text, true);
}

void pushedConfig(std::string_view text) {
  auto parsed = config::parseConfig(text);
  if (!parsed) return;
  const bool deleted = cds::isConfigDeleted(*parsed);
  auto again = config::parseConfig(config::toJson(*parsed));
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(cds::isConfigDeleted(*again) == deleted);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text{reinterpret_cast<const char*>(data) + 1, size - 1};
  switch (data[0] % 6) {
    case 0:
      listDocument(text);
      break;
    case 1:
      configId(text);
      break;
    case 2:
      origin(text);
      break;
    case 3:
      requestTarget(text);
      break;
    case 4:
      percentCoding(text);
      break;
    default:
      pushedConfig(text);
      break;
  }
  return 0;
}
