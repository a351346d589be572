#!/usr/bin/node
// How soon the page at serve's `/` (src/serve/page.cpp, issue 49) shows its first answer, in real time: a headless
// Chromium loads the page's link while this script asks it over the DevTools protocol (a WebSocket client written
// here with Node's own modules: nothing from npm) for the page's own record, `data-first-answer-ms` (ms from the
// navigation's start to the answers rendered, performance.now()).
//
//   scripts/page-first-answer.js URL [ROUNDS]      e.g. http://127.0.0.1:8765/?model=resnet50&batch=32&device=a100-40gb
//
// Prints one line per round (each a fresh browser profile; the server's response cache is warm after the first) and
// the median. Needs `dnncast serve` running, Debian's chromium (scripts/setup.sh) and nodejs (`apt-get install nodejs`;
// a measurement, not part of `make test`).
"use strict";
const {spawn} = require("child_process");
const crypto = require("crypto");
const fs = require("fs");
const http = require("http");
const os = require("os");
const path = require("path");

function getJson(url) {
  return new Promise((resolve, reject) => {
    http.get(url, (reply) => {
      let body = "";
      reply.on("data", (chunk) => (body += chunk));
      reply.on("end", () => resolve(JSON.parse(body)));
    }).on("error", reject);
  });
}

// A minimal WebSocket client (RFC 6455: masked text frames out, unmasked frames in) for DevTools' JSON messages.
function connect(wsUrl) {
  return new Promise((resolve, reject) => {
    const url = new URL(wsUrl);
    const request = http.request({host: url.hostname, port: url.port, path: url.pathname, headers: {
      Connection: "Upgrade", Upgrade: "websocket", "Sec-WebSocket-Version": "13",
      "Sec-WebSocket-Key": crypto.randomBytes(16).toString("base64")}});
    request.on("upgrade", (reply, socket) => {
      let buffer = Buffer.alloc(0);
      const waiting = new Map();
      let next = 1;
      socket.on("data", (chunk) => {
        buffer = Buffer.concat([buffer, chunk]);
        while (buffer.length >= 2) {
          let length = buffer[1] & 0x7f, offset = 2;
          if (length === 126) { if (buffer.length < 4) return; length = buffer.readUInt16BE(2); offset = 4; }
          else if (length === 127) { if (buffer.length < 10) return; length = Number(buffer.readBigUInt64BE(2)); offset = 10; }
          if (buffer.length < offset + length) return;
          const message = JSON.parse(buffer.subarray(offset, offset + length).toString());
          buffer = buffer.subarray(offset + length);
          if (message.id && waiting.has(message.id)) { waiting.get(message.id)(message); waiting.delete(message.id); }
        }
      });
      const send = (method, params) => new Promise((done) => {
        const id = next++;
        waiting.set(id, done);
        const payload = Buffer.from(JSON.stringify({id, method, params}));
        const mask = crypto.randomBytes(4);
        const header = payload.length < 126 ? Buffer.from([0x81, 0x80 | payload.length])
                                            : Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 0xff]);
        const masked = Buffer.from(payload.map((byte, index) => byte ^ mask[index % 4]));
        socket.write(Buffer.concat([header, mask, masked]));
      });
      resolve({send, close: () => socket.destroy()});
    });
    request.on("error", reject);
    request.end();
  });
}

async function round(pageUrl) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "dnncast-page-"));
  const browser = spawn("chromium", ["--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
                                     "--user-data-dir=" + profile, pageUrl], {stdio: ["ignore", "ignore", "pipe"]});
  try {
    const port = await new Promise((resolve, reject) => {
      let text = "";
      browser.stderr.on("data", (chunk) => {
        text += chunk;
        const found = text.match(/DevTools listening on ws:\/\/127\.0\.0\.1:(\d+)\//);
        if (found) resolve(found[1]);
      });
      setTimeout(() => reject(new Error("chromium did not start")), 30000);
    });
    let page;
    for (let tries = 0; !page && tries < 200; ++tries) {
      page = (await getJson("http://127.0.0.1:" + port + "/json")).find((target) => target.type === "page");
      if (!page) await new Promise((wait) => setTimeout(wait, 10));
    }
    const devtools = await connect(page.webSocketDebuggerUrl);
    for (let tries = 0; tries < 3000; ++tries) {  // up to 30 s
      const reply = await devtools.send("Runtime.evaluate", {returnByValue: true,
        expression: "document.body ? [document.body.dataset.answered || '', document.body.dataset.firstAnswerMs || ''] : ['', '']"});
      const [answered, ms] = reply.result.result.value;
      if (answered === "error") throw new Error("the page showed an error: " + pageUrl);
      if (answered === "1") { devtools.close(); return Number(ms); }
      await new Promise((wait) => setTimeout(wait, 10));
    }
    throw new Error("no answer within 30 s");
  } finally {
    const exited = new Promise((done) => browser.once("exit", done));
    browser.kill();
    await exited;
    try {  // chromium's helpers may still be writing to the profile a moment after it exits
      fs.rmSync(profile, {recursive: true, force: true, maxRetries: 10, retryDelay: 100});
    } catch (error) { /* a temporary folder left behind */ }
  }
}

(async () => {
  const [pageUrl, rounds = "3"] = process.argv.slice(2);
  if (!pageUrl) { console.error("usage: scripts/page-first-answer.js URL [ROUNDS]"); process.exit(2); }
  const times = [];
  for (let index = 0; index < Number(rounds); ++index) {
    times.push(await round(pageUrl));
    console.log("round " + (index + 1) + ": first answer " + times[index] + " ms after the navigation started");
  }
  times.sort((a, b) => a - b);
  console.log("median " + times[Math.floor(times.length / 2)] + " ms of " + times.length);
})().catch((error) => { console.error("page-first-answer: " + error.message); process.exit(1); });
