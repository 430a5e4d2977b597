// A relay-only WebRTC data channel echo through one TURN server: the logic of the demo page
// (index.html; ui.js is its form). No DOM access here, so the same function also runs from the
// developer console: await runEcho({iceServer: {...}, count: 10, size: 200, timeoutMs: 20000}).
//
// Two RTCPeerConnections in one page, relay candidates only (iceTransportPolicy: 'relay'), with
// one ICE server. Each allocates a relay address on the TURN server and ICE can pair only relay
// with relay, so every byte of the data channel crosses the server twice. Signalling is in-page
// (offer/answer and trickled candidates handed over directly). "a" opens a reliable, ordered
// data channel; "b" echoes every message back; "a" sends params.count messages of params.size
// bytes, one at a time, checks every echo and times its round trip.
//
// Phases, each reported through hooks.phase() as it starts:
//   gathering   offer/answer; each side asks the TURN server for an allocation
//   connecting  both sides have a relay candidate: ICE checks relay<->relay, then DTLS and SCTP
//   open        the data channel is open; the messages are echoed
// and then the result's phase is "done" (every echo came back intact) or the one that failed.
// The promise resolves to a plain object and never rejects, so a caller always gets the page's
// view of what happened:
//   {ok, phase, error?, echoed, rtt: {min, median, max} (ms) | null,
//    candidates: {a, b}, candidateErrors: [{side, url, code, text}],
//    stats: {a, b} (the selected candidate pairs, see selectedPair()), ice?: {...} on failure}
// On failure `phase` is the phase that did not finish.

"use strict";

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)),
                       ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// The stats of the nominated (selected) candidate pair of a connection: candidate types,
// addresses, the relay protocol between browser and TURN server, and the TURN URL used.
async function selectedPair(pc) {
  const report = await pc.getStats();
  let transport = null;
  report.forEach((s) => { if (s.type === "transport") transport = s; });
  let pair = null;
  if (transport && transport.selectedCandidatePairId) {
    pair = report.get(transport.selectedCandidatePairId);
  }
  if (!pair) {  // fall back to the nominated, succeeded pair (browsers without transport stats)
    report.forEach((s) => {
      if (s.type === "candidate-pair" && s.nominated && s.state === "succeeded") pair = s;
    });
  }
  if (!pair) return null;
  const local = report.get(pair.localCandidateId) || {};
  const remote = report.get(pair.remoteCandidateId) || {};
  return {
    state: pair.state,
    bytesSent: pair.bytesSent, bytesReceived: pair.bytesReceived,
    local: {type: local.candidateType, address: local.address, port: local.port,
            protocol: local.protocol, relayProtocol: local.relayProtocol, url: local.url},
    remote: {type: remote.candidateType, address: remote.address, port: remote.port,
             protocol: remote.protocol},
  };
}

// min, median and max of a list of round-trip times (ms); null for an empty list.
function rttSummary(samples) {
  if (samples.length === 0) return null;
  const sorted = [...samples].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return {min: sorted[0], median, max: sorted[sorted.length - 1]};
}

