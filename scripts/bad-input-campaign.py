#!/usr/bin/python3
"""Bad-input campaign of issue 51: no input takes the server down, and every option refuses nonsense in one line.

    scripts/bad-input-campaign.py [BUILD] [--out FILE.tsv] [--only REGEX]

BUILD is the build folder (default build). Starts `BUILD/dnncast serve --listen 127.0.0.1:0`, then runs a table
of bad inputs (JSON nested 100,000 deep, Hugging Face configs with absurd sizes or typos, empty, zero, negative
and past-64-bit option values, megabyte strings, a non-JSON body ...) through each front end a case has:
the CLI (BUILD/dnncast, stdin closed), serve (POST /v1/ROUTE) and the Python package (BUILD/python, one child
process per call so that a crash is seen, not suffered). A few valid requests on a tied model are run too and
must succeed. Each run is classified:

    refused       the wanted answer: CLI exit != 0 with one stderr line (notes aside); HTTP 4xx {"error": ...};
                  ValueError or TypeError in Python
    ok            a valid (expected-ok) request answered
    crash         killed by a signal; serve: the server died or stopped answering /healthz (it is restarted)
    hang          no answer within 120 s (serve: also 504)
    internal      "internal error", "terminate called" or a Traceback on stderr; HTTP 500 or a 4xx without a
                  JSON "error"; a Python exception other than ValueError/TypeError
    accepted      a bad request answered as if it were fine
    long message  an error message over 2,100 characters
    multi-line    a CLI refusal with no stderr line or with several
    failed        a valid request refused

Prints one line per case and front end, then a summary; exits 1 when any run is neither refused nor ok.
--out writes the table as TSV (case, channel, outcome, message); --only runs the cases whose name matches REGEX.
Bad files are generated in a temporary folder; nothing in the repository is written (calibrate gets --out).
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HF = os.path.join(ROOT, "tests", "models", "hf_configs")
EXAMPLES = os.path.join(ROOT, "data", "examples")
TIMEOUT = 120
LONG = 2100
CUT = 300
DEEP = "[" * 100_000 + "]" * 100_000  # JSON nested 100,000 deep
ARG_MAX_ONE = 131071  # Linux's limit on one argv string (MAX_ARG_STRLEN, 128 KiB with its NUL)
FAILURES = ("crash", "hang", "internal", "accepted", "long message", "multi-line", "failed")
CHANNELS = ("cli", "serve", "python")


class Case:
    """One bad (or, with ok=True, valid) input: its CLI arguments, its serve (route, body) and its Python call
    (function, args, kwargs); None where the front end has no form of it."""

    def __init__(self, name, cli=None, serve=None, python=None, ok=False):
        self.name, self.cli, self.serve, self.python, self.ok = name, cli, serve, python, ok


def write_config(folder, name, base, changes, raw=None):
    """A copy of tests/models/hf_configs/BASE with CHANGES; RAW: {key: JSON text} spliced in verbatim."""
    with open(os.path.join(HF, base)) as file:
        config = json.load(file)
    config.update(changes)
    config.update({key: f"@RAW-{key}@" for key in raw or {}})
    text = json.dumps(config, indent=1)
    for key, value in (raw or {}).items():
        text = text.replace(f'"@RAW-{key}@"', value)
    path = os.path.join(folder, name + ".json")
    with open(path, "w") as file:
        file.write(text)
    return path


def options(command, model, request):
    """A serve request's fields as CLI words: {"seq": 0} -> ["--seq", "0"]."""
    words = [command, model]
    for key, value in request.items():
        flag = "--" + key.replace("_", "-")
        words += [flag] if value is True else [flag, str(value)]
    return words


def same_three(name, command, model, request, python_model=None, serve_model="gpt2_small", **python_only):
    """A case spelled alike in all three front ends (Python's input_shape is serve's input)."""
    keywords = {("input_shape" if key == "input" else key): value for key, value in request.items()}
    if isinstance(keywords.get("input_shape"), str):
        keywords["input_shape"] = [int(dim) for dim in keywords["input_shape"].split("x")]
    keywords.update(python_only)
    positional = [python_model or model] + ([keywords.pop("batch")] if command in ("predict", "compare") else [])
    serve_body = dict({"model": model if os.sep not in model else serve_model}, **request)
    return Case(name, cli=options(command, model, request), serve=(command, serve_body),
                python=(command, positional, keywords))


