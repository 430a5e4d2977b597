// One WebRTC call with audio and video, relay candidates only, to Janus's EchoTest plugin:
// the browser side of tests/interop/janus.py (janus_call()). No DOM access but the <video>
// element that shows the echo, so the function also runs from the developer console:
//   await janusCall({iceServer: {...}, janusUrl: "/janus", seconds: 8, stepTimeoutMs: 15000})
//
// Signalling is Janus's plain HTTP API (janus.transport.http), non-trickle:
//   POST {janusUrl}                  {"janus": "create"}                  -> session id
//   POST {janusUrl}/{session}        {"janus": "attach", "plugin": "janus.plugin.echotest"}
//   POST {janusUrl}/{session}/{handle} {"janus": "message", "body": {"audio": true,
//                                     "video": true}, "jsep": offer}       -> ack
//   GET  {janusUrl}/{session}?maxev=1  (long poll) -> the event carrying the answer's jsep;
//                                     then webrtcup, media, ... until the call ends
//   POST {janusUrl}/{session}        {"janus": "destroy"}
// The offer goes out once ICE gathering is complete (or has settled: see GATHER_SETTLE_MS), with
// the browser's relay candidates in its SDP and a trickle "completed" after it; Janus answers
// with its host candidates in its SDP.
// Requests carry no Content-Type header of their own (text/plain), so a janusUrl on another
// origin needs no CORS preflight either.
//
// Phases (result.phase is the one running, or the one that failed):
//   media       getUserMedia({audio, video}) (fake devices in the test)
//   session     create + attach
//   gathering   the offer; the TURN server's allocation gives the relay candidate(s)
//   answer      offer sent, waiting for Janus's answer on the long poll
//   connecting  ICE (browser relay <-> Janus host, through the TURN server), DTLS-SRTP
//   call        connected: media flows for `seconds`; getStats() sampled at half-time and end
// then "done". With params.restart (an ICE restart when the path is lost; see restartIce()),
// the call phase instead samples once, waits for ICE to report the path lost, and runs
//   restart     a new offer with fresh ICE credentials and fresh relay candidates (trickled to
//               Janus), Janus's answer, ICE connected again, inbound RTP growing again
// before `seconds` more of media sampled at their start and end; result.restart holds the
// wall-clock times (Date.now(), ms) of each step. The promise never rejects: it resolves to a plain object
//   {ok, phase, error?, samples: [stats, stats] (see summarize(); with params.restart three:
//    before the loss, when media came back, at the end), events: [Janus event names],
//    remoteTracks: [kinds], candidates: [...], candidateErrors: [...], answerCandidates:
//    [Janus's a=candidate lines], restart?: {...}, ice?: {...} on failure, seconds, log: [...]}
// and window.janusProgress is the same object while the call runs (what a caller reads when
// its own bound runs out first).

"use strict";

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)),
                       ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A promise with its resolve and reject, settled once (later calls are no-ops); its rejection
// is handled, so one nobody waits for raises nothing.
function slot() {
  const s = {};
  s.promise = new Promise((resolve, reject) => { s.resolve = resolve; s.reject = reject; });
  s.promise.catch(() => {});
  return s;
}

// How long gathering may go on after the first relay candidate before the offer goes out.
const GATHER_SETTLE_MS = 1000;

function pick(stats, fields) {
  const out = {};
  for (const f of fields) if (stats[f] !== undefined) out[f] = stats[f];
  return out;
}

// What the test reads from one getStats() report: inbound-rtp, outbound-rtp and
// remote-inbound-rtp by kind, the selected candidate pair (through the transport's
// selectedCandidatePairId) with both of its candidates, and the transport's DTLS state.
async function summarize(pc) {
  const report = await pc.getStats();
  const out = {at: performance.now(), inbound: {}, outbound: {}, remoteInbound: {},
               transport: null, pair: null};
  let transport = null;
  report.forEach((s) => {
    if (s.type === "inbound-rtp") {
      out.inbound[s.kind] = pick(s, ["packetsReceived", "packetsLost", "bytesReceived",
                                     "framesDecoded", "framesReceived", "framesDropped",
                                     "frameWidth", "frameHeight", "jitter",
                                     "totalSamplesReceived", "nackCount"]);
    } else if (s.type === "outbound-rtp") {
      out.outbound[s.kind] = pick(s, ["packetsSent", "bytesSent", "framesEncoded",
                                      "framesSent", "retransmittedPacketsSent"]);
    } else if (s.type === "remote-inbound-rtp") {
      out.remoteInbound[s.kind] = pick(s, ["packetsLost", "fractionLost", "roundTripTime",
                                           "totalRoundTripTime",
                                           "roundTripTimeMeasurements"]);
    } else if (s.type === "transport") {
      transport = s;
    }
  });
  if (transport) {
    out.transport = pick(transport, ["dtlsState", "iceState", "bytesSent", "bytesReceived",
                                     "packetsSent", "packetsReceived",
                                     "selectedCandidatePairChanges"]);
    const pair = transport.selectedCandidatePairId &&
                 report.get(transport.selectedCandidatePairId);
    if (pair) {
      const local = report.get(pair.localCandidateId) || {};
      const remote = report.get(pair.remoteCandidateId) || {};
      out.pair = Object.assign(
          pick(pair, ["state", "nominated", "bytesSent", "bytesReceived", "packetsSent",
                      "packetsReceived", "currentRoundTripTime", "totalRoundTripTime",
                      "responsesReceived"]),
          {local: {type: local.candidateType, address: local.address, port: local.port,
                   protocol: local.protocol, relayProtocol: local.relayProtocol,
                   url: local.url},
           remote: {type: remote.candidateType, address: remote.address, port: remote.port,
                    protocol: remote.protocol}});
    }
  }
  return out;
}

