#include "net/event_loop.h"

#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/loopback.h"

namespace kturn::net {
namespace {

using std::chrono::milliseconds;
using testing::bindLoopback;
using testing::bytesOf;
using testing::sendTo;

constexpr milliseconds kWait{1000};

// A socket with a datagram waiting, so that it is readable until someone reads it.
struct ReadableSocket {
  UdpSocket socket = bindLoopback(AddressFamily::kIPv4);
  UdpSocket sender = bindLoopback(AddressFamily::kIPv4);
  ReadableSocket() { EXPECT_TRUE(sendTo(sender.fd(), socket.localAddress(), bytesOf("x"))); }
  int fd() const { return socket.fd(); }
};

// Runs the loop until `done` or a bounded number of iterations.
template <class Pred>
bool runUntil(EventLoop& loop, Pred done, int max_iterations = 50) {
  for (int i = 0; i < max_iterations && !done(); ++i) loop.runOnce(milliseconds(100));
  return done();
}

TEST(EventLoopTest, ReadableCallbackFires) {
  EventLoop loop;
  ReadableSocket s;
  uint32_t seen = 0;
  int calls = 0;
  ASSERT_TRUE(loop.add(s.fd(), EPOLLIN, [&](uint32_t events) {
    seen = events;
    ++calls;
  }));
  loop.runOnce(kWait);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(seen & EPOLLIN);
}

TEST(EventLoopTest, NothingReadyTimesOut) {
  EventLoop loop;
  UdpSocket quiet = bindLoopback(AddressFamily::kIPv4);
  int calls = 0;
  ASSERT_TRUE(loop.add(quiet.fd(), EPOLLIN, [&](uint32_t) { ++calls; }));
  loop.runOnce(milliseconds(10));
  EXPECT_EQ(calls, 0);
}

TEST(EventLoopTest, AddTwiceFailsAndModifyChangesTheMask) {
  EventLoop loop;
  UdpSocket quiet = bindLoopback(AddressFamily::kIPv4);
  uint32_t seen = 0;
  ASSERT_TRUE(loop.add(quiet.fd(), EPOLLIN, [&](uint32_t events) { seen = events; }));
  auto twice = loop.add(quiet.fd(), EPOLLIN, [](uint32_t) {});
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().code, Error::Code::kInvalidArgument);

  ASSERT_TRUE(loop.modify(quiet.fd(), EPOLLOUT));  // an idle UDP socket is always writable
  loop.runOnce(kWait);
  EXPECT_EQ(seen, static_cast<uint32_t>(EPOLLOUT));