def build_cases(tmp):
    gpt2, llama = os.path.join(HF, "gpt2.json"), os.path.join(HF, "llama-small-tied.json")
    jobs, cluster = os.path.join(EXAMPLES, "jobs.json"), os.path.join(EXAMPLES, "cluster.json")
    with open(jobs) as file:
        jobs_list = json.load(file)["jobs"]
    with open(cluster) as file:
        cluster_object = json.load(file)
    deep = DEEP.encode()
    cases = [Case(f"deep_body_{route}", serve=(route, deep))
             for route in ("predict", "memory", "inspect", "compare", "schedule")]
    cases += [
        Case("deep_unknown_field", serve=("predict", b'{"model": "resnet18", "batch": 1, "zzz": ' + deep + b"}")),
        Case("deep_graph_field", serve=("inspect", b'{"graph": ' + deep + b', "batch": 1}')),
        Case("deep_input_field", serve=("memory", b'{"model": "resnet18", "input": ' + deep + b"}")),
    ]
    for key in ("n_embd", "n_head", "_name_or_path"):
        path = write_config(tmp, f"gpt2_deep{key}", "gpt2.json", {}, raw={key: DEEP})
        cases.append(Case(f"hf_deep{key}_inspect", cli=["inspect", path, "--seq", "8"],
                          python=("inspect", [path], {"seq": 8})))
        cases.append(Case(f"hf_deep{key}_memory", cli=["memory", path, "--seq", "8"],
                          python=("memory", [path], {"seq": 8})))
    for label, layers in (("2p24", 2 ** 24), ("10001", 10001), ("0", 0), ("minus1", -1), ("string", "12"),
                          ("1.5", 1.5)):
        path = write_config(tmp, f"layers_{label}", "llama-small-tied.json", {"num_hidden_layers": layers})
        cases.append(Case(f"hf_layers_{label}", cli=["inspect", path, "--seq", "8"],
                          python=("inspect", [path], {"seq": 8})))
    for key in ("hidden_size", "vocab_size", "intermediate_size"):
        for label, size in (("2p31", 2 ** 31), ("2p24", 2 ** 24)):
            # max_position_embeddings raised so that --seq 65536 reaches the size checks.
            path = write_config(tmp, f"{key}_{label}", "llama-small-tied.json",
                                {key: size, "max_position_embeddings": 65536})
            cases.append(Case(f"hf_{key}_{label}", cli=["memory", path, "--seq", "65536", "--batch", "256"],
                              python=("memory", [path], {"seq": 65536, "batch": 256})))
    path = write_config(tmp, "gpt2_act_typo", "gpt2.json", {"activation_function": "geluXYZ"})
    cases.append(Case("hf_activation_typo", cli=["inspect", path, "--seq", "8"], python=("inspect", [path], {"seq": 8})))
    path = write_config(tmp, "llama_act_typo", "llama-small-tied.json", {"hidden_act": "gelu_newXYZ"})
    cases.append(Case("hf_hidden_act_typo", cli=["inspect", path, "--seq", "8"], python=("inspect", [path], {"seq": 8})))

    # Option nonsense, alike in the three front ends where each has the option.
    cases += [
        same_three("lora_empty", "memory", llama, {"seq": 8, "lora": ""}),
        same_three("attention_empty", "predict", llama, {"seq": 8, "batch": 2, "attention": ""}),
        same_three("attention_flash3", "inspect", "gpt2_small", {"seq": 16, "attention": "flash3"}),
        same_three("sharding_empty", "compare", "resnet18", {"batch": 8, "multi_gpu": True, "sharding": ""}),
        same_three("device_empty_predict", "predict", "resnet18", {"batch": 2, "device": ""}),
        same_three("device_empty_memory", "memory", "resnet18", {"batch": 2, "device": ""}),
        same_three("lora_duplicate_key", "memory", llama, {"seq": 8, "lora": "r=8,r=16"}),
        same_three("seq_zero", "memory", "gpt2_small", {"seq": 0}),
        same_three("seq_2p31", "inspect", "bert_base", {"seq": 2 ** 31}),
        same_three("classes_zero", "predict", "resnet18", {"batch": 8, "classes": 0}),
        same_three("batch_zero", "memory", "resnet18", {"batch": 0}),
        same_three("batch_2p41", "compare", "resnet18", {"batch": 2 ** 41}),
        same_three("input_zero_dim", "inspect", "resnet18", {"input": "3x0x4"}),
        same_three("input_two_dims", "inspect", "resnet18", {"input": "3x224"}),
        same_three("input_and_seq", "memory", "gpt2_small", {"input": "3x32x32", "seq": 32}),
        same_three("grad_accum_2p63", "predict", "resnet18", {"batch": 1, "grad_accum": 2 ** 63}),
        same_three("grad_accum_zero", "memory", "bert_base", {"seq": 32, "grad_accum": 0}),
        same_three("threads_minus1", "predict", "resnet18", {"batch": 8, "threads": -1}),
        same_three("model_unknown", "predict", "resnet5o", {"batch": 8}),
        same_three("optimizer_unknown", "predict", "resnet18", {"batch": 8, "optimizer": "lion"}),
        same_three("precision_fp8", "predict", "resnet18", {"batch": 8, "precision": "fp8"}),
    ]
    flag_values = (("5", 5), ("1e12", 1e12), ("minus1", -1))
    cases += [Case(f"checkpointing_{label}", cli=["memory", llama, "--seq", "8", f"--checkpointing={text}"],
                   serve=("memory", {"model": "gpt2_small", "seq": 8, "checkpointing": value}))
              for (label, value), text in zip(flag_values, ("5", "1e12", "-1"))]
    long_device = Case("device_long", cli=["predict", "resnet18", "--batch", "2", "--device", "x" * ARG_MAX_ONE],
                       serve=("predict", {"model": "resnet18", "batch": 2, "device": "x" * 1_000_000}),
                       python=("predict", ["resnet18", 2], {"device": "x" * 1_000_000}))
    cases += [
        long_device,
        Case("device_52mb", serve=("predict", {"model": "resnet18", "batch": 2, "device": "x" * 52_000_000})),
        Case("seed_negative", cli=["schedule", jobs, "--cluster", cluster, "--seed", "-1"],
             serve=("schedule", {"jobs": jobs_list, "cluster": cluster_object, "seed": -1})),
    ]
    # Issue 48's jobs of several GPUs: a gang of none, of more GPUs than any node, an unknown plan.
    for label, fields in (("gpus_zero", {"gpus": 0}), ("gpus_past_nodes", {"gpus": 64}),
                          ("parallel_unknown", {"gpus": 2, "parallel": "xp"})):
        gang_jobs = [dict(jobs_list[0], **fields)] + jobs_list[1:]
        path = os.path.join(tmp, f"jobs_{label}.json")
        with open(path, "w") as handle:
            json.dump({"jobs": gang_jobs}, handle)
        cases.append(Case(f"schedule_{label}", cli=["schedule", path, "--cluster", cluster],
                          serve=("schedule", {"jobs": gang_jobs, "cluster": cluster_object})))
    cases += [
        Case("calibrate_minutes_tiny", cli=["calibrate", "gpt2_small", "--seq", "16", "--batch", "1", "--minutes",
                                            "1e-300", "--out", os.path.join(tmp, "calibration_tiny")]),
        Case("model_path", serve=("predict", {"model": "../../etc/passwd", "batch": 2})),
    ]
    # `calibrate --refit` (issue 52) on a folder that holds no calibration, and on one whose host.json is broken.
    broken_calibration = os.path.join(tmp, "calibration_broken")
    os.makedirs(broken_calibration, exist_ok=True)
    with open(os.path.join(broken_calibration, "host.json"), "w") as handle:
        handle.write('{"format": "dnncast-host-calibration/1", "size_anchors": [[100, 0.5], [50, 0.5]]}')
    cases += [
        Case("refit_missing", cli=["calibrate", "--refit", os.path.join(tmp, "no_such_calibration")]),
        Case("refit_broken", cli=["calibrate", "--refit", broken_calibration]),
    ]
    # Issue 46's timm runs and map, and issue 45's kernel list, given broken.
    timm_bad = os.path.join(tmp, "timm_bad.csv")
    with open(timm_bad, "w") as handle:
        handle.write("model,batch,nvidia_smi_peak_mib,faketensor_estimate_mib\nresnet34,8,nan,1\n")
    map_bad = os.path.join(tmp, "timm_map_bad.csv")
    with open(map_bad, "w") as handle:
        handle.write("timm,zoo,input,attention,family,differs\nresnet34,resnet34,3x0x224,,resnet,\n")
    mlp = os.path.join(tmp, "mlp_two_rows.csv")
    with open(mlp, "w") as handle:
        handle.write("Filename,Activations-Params,Batch Size,Max GPU Memory (MiB)\n"
                     "input:4_output:2_depth:1_arch:pyramid_batch:8,\"[('linear', 2, 10)]\",8,1500\n"
                     "input:4_output:2_depth:1_arch:uniform_batch:8,\"[('linear', 2, 10)]\",16,1501\n")
    cases += [
        Case("timm_nan", cli=["calibrate-gpu-memory", "--data", mlp, "--timm", timm_bad]),
        Case("timm_map_zero_input", cli=["calibrate-gpu-memory", "--data", mlp, "--timm", timm_bad, "--timm-map",
                                         map_bad]),
        Case("timm_under_weight_zero", cli=["calibrate-gpu-memory", "--data", mlp, "--under-weight", "0"]),
        Case("model_1mb", serve=("predict", {"model": "x" * 1_000_000, "batch": 2})),
        Case("model_number", serve=("predict", {"model": 5, "batch": 2})),
        Case("body_not_json", serve=("predict", b"not json")),
        Case("body_array", serve=("predict", b'[{"model": "resnet18", "batch": 2}]')),
    ]
    # Valid requests on tied models (gpt2_small, llama-small-tied): every command must answer.
    cases += [
        Case("tied_calibrate", ok=True, cli=["calibrate", "gpt2_small", "--seq", "16", "--batch", "1", "--minutes",
                                             "0.1", "--out", os.path.join(tmp, "calibration")]),
        Case("tied_memory", ok=True, cli=["memory", llama, "--seq", "8"], python=("memory", [llama], {"seq": 8}),
             serve=("memory", {"model": "gpt2_small", "seq": 8})),
        Case("tied_inspect", ok=True, cli=["inspect", llama, "--seq", "8"], python=("inspect", [llama], {"seq": 8}),
             serve=("inspect", {"model": "gpt2_small", "seq": 8})),
        Case("tied_predict_t4", ok=True, cli=["predict", llama, "--seq", "8", "--batch", "2", "--device", "t4"],
             python=("predict", [llama, 2], {"seq": 8, "device": "t4"}),
             serve=("predict", {"model": "gpt2_small", "seq": 8, "batch": 2, "device": "t4"})),
    ]
    return cases


