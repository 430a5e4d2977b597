// Exit statuses every kturnctl subcommand documents (docs/kturnctl.md). `render` gives 1 its own
// meaning (rendered, with problems); the network commands use it for any runtime failure.
#pragma once

namespace kturn::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the server is unreachable, refused, or answered nonsense
inline constexpr int kExitUsage = 2;    // bad flags or arguments

}  // namespace kturn::cli
