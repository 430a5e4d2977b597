// The health-check routes of stunnerd's :8086 server (internal/object/admin.go, v1.2.1), with
// its status codes, bodies and content type, so probes and scripts written against stunnerd keep
// working:
//   GET /live    200 application/json "{}\n" while the process serves HTTP at all
//   GET /ready   200 {"status":200,"message":"READY"}\n
//                503 {"status":503,"message":"stunnerd not ready"}\n  (NOT-READY or TERMINATING)
//   GET /status  200 the JSON document the caller builds (stunner_status.h has its shape);
//                500 {"status":500,"message":"<why>"}\n when building it fails;
//                401 {"status":401,...} without "Authorization: Bearer <token>" when a token is
//                set (kturn: kturnd --status-token-file; /live and /ready stay open for probes)
//   GET /capacity (kturn) 200, or 503 while over capacity, with the measures, marks and headroom
//                of admin.capacity (capacity_gate.h): a health API for GeoDNS and load
//                balancers that answers even where --force-ready-status keeps /ready at 200
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>

#include "admin/admin_server.h"
#include "admin/capacity_gate.h"
#include "admin/handler.h"
#include "admin/health_state.h"
#include "common/bearer_token.h"

namespace kturn::admin {

inline constexpr const char* kJsonContentType = "application/json; charset=utf-8";

// Builds /status on each request, on the admin thread: it must be thread-safe and quick. May
// throw; the handler turns that into a 500.
using StatusProvider = std::function<nlohmann::json()>;

Handler liveHandler();
// `state` is borrowed and must outlive the server.
Handler readyHandler(const HealthState& state);
// `gate` is borrowed and must outlive the server.
Handler capacityHandler(const CapacityGate& gate);
// `token`: the bearer token /status requires, read on each request (null or empty: none).
Handler statusHandler(StatusProvider provider, std::shared_ptr<BearerToken> token = nullptr);

// Registers /live, /ready and /status on `server` (before its start()).
void registerHealthRoutes(AdminServer& server, const HealthState& state, StatusProvider provider,
                          std::shared_ptr<BearerToken> statusToken = nullptr);

}  // namespace kturn::admin