  loop.remove(quiet.fd());
  EXPECT_FALSE(loop.modify(quiet.fd(), EPOLLIN));
  loop.remove(quiet.fd());  // a second remove is harmless
  ASSERT_TRUE(loop.add(quiet.fd(), EPOLLOUT, [&](uint32_t) { seen = 0; }));  // re-add works
  loop.runOnce(kWait);
  EXPECT_EQ(seen, 0u);
}

TEST(EventLoopTest, RemovingAnotherFdDuringDispatchSkipsItsPendingEvent) {
  EventLoop loop;
  ReadableSocket a;
  ReadableSocket b;
  int calls = 0;
  // Both are readable before runOnce, so both events come back in the same epoll_wait batch;
  // whichever runs first removes the other.
  ASSERT_TRUE(loop.add(a.fd(), EPOLLIN, [&](uint32_t) {
    ++calls;
    loop.remove(b.fd());
  }));
  ASSERT_TRUE(loop.add(b.fd(), EPOLLIN, [&](uint32_t) {
    ++calls;
    loop.remove(a.fd());
  }));
  loop.runOnce(kWait);
  EXPECT_EQ(calls, 1);
  loop.runOnce(milliseconds(10));  // the survivor is still registered and readable
  EXPECT_EQ(calls, 2);
}

TEST(EventLoopTest, ReaddedFdIgnoresEventsOfTheOldRegistration) {
  EventLoop loop;
  ReadableSocket a;
  ReadableSocket b;
  std::vector<std::string> log;
  bool replaced = false;
  // Whichever runs first replaces the other fd's registration in the middle of the batch, as
  // when a relay socket is closed and its fd number reused at once.
  auto replaceOther = [&](const char* name, int other) {
    return [&, name, other](uint32_t) {
      log.push_back(name);
      if (replaced) return;
      replaced = true;
      loop.remove(other);
      ASSERT_TRUE(loop.add(other, EPOLLIN, [&](uint32_t) { log.push_back("new"); }));
    };
  };
  ASSERT_TRUE(loop.add(a.fd(), EPOLLIN, replaceOther("a", b.fd())));
  ASSERT_TRUE(loop.add(b.fd(), EPOLLIN, replaceOther("b", a.fd())));
  loop.runOnce(kWait);
  // The event fetched for the old registration is stale: neither the old nor the new callback
  // runs for it.
  ASSERT_EQ(log.size(), 1u);
  const std::string first = log[0];
  loop.runOnce(kWait);  // both fds are still readable (level-triggered, nobody reads)
  std::sort(log.begin() + 1, log.end());
  EXPECT_EQ(log, (std::vector<std::string>{first, first, "new"}));
}

TEST(EventLoopTest, CallbackMayRemoveItselfAndKeepUsingItsCaptures) {
  EventLoop loop;
  ReadableSocket s;
  auto text = std::make_shared<std::string>("captured state that outlives remove()");
  std::string copy;
  const int fd = s.fd();
  ASSERT_TRUE(loop.add(fd, EPOLLIN, [&loop, &copy, fd, text](uint32_t) {
    loop.remove(fd);
    copy = *text;  // the callable, and so `text`, must still be alive here
  }));
  const std::weak_ptr<std::string> weak = text;
  text.reset();
  loop.runOnce(kWait);
  EXPECT_EQ(copy, "captured state that outlives remove()");
  EXPECT_TRUE(weak.expired()) << "the removed callback is destroyed after the batch";
}

TEST(EventLoopTest, PostFromAnotherThreadRunsOnTheLoopThread) {
  EventLoop loop;
  std::atomic<int> ran{0};
  std::thread::id ran_on;
  std::vector<int> order;
  std::thread poster([&] {
    for (int i = 0; i < 3; ++i) {
      loop.post([&, i] {
        ran_on = std::this_thread::get_id();
        order.push_back(i);
        ran.fetch_add(1);
      });
    }
  });
  poster.join();
  ASSERT_TRUE(runUntil(loop, [&] { return ran.load() == 3; }));
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

TEST(EventLoopTest, TaskPostedByATaskRunsOnALaterWakeup) {
  EventLoop loop;
  int inner = 0;
  loop.post([&] { loop.post([&] { ++inner; }); });
  loop.runOnce(kWait);
  EXPECT_EQ(inner, 0);
  loop.runOnce(kWait);
  EXPECT_EQ(inner, 1);
}

TEST(EventLoopTest, TickerFiresPeriodically) {
  EventLoop loop;
  int ticks = 0;
  loop.addTicker(milliseconds(10), [&] { ++ticks; });
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(runUntil(loop, [&] { return ticks >= 3; }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(25));
}

TEST(EventLoopTest, StopFromAnotherThreadEndsRun) {
  EventLoop loop;
  std::mutex mutex;
  std::condition_variable cv;
  bool returned = false;
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(20));
    loop.stop();
    std::unique_lock lock(mutex);
    if (!cv.wait_for(lock, std::chrono::seconds(5), [&] { return returned; })) {
      ADD_FAILURE() << "run() did not return after stop()";
      std::_Exit(1);  // the test thread is stuck in run(); nothing else ends it
    }
  });
  loop.run();
  {
    std::lock_guard lock(mutex);
    returned = true;
  }
  cv.notify_one();
  stopper.join();
}

TEST(EventLoopTest, StopBeforeRunReturnsAtOnceAndRunCanResume) {
  EventLoop loop;
  loop.stop();
  loop.run();  // returns immediately
  int ran = 0;
  loop.post([&] {
    ++ran;
    loop.stop();
  });
  loop.run();  // runs the task, which stops the loop
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace kturn::net