def judge_message(message, ok):
    """A refusal's outcome from its message: long message, failed (a valid request refused) or refused."""
    if len(message) > LONG:
        return "long message", f"({len(message)} chars) {message[:CUT]}"
    return ("failed" if ok else "refused"), message[:CUT]


def run_cli(build, case, env):
    try:
        done = subprocess.run([os.path.join(build, "dnncast")] + case.cli, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        return "hang", f"no exit within {TIMEOUT} s"
    stderr = done.stderr.decode(errors="replace")
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("note:")]
    if done.returncode < 0:
        return "crash", f"killed by {signal.Signals(-done.returncode).name}; {' | '.join(lines)[-CUT:]}"
    if any(mark in stderr for mark in ("internal error", "terminate called", "Traceback")):
        return "internal", " | ".join(lines)[:CUT]
    if done.returncode == 0:
        return ("ok", "") if case.ok else ("accepted", "exit 0: " + done.stdout.decode(errors="replace")[:200])
    if len(lines) != 1:
        return ("failed" if case.ok else "multi-line"), f"exit {done.returncode}, {len(lines)} lines: " + \
            " | ".join(lines)[:CUT]
    return judge_message(re.sub(r"^dnncast [\w-]+: error: ", "", lines[0]), case.ok)


class Server:
    """`dnncast serve` on a free loopback port; restarted when a case takes it down."""

    def __init__(self, build, env, log):
        self.build, self.env, self.log, self.process, self.port, self.restarts = build, env, log, None, None, 0

    def start(self):
        self.process = subprocess.Popen([os.path.join(self.build, "dnncast"), "serve", "--listen", "127.0.0.1:0"],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=open(self.log, "a"), text=True, env=self.env)
        line = self.process.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not found:
            raise RuntimeError(f"serve did not start: {line!r}")
        self.port = int(found.group(1))
        # Keep reading its stdout so that a full pipe never stalls it.
        threading.Thread(target=self.process.stdout.read, daemon=True).start()

    def alive(self):
        if self.process.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=10) as reply:
                return reply.status == 200
        except (OSError, urllib.error.URLError):
            return False

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def post(self, route, body):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/v1/{route}", data=data,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as reply:
                return reply.status, reply.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()