// params: {iceServer: RTCIceServer, count, size, timeoutMs}; timeoutMs bounds each of the two
// waits (the channel opening, all the echoes).
// hooks (all optional): log(line), phase(name), echoed(n, rttMs) after each echo.
async function runEcho(params, hooks = {}) {
  const t0 = performance.now();
  const log = (...args) => {
    const line = `[${((performance.now() - t0) / 1000).toFixed(3)}s] ` + args.join(" ");
    console.log(line);
    if (hooks.log) hooks.log(line);
  };
  const result = {ok: false, phase: "gathering", echoed: 0, rtt: null,
                  candidates: {a: [], b: []}, candidateErrors: [], stats: {}};
  const enter = (phase) => {
    result.phase = phase;
    log(`phase: ${phase}`);
    if (hooks.phase) hooks.phase(phase);
  };
  let a = null;
  let b = null;
  const rtts = [];
  try {
    enter("gathering");
    const config = {iceServers: [params.iceServer], iceTransportPolicy: "relay",
                    bundlePolicy: "max-bundle", rtcpMuxPolicy: "require"};
    // Throws (SyntaxError, InvalidAccessError) on a malformed URL or missing credentials.
    a = new RTCPeerConnection(config);
    b = new RTCPeerConnection(config);
    const pcs = {a, b};
    // Rejects when either connection fails (ICE or DTLS) or gets no relay candidate, instead
    // of waiting for a timeout.
    let onFailed;
    const failed = new Promise((_, reject) => { onFailed = reject; });
    failed.catch(() => {});  // only ever awaited through Promise.race
    // A candidate can be gathered before the other side has the description it belongs to
    // (a slow machine): it waits in `early` until setRemote() has applied that description.
    const early = {a: [], b: []};
    const addCandidate = (pc, name, candidate) =>
      pc.addIceCandidate(candidate).catch((err) => log(`${name}.addIceCandidate: ${err}`));
    async function setRemote(name, description) {
      await pcs[name].setRemoteDescription(description);
      for (const c of early[name].splice(0)) addCandidate(pcs[name], name, c);
    }
    for (const [name, pc] of Object.entries(pcs)) {
      const otherName = name === "a" ? "b" : "a";
      const other = pcs[otherName];
      pc.onicecandidate = (e) => {
        if (e.candidate && e.candidate.candidate) {
          log(`${name} candidate: ${e.candidate.candidate}`);
          result.candidates[name].push(e.candidate.candidate);
          if (other.remoteDescription) addCandidate(other, otherName, e.candidate);
          else early[otherName].push(e.candidate);
          if (result.phase === "gathering" && result.candidates[otherName].length > 0) {
            enter("connecting");
          }
        } else {
          log(`${name} end of candidates`);
        }
      };
      pc.onicecandidateerror = (e) => {
        const error = {side: name, url: e.url, code: e.errorCode, text: e.errorText};
        log(`${name} icecandidateerror: ${e.url} ${e.errorCode} ${e.errorText}`);
        result.candidateErrors.push(error);
      };
      pc.onicegatheringstatechange = () => {
        // Gathering is over and the TURN server gave this side no allocation: nothing can
        // connect. The error events of this side (if any) say why.
        if (pc.iceGatheringState === "complete" && result.candidates[name].length === 0) {
          const why = result.candidateErrors.filter((x) => x.side === name)
              .map((x) => `${x.url} ${x.code} ${x.text}`).join("; ");
          onFailed(new Error(`connection ${name} got no relay candidate from the TURN server` +
                             (why ? ` (${why})` : "")));
        }
      };
      pc.oniceconnectionstatechange = () => log(`${name} ice: ${pc.iceConnectionState}`);
      pc.onconnectionstatechange = () => {
        log(`${name} connection: ${pc.connectionState}`);
        // 'failed' needs an ICE restart to recover, which this page never does; still, give
        // a late candidate 3 s before calling it, so a slow machine does not fail a good run.
        if (pc.connectionState === "failed") {
          setTimeout(() => {
            if (pc.connectionState === "failed") {
              onFailed(new Error(`connection ${name} failed (ICE ${pc.iceConnectionState})`));
            }
          }, 3000);
        }
      };
    }

    // b echoes every message on every channel it is offered.
    b.ondatachannel = (e) => {
      const ch = e.channel;
      log(`b got data channel '${ch.label}'`);
      ch.onmessage = (m) => ch.send(m.data);
    };

    const channel = a.createDataChannel("echo", {ordered: true});
    const opened = new Promise((resolve, reject) => {
      channel.onopen = resolve;
      channel.onerror = (e) => reject(new Error(`data channel error: ${e.error || e}`));
      channel.onclose = () => reject(new Error("data channel closed before opening"));
    });

    await a.setLocalDescription(await a.createOffer());
    await setRemote("b", a.localDescription);
    await b.setLocalDescription(await b.createAnswer());
    await setRemote("a", b.localDescription);

    await withTimeout(Promise.race([opened, failed]), params.timeoutMs,
                      "the data channel to open");
    enter("open");

    // One message in flight at a time: each message and each echo is then an SCTP packet of
    // its own (never bundled with another message), so every one crosses the TURN server as
    // at least one packet each way, which the interop test checks in kturnd's counters.
    let pending = null;
    channel.onmessage = (m) => {
      if (pending) pending.resolve(m.data);
      else log(`unexpected message: ${String(m.data).slice(0, 40)}`);
    };
    const deadline = performance.now() + params.timeoutMs;
    for (let i = 0; i < params.count; i++) {
      // A distinct, checkable payload of params.size bytes (ASCII; longer if size is shorter
      // than the message number).
      const head = `msg-${i}-`;
      const payload = head + "x".repeat(Math.max(0, params.size - head.length));
      const echo = new Promise((resolve) => { pending = {resolve}; });
      const sent = performance.now();
      channel.send(payload);
      const got = await withTimeout(Promise.race([echo, failed]),
                                    Math.max(1, deadline - performance.now()),
                                    `the echo of message #${i} (${params.count} in all)`);
      const rtt = performance.now() - sent;
      pending = null;
      if (got !== payload) {
        throw new Error(`echo of message #${i} differs: got '${String(got).slice(0, 40)}' ` +
                        `(${String(got).length} B), want '${payload.slice(0, 40)}' ` +
                        `(${payload.length} B)`);
      }
      rtts.push(rtt);
      result.echoed = i + 1;
      if (hooks.echoed) hooks.echoed(result.echoed, rtt);
    }
    result.rtt = rttSummary(rtts);
    log(`all ${result.echoed} messages echoed`);

    result.stats.a = await selectedPair(a);
    result.stats.b = await selectedPair(b);
    result.ok = true;
    result.phase = "done";
  } catch (err) {
    result.error = String(err && err.message ? err.message : err);
    result.rtt = rttSummary(rtts);
    log(`FAILED in phase '${result.phase}': ${result.error}`);
    try {
      if (a) result.stats.a = await selectedPair(a);
      if (b) result.stats.b = await selectedPair(b);
    } catch (_) { /* best effort */ }
    if (a && b) {
      result.ice = {a: a.iceConnectionState, b: b.iceConnectionState,
                    gatheringA: a.iceGatheringState, gatheringB: b.iceGatheringState};
    }
  } finally {
    if (a) a.close();
    if (b) b.close();
  }
  return result;
}
window.runEcho = runEcho;
