// What crosses between workers: an RFC 6062 ConnectionBind that reached another worker than the
// one whose core owns its CONNECTION-ID (its data connection is handed over), and an RFC 8016
// move of an allocation to the worker its client's new address hashes to (turn/allocation_move.h).
// Each is a task posted to the other worker's loop; nothing is shared.
#include <spdlog/spdlog.h>

#include <memory>
#include <optional>
#include <vector>

#include "stun/attributes.h"
#include "stun/byte_order.h"
#include "stun/message.h"
#include "worker/worker.h"

namespace kturn::worker {

std::optional<size_t> Worker::connectionBindOwner(std::span<const uint8_t> frame) {
  // Most frames are ChannelData or other requests: the 2-byte type rules them out.
  constexpr uint16_t kConnectionBindRequest = static_cast<uint16_t>(stun::Method::kConnectionBind);
  if (frame.size() < stun::kHeaderSize || stun::load16(frame.data()) != kConnectionBindRequest) {
    return std::nullopt;
  }
  const auto m = stun::MessageView::parse(frame);
  const auto value = m ? m->value(stun::attr::kConnectionId) : std::nullopt;
  const auto id = value ? stun::decodeUint32(*value) : std::nullopt;
  if (!id) return std::nullopt;
  return turn::connectionOwner(*id);
}

void Worker::onDetached(turn::ListenerId id, std::unique_ptr<StreamListener::Connection> c) {
  const TransportAddress client = c->tuple.client;
  if (const auto bind = binds_.find(client); bind != binds_.end()) {
    const turn::ConnectionId connection = bind->second;
    binds_.erase(bind);
    relays_.links().join(connection, id, std::move(c));
    return;
  }
  const auto handoff = handoffs_.find(client);
  if (handoff == handoffs_.end()) return;  // closes it
  // The ConnectionBind goes back in front of whatever followed it, for the owner to frame.
  std::vector<uint8_t> in = std::move(handoff->second);
  handoffs_.erase(handoff);
  const size_t owner = connectionBindOwner(in).value_or(options_.index);
  in.insert(in.end(), c->in.begin(), c->in.begin() + static_cast<ptrdiff_t>(c->in_used));
  c->in_used = in.size();
  c->in = std::move(in);
  // std::function needs a copyable callable: the connection travels in a shared_ptr.
  auto moved = std::make_shared<std::unique_ptr<StreamListener::Connection>>(std::move(c));
  Worker* target = siblings_[owner];
  target->post([target, id, moved] { target->adopt(id, std::move(*moved)); });
}

bool Worker::requestMove(uint8_t owner, turn::MoveRequest request) {
  if (owner >= siblings_.size()) return false;
  // Once per client address change, never per packet.
  spdlog::info("worker {}: a MOBILITY-TICKET from {} names worker {}: moving its allocation here",
               options_.index, request.five_tuple.client.toString(), owner);
  moving_[request.five_tuple];  // hold what the 5-tuple sends until the answer
  Worker* target = siblings_[owner];
  target->post([target, to = this, request = std::move(request)]() mutable {
    target->moveOut(std::move(request), to);
  });
  return true;
}

void Worker::moveOut(turn::MoveRequest request, Worker* to) {
  auto moved = server_->releaseForMove(request, now(), actions_);
  flush();  // a refusal goes to the client from here: the same listener address
  // std::function needs a copyable callable: the allocation travels in a shared_ptr.
  auto box = std::make_shared<std::optional<turn::MovedAllocation>>(std::move(moved));
  to->post([to, box, request = std::move(request)]() mutable {
    to->moveIn(std::move(*box), std::move(request));
  });
}

void Worker::moveIn(std::optional<turn::MovedAllocation> moved, turn::MoveRequest request) {
  const turn::Now t = now();
  if (moved) server_->adoptMoved(std::move(*moved), request, t, actions_);
  const auto held = moving_.find(request.five_tuple);
  if (held != moving_.end()) {
    const std::vector<std::vector<uint8_t>> datagrams = std::move(held->second);
    moving_.erase(held);
    for (const auto& d : datagrams) {
      server_->onClientPacket(request.listener, request.five_tuple, d, t, actions_);
      if (actions_.arenaUsed() > turn::Actions::kArenaSize / 2) flush();
    }
  }
  flush();
}

void Worker::adopt(turn::ListenerId id, std::unique_ptr<StreamListener::Connection> c) {
  const Listener* listener = findListener(id);
  if (listener == nullptr || !listener->stream) return;  // the listener is gone: closes it
  listener->stream->adopt(std::move(c));
}

}  // namespace kturn::worker
