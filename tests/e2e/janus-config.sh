#!/bin/sh
# Writes the Janus config of tests/e2e/janus.Containerfile into /etc/janus-e2e, at image build
# time: the EchoTest plugin and the plain HTTP transport (port 8088, every address) and nothing
# else of Debian's janus package, disabled by name; full ICE on the pod's eth0 only (Janus never
# gathers on loopback), no STUN server, no 1:1 NAT; RTP on 20000-20199. The same settings as
# tests/interop/janus.py's JanusServer, for a pod: the interface by name, not by address.
set -eu
conf=/etc/janus-e2e
echotest=$(ls /usr/lib/*/janus/plugins/libjanus_echotest.so)
lib=$(dirname "$(dirname "$echotest")")
# The *.so files of a module folder but `keep`, comma-separated (Janus's `disable` list).
others() {
  [ -d "$1" ] || return 0
  ls "$1" | grep '\.so$' | grep -vx "${2:-}" | paste -sd, -
}
mkdir -p "$conf"
cat >"$conf/janus.jcfg" <<CFG
general: {
  configs_folder = "$conf"
  plugins_folder = "$lib/plugins"
  transports_folder = "$lib/transports"
  events_folder = "$lib/events"
  loggers_folder = "$lib/loggers"
  debug_level = 4
  debug_timestamps = true
  debug_colors = false
  server_name = "kturn-e2e"
  session_timeout = 60
}
media: {
  rtp_port_range = "20000-20199"
}
nat: {
  nice_debug = false
  ice_enforce_list = "eth0"
  ignore_mdns = true
}
plugins: {
  disable = "$(others "$lib/plugins" libjanus_echotest.so)"
}
transports: {
  disable = "$(others "$lib/transports" libjanus_http.so)"
}
loggers: {
  disable = "$(others "$lib/loggers")"
}
events: {
  broadcast = false
}
CFG
cat >"$conf/janus.transport.http.jcfg" <<'CFG'
general: {
  json = "plain"
  base_path = "/janus"
  http = true
  port = 8088
  https = false
}
admin: {
  admin_http = false
  admin_https = false
}
CFG
printf 'general: {\n}\n' >"$conf/janus.plugin.echotest.jcfg"
