#include "serve/page.h"

namespace dnncast::serve {

namespace {

// One file: the form, the answers, and the script that asks /v1/predict and /v1/memory. Every number shown is a
// field of those answers; the command lines are the CLI's spelling of the same request.
constexpr std::string_view kPage = R"PAGE(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy"
      content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:">
<title>dnncast: what will this training cost?</title>
<style>
body { font: 15px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 60em; padding: 0 1em; color: #222; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; }
form { display: grid; grid-template-columns: repeat(auto-fill, minmax(13em, 1fr)); gap: 0.6em 1em; }
label { display: flex; flex-direction: column; font-size: 0.85em; color: #555; }
input, select { font: inherit; padding: 0.25em; }
button { font: inherit; padding: 0.4em 1.2em; align-self: end; }
.answer { margin-top: 1.2em; }
.big { font-size: 1.6em; font-weight: 600; }
#error { color: #b00020; font-weight: 600; min-height: 1.2em; margin-top: 1em; }
#bar { position: relative; display: flex; height: 2.2em; background: #f3f3f3; margin: 0.5em 0 0.3em; }
#bar span { display: block; height: 100%; }
#limit { position: absolute; top: -0.4em; bottom: -0.4em; width: 2px; background: #b00020; }
#legend { display: flex; flex-wrap: wrap; gap: 0.3em 1.2em; font-size: 0.85em; }
#legend i { display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.3em; vertical-align: -0.1em; }
code { display: block; background: #f6f6f6; padding: 0.4em; margin: 0.3em 0; word-break: break-all; font-size: 0.85em; }
</style>
</head>
<body>
<h1>dnncast: what will this training cost?</h1>
<p>Time per iteration and peak memory of training a model, forecast by this server's <code style="display:inline">/v1</code>
API (the same answers as <code style="display:inline">dnncast predict --json</code> and <code style="display:inline">dnncast memory --json</code>).</p>
<form id="question">
<label>model (zoo name, Hub id ORG/NAME, synthetic:SEED)<input id="model" placeholder="resnet50"></label>
<label>or a file: config.json, graph JSON or ONNX<input id="file" type="file" accept=".json,.onnx"></label>
<label>batch<input id="batch" placeholder="32"></label>
<label>sequence length (text models)<input id="seq" placeholder=""></label>
<label>image input CxHxW<input id="input" placeholder="3x224x224"></label>
<label>precision<select id="precision"><option value="">fp32</option><option>bf16</option><option>bf16-pure</option><option>fp16</option></select></label>
<label>optimizer<select id="optimizer"><option value="">sgd</option><option>adam</option><option>adamw</option></select></label>
<label>device (a GPU of /v1/devices, or cpu)<input id="device" list="gpus" placeholder="cpu"><datalist id="gpus"></datalist></label>
<label>LoRA (r=16,targets=q,v)<input id="lora"></label>
<label>QLoRA base<select id="quantize"><option value="">not quantized</option><option>nf4</option><option>int8</option></select></label>
<label>activation checkpointing<input id="checkpointing" type="checkbox"></label>
<label>samples per epoch<input id="epoch_samples" placeholder=""></label>
<button type="submit">Forecast</button>
</form>
<div id="error" role="alert"></div>
<div class="answer">
<div>time per iteration: <span class="big" id="time-ms">-</span> ms
  <span id="time-interval"></span> <span id="time-basis"></span></div>
<div>time per epoch: <span id="epoch"></span></div>
<div>memory needed: <span class="big" id="memory-total">-</span> <span id="memory-fits"></span></div>
<div id="bar"></div>
<div id="legend"></div>
<div>largest batch that fits: <span id="largest-batch">-</span></div>
<div>answered in <span id="elapsed">-</span></div>
<h2 style="font-size:1.1em">Across the cloud's GPUs (<span id="compare-count">-</span> instances; cost of <span id="compare-iterations">-</span> iterations)</h2>
<svg id="scatter" width="640" height="260" role="img" aria-label="cost against time per instance"></svg>
<table id="compare-table" style="border-collapse:collapse;font-size:0.85em"><thead><tr><th align="left">instance</th>
<th align="left">GPU</th><th align="right">time per iteration</th><th align="right">$ per hour</th><th align="right">cost</th>
<th>fits</th><th>Pareto</th></tr></thead><tbody></tbody></table>
<p>The same question on the command line:</p>
<code id="command-predict"></code>
<code id="command-memory"></code>
<code id="command-compare"></code>
<p>This question as a link: <a id="link" href="#"></a></p>
</div>
<script>
"use strict";
const FIELDS = ["model", "batch", "seq", "input", "precision", "optimizer", "device", "lora", "quantize", "checkpointing",
                "epoch_samples"];
const INTEGERS = ["batch", "seq", "epoch_samples"];
const COLOURS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
const $ = (id) => document.getElementById(id);

function gib(bytes) {
  return bytes >= 2 ** 30 ? (bytes / 2 ** 30).toFixed(2) + " GiB" : (bytes / 2 ** 20).toFixed(1) + " MiB";
}

// The request in serve's field names: what the form holds, integers where typed as integers.
function question() {
  const asked = {};
  for (const name of FIELDS) {
    const element = $(name);
    if (name === "checkpointing") {
      if (element.checked) asked[name] = true;
      continue;
    }
    const value = element.value.trim();
    if (value === "") continue;
    asked[name] = INTEGERS.includes(name) && /^[0-9]+$/.test(value) ? Number(value) : value;
  }
  return asked;
}

function commandLine(command, asked, file) {
  const words = ["dnncast", command, file ? file.name : asked.model];
  for (const [key, value] of Object.entries(asked)) {
    if (key === "model") continue;
    const flag = "--" + (key === "max_batch_bytes" ? "max-batch" : key.replace(/_/g, "-"));
    if (value === true) words.push(flag); else words.push(flag, String(value));
  }
  return words.join(" ") + " --json";
}

// The model as the server takes it: its name in the question, or an uploaded file (a config.json as field "config",
// a graph JSON as "graph", ONNX bytes as the body with the other fields in the query).
async function uploaded(file) {
  if (!file) return null;
  if (file.name.toLowerCase().endsWith(".onnx")) return {onnx: await file.arrayBuffer(), name: file.name};
  let document;
  try {
    document = JSON.parse(await file.text());
  } catch (error) {
    throw new Error(file.name + ": not JSON (" + error.message + ")");
  }
  return document && document.model_type !== undefined ? {config: document} : {graph: document};
}

async function ask(route, question, upload) {
  let url = "/v1/" + route, body, type = "application/json";
  if (upload && upload.onnx) {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(question)) if (key !== "model") query.set(key, String(value));
    query.set("name", upload.name.replace(/\.onnx$/i, ""));
    url += "?" + query.toString();
    body = upload.onnx;
    type = "application/onnx";
  } else {
    const fields = Object.assign({}, question);
    if (upload) {
      delete fields.model;
      Object.assign(fields, upload);
    }
    body = JSON.stringify(fields);
  }
  const reply = await fetch(url, {method: "POST", headers: {"Content-Type": type}, body});
  const answer = await reply.json();
  if (!reply.ok) throw new Error(answer.error || ("HTTP " + reply.status));
  return answer;
}

// The parts of what must fit: the tensors at the peak by kind, and on a GPU what the caching allocator, the
// libraries and the context add (the parts of memory.cuda), up to required_bytes.
function memoryParts(memory) {
  const b = memory.breakdown;
  const parts = [["parameters", b.parameter_bytes], ["gradients", b.gradient_bytes],
                 ["optimizer state", b.optimizer_state_bytes], ["activations", b.activation_bytes],
                 ["transient", b.transient_bytes], ["buffers and inputs", b.buffer_and_input_bytes]];
  if (memory.cuda && memory.cuda.parts) {
    const c = memory.cuda.parts;
    const tensors = parts.reduce((sum, part) => sum + part[1], 0);
    parts.push(["allocator rounding", Math.max(0, c.tensor_bytes - tensors)]);
    parts.push(["allocator reserve", c.allocator_reserve_bytes]);
    parts.push(["workspaces", c.workspace_bytes + (c.cudnn_workspace_bytes || 0)]);
    parts.push(["context", c.context_bytes + (c.cudnn_context_bytes || 0)]);
    parts.push(["margin", c.margin_bytes || 0]);
  }
  return parts.filter((part) => part[1] > 0);
}

function drawMemory(memory) {
  const total = memory.required_bytes;
  const limit = memory.fits ? memory.fits.limit_bytes : 0;
  const scale = Math.max(total, limit);
  $("memory-total").textContent = gib(total);
  $("memory-fits").textContent = memory.fits ? (memory.fits.fits ? "fits in " : "does NOT fit in ") + gib(limit) : "";
  const bar = $("bar"), legend = $("legend");
  bar.textContent = "";
  legend.textContent = "";
  memoryParts(memory).forEach(([name, bytes], index) => {
    const piece = document.createElement("span");
    piece.style.width = (100 * bytes / scale) + "%";
    piece.style.background = COLOURS[index % COLOURS.length];
    piece.title = name + ": " + gib(bytes);
    piece.dataset.part = name;
    piece.dataset.bytes = String(bytes);
    bar.appendChild(piece);
    const item = document.createElement("span");
    const swatch = document.createElement("i");
    swatch.style.background = piece.style.background;
    item.appendChild(swatch);
    item.appendChild(document.createTextNode(name + " " + gib(bytes)));
    legend.appendChild(item);
  });
  if (limit > 0) {
    const line = document.createElement("div");
    line.id = "limit";
    line.style.left = (100 * limit / scale) + "%";
    line.title = "the GPU's memory: " + gib(limit);
    bar.appendChild(line);
  }
  $("largest-batch").textContent = memory.max_batch ? String(memory.max_batch.batch) : "- (give a GPU)";
}

// compare's rows: the table (cheapest first) and the cost-versus-time scatter, the Pareto front marked.
function drawCompare(comparison) {
  const rows = comparison.rows.slice().sort((a, b) => a.total_usd - b.total_usd);
  $("compare-count").textContent = String(rows.length);
  $("compare-iterations").textContent = String(rows.length ? rows[0].iterations : 0);
  const body = $("compare-table").tBodies[0];
  body.textContent = "";
  for (const row of rows) {
    const line = body.insertRow();
    line.className = "instance";
    const cells = [row.provider + " " + row.instance_type, row.gpu_count + "x " + row.gpu,
                   row.time_ms.toFixed(1) + " ms", row.price_usd_per_hour.toFixed(2), "$" + row.total_usd.toFixed(4),
                   row.fits ? "yes" : "no", row.on_pareto_front ? "front" : ""];
    cells.forEach((text, index) => {
      const cell = line.insertCell();
      cell.textContent = text;
      if (index >= 2 && index <= 4) cell.align = "right";
    });
  }
  const svg = $("scatter");
  svg.textContent = "";
  const width = 640, height = 260, pad = 40;
  const maxTime = Math.max(...rows.map((row) => row.total_hours), 1e-12);
  const maxCost = Math.max(...rows.map((row) => row.total_usd), 1e-12);
  for (const row of rows) {
    const point = document.createElementNS(svg.namespaceURI, "circle");
    point.setAttribute("class", row.on_pareto_front ? "point front" : "point");
    point.setAttribute("cx", String(pad + (width - 2 * pad) * row.total_hours / maxTime));
    point.setAttribute("cy", String(height - pad - (height - 2 * pad) * row.total_usd / maxCost));
    point.setAttribute("r", row.on_pareto_front ? "5" : "3");
    point.setAttribute("fill", row.fits ? (row.on_pareto_front ? "#e15759" : "#4e79a7") : "#bab0ac");
    const title = document.createElementNS(svg.namespaceURI, "title");
    title.textContent = row.provider + " " + row.instance_type + ": " + row.time_ms.toFixed(1) + " ms, $" +
                        row.total_usd.toFixed(4);
    point.appendChild(title);
    svg.appendChild(point);
  }
  const axis = (x, y, text) => {
    const label = document.createElementNS(svg.namespaceURI, "text");
    label.setAttribute("x", String(x));
    label.setAttribute("y", String(y));
    label.setAttribute("font-size", "11");
    label.textContent = text;
    svg.appendChild(label);
  };
  axis(pad, height - 8, "time of the run (0 - " + (maxTime * 3600).toFixed(1) + " s)");
  axis(4, 14, "cost (0 - $" + maxCost.toFixed(4) + ")");
}

async function forecast() {
  const asked = question();
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(asked)) query.set(key, value === true ? "1" : String(value));
  history.replaceState(null, "", "?" + query.toString());
  $("link").href = location.href;
  $("link").textContent = location.href;
  const gpu = asked.device !== undefined && asked.device !== "cpu";
  const file = $("file").files[0];
  const timeQuestion = Object.assign({}, asked), memoryQuestion = Object.assign({}, asked);
  delete memoryQuestion.epoch_samples;  // memory has no epoch
  if (!gpu) delete timeQuestion.device;
  if (gpu) Object.assign(memoryQuestion, {fits: "gpu", max_batch_bytes: "gpu"});
  $("command-predict").textContent = commandLine("predict", timeQuestion, file);
  $("command-memory").textContent = commandLine("memory", memoryQuestion, file);
  const compareQuestion = Object.assign({}, asked);
  delete compareQuestion.device;  // every GPU of the catalogue
  $("command-compare").textContent = asked.batch === undefined ? "" : commandLine("compare", compareQuestion, file);
  for (const id of ["error", "time-interval", "time-basis", "epoch", "memory-fits", "bar", "legend", "scatter"])
    $(id).textContent = "";
  $("compare-table").tBodies[0].textContent = "";
  for (const id of ["time-ms", "memory-total", "largest-batch", "elapsed"]) $(id).textContent = "-";
  const started = performance.now();
  try {
    const upload = await uploaded(file);
    // compare (every instance of the catalogue) is asked at once but drawn when it comes, after the first answer.
    const comparing = asked.batch === undefined ? null : ask("compare", compareQuestion, upload);
    const [time, memory] = await Promise.all([ask("predict", timeQuestion, upload), ask("memory", memoryQuestion, upload)]);
    $("time-ms").textContent = time.time_ms.toFixed(1);
    $("time-interval").textContent = "(90% interval " + time.time_ms_low.toFixed(1) + " - " +
                                     time.time_ms_high.toFixed(1) + " ms)";
    $("time-basis").textContent = time.device_name ? "on " + time.device_name : "on " + (time.env || "this CPU");
    $("epoch").textContent = time.epoch_s ? time.epoch_s.toFixed(1) + " s" : "- (give the samples per epoch)";
    drawMemory(memory);
    $("elapsed").textContent = Math.round(performance.now() - started) + " ms";
    // The first answer's time from the navigation's start (scripts/page-first-answer.js reads it).
    if (!document.body.dataset.firstAnswerMs) document.body.dataset.firstAnswerMs = String(Math.round(performance.now()));
    document.body.dataset.answered = "1";
    if (comparing) {
      drawCompare(await comparing);
      document.body.dataset.compared = "1";
    }
  } catch (error) {
    $("error").textContent = error.message;
    document.body.dataset.answered = "error";
  }
}

async function listGpus() {
  try {
    const reply = await fetch("/v1/devices");
    const devices = await reply.json();
    for (const gpu of devices.gpus || []) {
      const option = document.createElement("option");
      option.value = gpu.name;
      $("gpus").appendChild(option);
    }
  } catch (error) { /* the list is a convenience: the field takes any name */ }
}

$("question").addEventListener("submit", (event) => { event.preventDefault(); forecast(); });
const given = new URLSearchParams(location.search);
for (const name of FIELDS) {
  if (!given.has(name)) continue;
  if (name === "checkpointing") $(name).checked = given.get(name) === "1" || given.get(name) === "true";
  else $(name).value = given.get(name);
}
listGpus();
if (given.has("model")) forecast();
</script>
</body>
</html>
)PAGE";

}  // namespace

std::string_view serve_page() { return kPage; }

}  // namespace dnncast::serve