def run_serve(server, case):
    route, body = case.serve
    try:
        status, answer = server.post(route, body)
    except (socket.timeout, TimeoutError):
        status, answer = "timeout", b""
    except (OSError, urllib.error.URLError) as error:
        status, answer = "no answer", repr(error).encode()
    if not server.alive():
        tail = open(server.log, errors="replace").read().strip().splitlines()[-1:] or [""]
        server.stop()
        server.restarts += 1
        server.start()
        return "crash", f"server down after the request ({status}); its stderr: {tail[0][:CUT]}"
    if status == "timeout" or status == 504:
        return "hang", f"no answer within {TIMEOUT} s" if status == "timeout" else "504"
    if status == "no answer":
        return "internal", f"no HTTP answer: {answer.decode()[:CUT]}"
    if status == 200:
        return ("ok", "") if case.ok else ("accepted", "200: " + answer.decode(errors="replace")[:200])
    try:
        error = json.loads(answer).get("error")
    except (ValueError, AttributeError):
        error = None
    if status >= 500 or not isinstance(error, str):
        return "internal", f"{status}: {answer.decode(errors='replace')[:CUT]}"
    outcome, message = judge_message(error, case.ok)
    return outcome, f"{status} {message}"


CHILD = r"""
import json, sys, warnings
sys.path.insert(0, sys.argv[1])
import dnncast
function, args, kwargs = json.load(sys.stdin)
if isinstance(kwargs.get("input_shape"), list):
    kwargs["input_shape"] = tuple(kwargs["input_shape"])
warnings.simplefilter("ignore")
try:
    getattr(dnncast, function)(*args, **kwargs)
    outcome, message = "answered", ""
except (ValueError, TypeError) as error:
    outcome, message = "refused", f"{type(error).__name__}: {error}"
except Exception as error:
    outcome, message = "internal", f"{type(error).__name__}: {error}"
print(json.dumps([outcome, message]))
"""


