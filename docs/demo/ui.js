// The demo page's form (index.html): checks the pasted ICE server entry and the numbers, runs
// runEcho (echo.js) and shows its progress and result. #status's data-phase is "idle", then
// "gathering", "connecting", "open" while a run goes, and "done" or "failed" once everything
// of the run is on the page; its data-run counts the clicks on Connect, so a script that
// clicked knows which run the phase belongs to.

"use strict";

(function () {
  const $ = (id) => document.getElementById(id);

  // What an icecandidateerror code most likely means with a local kturnd.
  const HINTS = {
    401: "the TURN server refused the credential: it expired, or it is from before kturnd's " +
         "last start (the secret changes at every start); paste the entry kturnd printed " +
         "this time",
    701: "no answer from the TURN server: is kturnd running, and is the URL the one it " +
         "printed? (for turns: also a certificate the browser does not trust)",
  };

  // The RTCIceServer in the textarea, or an Error whose message tells the user what to fix.
  function parseIceServer(text) {
    const trimmed = text.trim();
    if (!trimmed) {
      throw new Error("Paste the ICE server entry kturnd printed (one line of JSON).");
    }
    let entry;
    try {
      entry = JSON.parse(trimmed);
    } catch (err) {
      throw new Error(`The ICE server entry is not valid JSON: ${err.message}`);
    }
    if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
      throw new Error('The ICE server entry must be one JSON object: ' +
                      '{"credential": "...", "urls": [...], "username": "..."}.');
    }
    if (!("urls" in entry)) throw new Error('The ICE server entry has no "urls" field.');
    const urls = typeof entry.urls === "string" ? [entry.urls] : entry.urls;
    if (!Array.isArray(urls) || urls.length === 0 ||
        !urls.every((u) => typeof u === "string")) {
      throw new Error('"urls" must be a URL or a list of URLs (strings).');
    }
    if (!urls.some((u) => /^turns?:/i.test(u))) {
      throw new Error('"urls" has no turn: or turns: URL; relay-only connections need a ' +
                      "TURN server.");
    }
    for (const field of ["username", "credential"]) {
      if (!(field in entry)) {
        throw new Error(`The ICE server entry has no "${field}" field (a TURN server needs ` +
                        "one).");
      }
      if (typeof entry[field] !== "string") throw new Error(`"${field}" must be a string.`);
    }
    return {urls, username: entry.username, credential: entry.credential};
  }

  // An Error about one field of the form (its id in .field).
  function fieldError(field, message) {
    return Object.assign(new Error(message), {field});
  }

  // An integer field's value within its min/max, or a fieldError naming the field.
  function integerField(id, name) {
    const input = $(id);
    const value = Number(input.value);
    const min = Number(input.min);
    const max = Number(input.max);
    if (input.value.trim() === "" || !Number.isInteger(value) || value < min || value > max) {
      throw fieldError(id, `${name} must be a whole number from ${min} to ${max}.`);
    }
    return value;
  }

  function setPhase(phase, reason = "") {
    $("status").dataset.phase = phase;
    $("phase").textContent = phase;
    $("reason").textContent = reason;
  }

  // Shows message next to the field it is about (under the entry, or under the numbers) and
  // marks that field invalid; with no field, clears every such mark.
  function setInputError(field, message) {
    for (const id of ["ice-server", "count", "size", "timeout"]) {
      $(id).removeAttribute("aria-invalid");
    }
    $("ice-server-error").textContent = field === "ice-server" ? message : "";
    $("numbers-error").textContent = field && field !== "ice-server" ? message : "";
    if (field) $(field).setAttribute("aria-invalid", "true");
  }

  function log(line) {
    $("log").textContent += line + "\n";
  }

  const ms = (x) => (x === undefined || x === null ? "-" : x.toFixed(1));
  const text = (x) => (x === undefined || x === null || x === "" ? "-" : String(x));

  function showRtt(rtt) {
    $("rtt-min").textContent = ms(rtt && rtt.min);
    $("rtt-median").textContent = ms(rtt && rtt.median);
    $("rtt-max").textContent = ms(rtt && rtt.max);
  }

  function showPairs(stats) {
    for (const side of ["a", "b"]) {
      const pair = (stats || {})[side];
      for (const end of ["local", "remote"]) {
        const c = pair ? pair[end] : {};
        $(`${side}-${end}-type`).textContent = text(c.type);
        $(`${side}-${end}-address`).textContent = text(c.address);
        $(`${side}-${end}-port`).textContent = text(c.port);
      }
      $(`${side}-local-relay-protocol`).textContent = text(pair && pair.local.relayProtocol);
    }
  }

  function showCandidateErrors(errors) {
    const list = $("turn-errors");
    list.replaceChildren();
    for (const e of errors) {
      const item = document.createElement("li");
      item.textContent = `${e.side}: ${e.url} ${e.code} ${e.text}`;
      list.append(item);
    }
    $("turn-errors-box").hidden = errors.length === 0;
  }

  // Clears what a previous run left on the page.
  function reset(total) {
    window.kturnDemo.result = null;
    setInputError(null, "");
    $("log").textContent = "";
    $("echoed").textContent = "0";
    $("total").textContent = String(total);
    showRtt(null);
    showPairs(null);
    showCandidateErrors([]);
  }

  const DURING = {gathering: "while gathering candidates", connecting: "while connecting",
                  open: "while echoing"};

  function failureReason(result) {
    let reason = `${DURING[result.phase] || result.phase}: ${result.error}`;
    const codes = new Set(result.candidateErrors.map((e) => e.code));
    for (const code of codes) {
      if (HINTS[code]) reason += ` (error ${code}: ${HINTS[code]})`;
    }
    if (result.phase === "gathering" && codes.size === 0) {
      reason += " (no answer from the TURN server yet: is kturnd running, and is the URL the " +
                "one it printed?)";
    }
    return reason;
  }

  async function connect() {
    const button = $("connect");
    $("status").dataset.run = String(Number($("status").dataset.run) + 1);
    reset(0);
    let params;
    try {
      if (typeof RTCPeerConnection === "undefined") {
        throw new Error("This browser has no WebRTC (RTCPeerConnection).");
      }
      let iceServer;
      try {
        iceServer = parseIceServer($("ice-server").value);
      } catch (err) {
        throw fieldError("ice-server", err.message);
      }
      params = {iceServer,
                count: integerField("count", "Messages"),
                size: integerField("size", "Bytes per message"),
                timeoutMs: 1000 * integerField("timeout", "Time limit per step")};
    } catch (err) {
      setInputError(err.field, err.message);
      setPhase("failed", err.message);
      return;
    }
    $("total").textContent = String(params.count);
    button.disabled = true;
    let result;
    try {
      result = await runEcho(params, {
        log,
        phase: (phase) => setPhase(phase),
        echoed: (n) => { $("echoed").textContent = String(n); },
      });
    } finally {
      button.disabled = false;
    }
    window.kturnDemo.result = result;  // the whole result, for the console and the test
    $("echoed").textContent = String(result.echoed);
    showRtt(result.rtt);
    showPairs(result.stats);
    showCandidateErrors(result.candidateErrors);
    if (result.ok) setPhase("done", `${result.echoed} messages echoed through the TURN server`);
    else setPhase("failed", failureReason(result));
  }

  window.kturnDemo = {result: null, parseIceServer};
  $("form").addEventListener("submit", (e) => {
    e.preventDefault();
    connect();
  });
  setPhase("idle");
})();
