#include "net/port_probe.h"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "net/file_descriptor.h"
#include "net/sockaddr.h"

namespace kturn::net {
namespace {

std::string describe(TransportProtocol protocol, const TransportAddress& address) {
  return address.toString() + (protocol == TransportProtocol::kUdp ? "/udp" : "/tcp");
}

// errno of binding a socket that shares nothing to `address` (0: it bound).
int probeOnce(TransportProtocol protocol, const TransportAddress& address) {
  const bool v6 = address.family() == AddressFamily::kIPv6;
  const bool udp = protocol == TransportProtocol::kUdp;
  FileDescriptor fd(
      ::socket(v6 ? AF_INET6 : AF_INET, (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return errno;
  const int on = 1;
  if (!udp) (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  // The listener's own socket of this family: UDP on "::" is IPv6-only beside an IPv4 socket,
  // TCP on "::" is dual stack.
  if (v6) {
    const int v6only = udp ? 1 : 0;
    (void)::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
  }
  sockaddr_storage ss;
  const socklen_t len = toSockaddr(address, ss);
  return ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&ss), len) == 0 ? 0 : errno;
}

// The socket inodes /proc/net/<table> lists bound to `port` (TCP: in LISTEN).
void socketInodes(const std::string& table, bool tcp, uint16_t port, std::set<std::string>& out) {
  std::ifstream in("/proc/net/" + table);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode)) {
      continue;
    }
    const size_t colon = local.rfind(':');
    if (colon == std::string::npos) continue;
    unsigned long local_port = 0;
    try {
      local_port = std::stoul(local.substr(colon + 1), nullptr, 16);
    } catch (const std::exception&) {
      continue;
    }
    if (local_port != port || inode == "0") continue;
    if (tcp && state != "0A") continue;  // TCP_LISTEN
    out.insert(inode);
  }
}

std::string commOf(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm.empty() ? "?" : comm;
}

bool allDigits(const char* s) {
  if (*s == '\0') return false;
  for (; *s != '\0'; ++s) {
    if (*s < '0' || *s > '9') return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> portHolders(TransportProtocol protocol, uint16_t port) {
  const bool tcp = protocol == TransportProtocol::kTcp;
  std::set<std::string> inodes;
  socketInodes(tcp ? "tcp" : "udp", tcp, port, inodes);
  socketInodes(tcp ? "tcp6" : "udp6", tcp, port, inodes);
  std::vector<std::string> holders;
  if (inodes.empty()) return holders;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return holders;
  const std::string self = std::to_string(::getpid());
  while (const dirent* entry = ::readdir(proc)) {
    if (!allDigits(entry->d_name)) continue;
    const std::string pid = entry->d_name;
    const std::string fd_dir = "/proc/" + pid + "/fd";
    DIR* fds = ::opendir(fd_dir.c_str());
    if (fds == nullptr) continue;  // gone, or another user's
    while (const dirent* fd = ::readdir(fds)) {
      char target[64];
      const std::string link = fd_dir + "/" + fd->d_name;
      const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
      if (n <= 8) continue;
      target[n] = '\0';
      const std::string_view text(target, static_cast<size_t>(n));
      if (text.substr(0, 8) != "socket:[" || text.back() != ']') continue;
      if (!inodes.contains(std::string(text.substr(8, text.size() - 9)))) continue;
      holders.push_back(commOf(pid) + " (pid " + pid + (pid == self ? ", this process)" : ")"));
      break;
    }
    ::closedir(fds);
  }
  ::closedir(proc);
  return holders;
}

Result<void> probePort(TransportProtocol protocol, const TransportAddress& address) {
  std::vector<TransportAddress> probes{address};
  if (protocol == TransportProtocol::kUdp && address.family() == AddressFamily::kIPv6 &&
      address.ip.isUnspecified()) {
    probes.push_back(TransportAddress{IpAddress{}, address.port});  // and 0.0.0.0
  }
  for (const TransportAddress& probe : probes) {
    const int err = probeOnce(protocol, probe);
    if (err == 0) continue;
    std::string message = describe(protocol, probe);
    if (err == EADDRINUSE) {
      const std::vector<std::string> holders = portHolders(protocol, probe.port);
      message += " is in use";
      for (size_t i = 0; i < holders.size(); ++i) message += (i == 0 ? " by " : ", ") + holders[i];
      if (holders.empty()) message += " (by a process this one cannot see)";
    } else {
      message += ": " + std::string(std::strerror(err));
    }
    return makeError(Error::Code::kIo, message);
  }
  return {};
}

}  // namespace kturn::net