// params: {iceServer: RTCIceServer, janusUrl, seconds (of media), stepTimeoutMs (bounds each
// wait: getUserMedia, each request, gathering, the answer, connecting), restart?: {lostMs,
// recoverMs} (see restartIce())}.
async function janusCall(params) {
  const t0 = performance.now();
  const result = {ok: false, phase: "media", samples: [], events: [], remoteTracks: [],
                  candidates: [], candidateErrors: [], log: []};
  window.janusProgress = result;
  const log = (...args) => {
    const line = `[${((performance.now() - t0) / 1000).toFixed(3)}s] ` + args.join(" ");
    console.log(line);
    result.log.push(line);
  };
  const enter = (phase) => { result.phase = phase; log(`phase: ${phase}`); };
  const step = params.stepTimeoutMs;
  let txn = 0;

  // One Janus API request, bounded by timeoutMs; an answer of type "error" throws with Janus's
  // reason.
  async function janus(url, message, method = "POST", timeoutMs = step) {
    const init = {method, cache: "no-store"};
    if (method === "POST") {
      init.body = JSON.stringify(Object.assign({transaction: `kturn-${++txn}`}, message));
    }
    const response = await withTimeout(fetch(url, init), timeoutMs, `${method} ${url}`);
    if (!response.ok) throw new Error(`${method} ${url}: HTTP ${response.status}`);
    const answer = await response.json();
    if (answer.janus === "error") {
      throw new Error(`${method} ${url}: Janus error ${answer.error.code} ${answer.error.reason}`);
    }
    return answer;
  }

  let pc = null;
  let stream = null;
  let sessionUrl = null;
  let polling = true;
  try {
    enter("media");
    stream = await withTimeout(navigator.mediaDevices.getUserMedia({audio: true, video: true}),
                               step, "getUserMedia");
    log(`local tracks: ${stream.getTracks().map((t) => `${t.kind} ${t.label}`).join(", ")}`);

    enter("session");
    const session = await janus(params.janusUrl, {janus: "create"});
    sessionUrl = `${params.janusUrl}/${session.data.id}`;
    const handle = await janus(sessionUrl, {janus: "attach", plugin: "janus.plugin.echotest"});
    const handleUrl = `${sessionUrl}/${handle.data.id}`;
    log(`session ${session.data.id}, echotest handle ${handle.data.id}`);

    // Janus's events, read by one long poll at a time until the call ends; an answer is
    // handed over through `answer`, one slot per offer sent. Bounded: polling stops with the
    // call, and a poll that fails ends the loop.
    let answer = slot();
    (async () => {
      for (let polls = 0; polling && polls < 1000; polls++) {
        let ev;
        try {
          // Janus answers a long poll with a keepalive after 30 s without events.
          ev = await janus(`${sessionUrl}?maxev=1&rid=${Date.now()}`, null, "GET", 35000);
        } catch (err) {
          if (polling) { log(`long poll: ${err}`); answer.reject(err); }
          return;
        }
        if (ev.janus === "keepalive") continue;
        const data = ev.plugindata ? JSON.stringify(ev.plugindata.data) : "";
        log(`janus event: ${ev.janus} ${data}${ev.type ? " " + ev.type : ""}` +
            `${ev.receiving !== undefined ? " receiving " + ev.receiving : ""}`);
        result.events.push(ev.janus + (ev.type ? `:${ev.type}` : ""));
        if (ev.jsep) answer.resolve(ev.jsep);
        if (ev.janus === "hangup") answer.reject(new Error(`Janus hung up: ${ev.reason}`));
      }
    })();

    enter("gathering");
    pc = new RTCPeerConnection({iceServers: [params.iceServer], iceTransportPolicy: "relay",
                                bundlePolicy: "max-bundle", rtcpMuxPolicy: "require"});
    let onFailed;
    const failed = new Promise((_, reject) => { onFailed = reject; });
    failed.catch(() => {});
    // The offer goes out when gathering is complete or GATHER_SETTLE_MS after the first relay
    // candidate, whichever comes first: Chromium also asks the TURN server from a socket on
    // every other interface of the host, and an allocation whose answers do not come from the
    // address it sent to (tests/interop/README.md) holds "complete" back for its whole STUN
    // retransmission schedule (~40 s).
    let onGathered;
    const gathered = new Promise((resolve) => { onGathered = resolve; });
    pc.onicegatheringstatechange = () => {
      if (pc.iceGatheringState === "complete") onGathered("complete");
    };
    // During an ICE restart each new candidate also goes to restartCandidate (restartIce()).
    let restartCandidate = null;
    pc.onicecandidate = (e) => {
      if (e.candidate && e.candidate.candidate) {
        log(`candidate: ${e.candidate.candidate}`);
        result.candidates.push(e.candidate.candidate);
        if (result.candidates.length === 1) {
          setTimeout(() => onGathered("settled"), GATHER_SETTLE_MS);
        }
        if (restartCandidate) restartCandidate(e.candidate);
      } else if (restartCandidate) {
        restartCandidate(null);  // gathering complete
      }
    };
    pc.onicecandidateerror = (e) => {
      log(`icecandidateerror: ${e.url} ${e.errorCode} ${e.errorText}`);
      result.candidateErrors.push({url: e.url, code: e.errorCode, text: e.errorText});
    };
    const iceStates = [];  // [Date.now(), state], every change
    pc.oniceconnectionstatechange = () => {
      log(`ice: ${pc.iceConnectionState}`);
      iceStates.push([Date.now(), pc.iceConnectionState]);
    };
    pc.onconnectionstatechange = () => {
      log(`connection: ${pc.connectionState}`);
      if (pc.connectionState === "failed") {
        onFailed(new Error(`the connection failed (ICE ${pc.iceConnectionState})`));
      }
    };
    const video = document.getElementById("remote");
    pc.ontrack = (e) => {
      log(`remote track: ${e.track.kind}`);
      result.remoteTracks.push(e.track.kind);
      if (e.track.kind === "video" && video) {
        video.srcObject = e.streams[0] || new MediaStream([e.track]);
        video.play().catch((err) => log(`video.play: ${err}`));
      }
    };
    for (const track of stream.getTracks()) pc.addTrack(track, stream);
    await pc.setLocalDescription(await pc.createOffer());
    if (pc.iceGatheringState !== "complete") {
      const how = await withTimeout(gathered, step, "a relay candidate");
      log(`gathering ${how}: ${result.candidates.length} candidate(s)`);
    }
    if (result.candidates.length === 0) {
      const why = result.candidateErrors.map((x) => `${x.url} ${x.code} ${x.text}`).join("; ");
      throw new Error("no relay candidate from the TURN server" + (why ? ` (${why})` : ""));
    }

    enter("answer");
    const ack = await janus(handleUrl, {janus: "message", body: {audio: true, video: true},
                                        jsep: {type: "offer", sdp: pc.localDescription.sdp}});
    log(`offer sent: ${ack.janus}`);
    await janus(handleUrl, {janus: "trickle", candidate: {completed: true}});
    const jsep = await withTimeout(answer.promise, step, "Janus's answer");
    result.answerCandidates = jsep.sdp.split(/\r?\n/).filter((l) => l.startsWith("a=candidate"));
    log(`answer candidates: ${result.answerCandidates.join(" | ")}`);
    await pc.setRemoteDescription(jsep);

    // The ICE restart of params.restart = {lostMs, recoverMs}: waits up to lostMs for ICE to
    // report the path lost ("disconnected" or "failed": the TURN server or its route is gone),
    // then restarts as a browser application would: restartIce(), a new offer (fresh ICE
    // credentials, a fresh allocation at the TURN server the ICE server's address reaches
    // now), sent to Janus at once with each relay candidate trickled after it (Janus uses the
    // candidates of a renegotiated SDP only when they come as trickles), Janus's answer; then
    // polls getStats until inbound RTP of every kind grows again, all within recoverMs of the
    // loss.
    // Throws if any of that does not happen in time; result.restart says how far it got.
    async function restartIce(bounds) {
      const r = {iceStates};
      result.restart = r;
      const lostStates = ["disconnected", "failed"];
      if (!lostStates.includes(pc.iceConnectionState)) {
        await withTimeout(new Promise((resolve) => pc.addEventListener(
            "iceconnectionstatechange", () => {
              if (lostStates.includes(pc.iceConnectionState)) resolve();
            })), bounds.lostMs, "ICE to report the path lost");
      }
      r.lostAt = Date.now();
      // RTP packets received by kind; media is back when every kind grows again (the first
      // packet of each also counts the outage's gap in its packetsLost).
      const inbound = (sample) => Object.fromEntries(Object.entries(sample.inbound)
          .map(([kind, s]) => [kind, s.packetsReceived || 0]));
      r.packetsAtLoss = inbound(await summarize(pc));
      const flowing = (now) => Object.entries(r.packetsAtLoss)
          .every(([kind, count]) => (now[kind] || 0) > count);
      enter("restart");
      const deadline = r.lostAt + bounds.recoverMs;
      const left = () => Math.max(1, deadline - Date.now());

      // Candidates gathered before Janus has the offer wait in `queued`.
      const queued = [];
      let sendCandidate = (c) => queued.push(c);
      const fresh = [];
      let trickles = Promise.resolve();
      let gatheringDone;
      const gathered = new Promise((resolve) => { gatheringDone = resolve; });
      restartCandidate = (c) => {
        if (c === null) { gatheringDone(); return; }
        if (fresh.length === 0) {
          r.candidateAt = Date.now();
          setTimeout(gatheringDone, GATHER_SETTLE_MS);
        }
        fresh.push(c.candidate);
        sendCandidate(c);
      };
      pc.restartIce();
      await pc.setLocalDescription(await pc.createOffer({iceRestart: true}));
      r.offerAt = Date.now();
      answer = slot();
      const ack = await janus(handleUrl, {janus: "message",
                                          body: {audio: true, video: true},
                                          jsep: {type: "offer", sdp: pc.localDescription.sdp}},
                             "POST", left());
      log(`restart offer sent: ${ack.janus}`);
      sendCandidate = (c) => {
        trickles = trickles.then(() => janus(handleUrl, {janus: "trickle", candidate: {
          candidate: c.candidate, sdpMid: c.sdpMid, sdpMLineIndex: c.sdpMLineIndex}},
                                             "POST", left()));
      };
      queued.splice(0).forEach(sendCandidate);
      const jsep = await withTimeout(answer.promise, left(), "Janus's answer to the restart");
      r.answerAt = Date.now();
      await pc.setRemoteDescription(jsep);
      await withTimeout(gathered, left(), "a fresh relay candidate");
      trickles = trickles.then(() => janus(handleUrl, {janus: "trickle",
                                                       candidate: {completed: true}},
                                           "POST", left()));
      await withTimeout(trickles, left(), "Janus to take the trickled candidates");
      restartCandidate = null;
      r.candidates = fresh;
      log(`restart: ${fresh.length} fresh candidate(s) trickled`);
      for (;;) {
        if (["connected", "completed"].includes(pc.iceConnectionState) && !r.connectedAt) {
          r.connectedAt = Date.now();
        }
        if (r.connectedAt && flowing(inbound(await summarize(pc)))) break;
        if (Date.now() >= deadline) {
          throw new Error(`no media within ${bounds.recoverMs} ms of the loss after the ICE ` +
                          `restart (ICE ${pc.iceConnectionState})`);
        }
        await sleep(50);
      }
      r.mediaAt = Date.now();
      log(`restart: media again ${r.mediaAt - r.lostAt} ms after ICE reported the loss`);
      enter("call");
    }

    enter("connecting");
    if (pc.connectionState !== "connected") {
      const connected = new Promise((resolve) => {
        pc.addEventListener("connectionstatechange", () => {
          if (pc.connectionState === "connected") resolve();
        });
      });
      await withTimeout(Promise.race([connected, failed]), step, "the connection");
    }

    enter("call");
    const half = params.seconds * 500;
    if (params.restart) {
      await sleep(1000);
      result.samples.push(await summarize(pc));
      await restartIce(params.restart);
      result.samples.push(await summarize(pc));
      await sleep(2 * half);
    } else {
      await Promise.race([sleep(half), failed]);
      result.samples.push(await summarize(pc));
      await Promise.race([sleep(half), failed]);
    }
    result.samples.push(await summarize(pc));
    result.ok = true;
    enter("done");
  } catch (err) {
    result.error = String(err && err.message ? err.message : err);
    log(`failed in phase ${result.phase}: ${result.error}`);
    if (pc) {
      result.ice = {connection: pc.connectionState, ice: pc.iceConnectionState,
                    gathering: pc.iceGatheringState, signaling: pc.signalingState};
    }
  } finally {
    polling = false;
    if (pc) pc.close();
    if (stream) stream.getTracks().forEach((t) => t.stop());
    if (sessionUrl) {
      try {
        await janus(sessionUrl, {janus: "destroy"});
      } catch (err) {
        log(`destroy: ${err}`);
      }
    }
    result.seconds = (performance.now() - t0) / 1000;
  }
  return result;
}

window.janusCall = janusCall;