def run_python(build, case, env):
    """The call in a child process (the spec on its stdin), so that a crash of the extension is seen."""
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, os.path.join(build, "python")],
                              input=json.dumps(case.python).encode(), capture_output=True, timeout=TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        return "hang", f"no return within {TIMEOUT} s"
    if done.returncode < 0:
        return "crash", f"killed by {signal.Signals(-done.returncode).name}"
    try:
        outcome, message = json.loads(done.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        return "internal", f"exit {done.returncode}: {done.stderr.decode(errors='replace').strip()[-CUT:]}"
    if outcome == "answered":
        return ("ok", "") if case.ok else ("accepted", "no exception")
    if outcome == "internal":
        return "internal", message[:CUT]
    return judge_message(message, case.ok)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", nargs="?", default="build", help="build folder (default build)")
    parser.add_argument("--out", help="write the table here as TSV")
    parser.add_argument("--only", help="run only the cases whose name matches this regular expression")
    arguments = parser.parse_args()
    build = os.path.abspath(arguments.build)
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="bad-input-") as tmp:
        env = dict(os.environ, DNNCAST_CALIBRATIONS=os.path.join(tmp, "calibrations"))
        cases = [case for case in build_cases(tmp) if not arguments.only or re.search(arguments.only, case.name)]
        server = Server(build, env, os.path.join(tmp, "serve.log"))
        server.start()
        rows = []
        try:
            for case in cases:
                for channel in CHANNELS:
                    if getattr(case, channel) is None:
                        continue
                    if channel == "cli":
                        outcome, message = run_cli(build, case, env)
                    elif channel == "serve":
                        outcome, message = run_serve(server, case)
                    else:
                        outcome, message = run_python(build, case, env)
                    message = message.replace("\t", " ").replace("\r", "\\r").replace("\n", "\\n")
                    rows.append((case.name, channel, outcome, message))
                    print(f"{outcome:<13}{channel:<7}{case.name:<26} {message}", flush=True)
            survived = server.restarts == 0 and server.alive()
        finally:
            server.stop()
    if arguments.out:
        with open(arguments.out, "w") as file:
            file.write("case\tchannel\toutcome\tmessage\n")
            file.writelines("\t".join(row) + "\n" for row in rows)
    print(f"\n{len(cases)} cases, {len(rows)} runs ({', '.join(f'{channel} {sum(r[1] == channel for r in rows)}' for channel in CHANNELS)})")
    print(f"{'':<8}" + "".join(f"{name:>14}" for name in FAILURES + ("refused", "ok")))
    for channel in CHANNELS:
        print(f"{channel:<8}" + "".join(f"{sum(r[1] == channel and r[2] == name for r in rows):>14}"
                                        for name in FAILURES + ("refused", "ok")))
    print(f"serve survived every request: {'yes' if survived else f'no ({server.restarts} restarts)'}")
    bad = sum(row[2] in FAILURES for row in rows)
    print(f"{bad} runs neither refused nor ok; {time.time() - start:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
