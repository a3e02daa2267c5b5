"""A stand-in for a serving engine, for `draftgate tau measure` tests (Python standard library only).

Speaks SGLang's native API or vLLM's OpenAI-compatible one as each version documents it, with the
speculative-decoding statistics of a made-up drafter, and one fault mode per hostile server.
Loopback only, on a port the OS chooses (printed on the first line of stdout), single-threaded
(no thread is ever started), and it stops by itself after --lifetime seconds.

Fields, as the engines write them:
  SGLang /generate meta_info (python/sglang/srt/managers/tokenizer_manager.py): id (the rid),
    completion_tokens, spec_verify_ct, spec_accept_length = completion_tokens / spec_verify_ct,
    and by version <= 0.5.10 spec_accept_token_num / spec_draft_token_num; 0.5.11
    spec_accepted_drafts / spec_proposed_drafts / spec_accept_histogram; >= 0.5.12
    spec_num_correct_drafts / spec_num_proposed_drafts / spec_correct_drafts_histogram with the
    0.5.11 names kept as aliases (sglang#24081). /get_server_info: ServerArgs + version.
  vLLM: /v1/completions (id "cmpl-" + X-Request-Id), per-request metrics.speculative_decoding
    (vllm#48915), /metrics counters vllm:spec_decode_* (_total and _created samples, as
    prometheus_client writes them; the "bare" vintage writes the family name alone),
    process_start_time_seconds, /v1/models, /version. --served-first NAME serves the model as
    vLLM's `--served-model-name NAME MODEL` does: /v1/models lists both, and the counters and the
    answers carry the first name (get_served_model_name: served_model_name[0]).

--served-log FILE gets one JSON line per answered generation: the counts this server served, so a
test computes τ from them independently of draftgate's parsers.
"""

import argparse
import gzip
import http.server
import json
import os
import sys
import time

FAULTS = [
    "none", "invalid-json", "huge-body", "counter-reset", "restart", "other-id", "missing-spec",
    "spec-off", "wrong-model", "hang", "transient-503", "overloaded", "no-id", "batch-answer",
    "metrics-hang", "metrics-503", "metrics-redirect", "redirect-away", "engine-appears",
    "other-client", "bare-and-total", "draft-tokens-a-string", "metrics-cut-off",
    "gzip", "bad-gzip",
]


def request_stats(ids, k):
    """Deterministic statistics of one request: verify steps and drafts accepted per step."""
    seed = sum(ids) + 7 * len(ids)
    steps = 2 + seed % 5
    accepted = [(seed * (j + 3) + j * j) % (k + 1) for j in range(steps)]
    histogram = [accepted.count(a) for a in range(k + 1)]
    return steps, sum(accepted), histogram


class Counters:
    """vLLM's cumulative counters, as /metrics shows them (earlier traffic included)."""

    def __init__(self, k):
        self.k = k
        self.drafts = self.draft_tokens = self.accepted = 0
        self.per_pos = [0] * k
        self.start_time = 1764600000.0
        self.created = 1764600005.0
        for i in range(40):  # earlier traffic: the run is measured as a difference
            self.add(*request_stats([100 + i], k))

    def add(self, steps, accepted, histogram):
        self.drafts += steps
        self.draft_tokens += steps * self.k
        self.accepted += accepted
        for d in range(1, self.k + 1):
            self.per_pos[d - 1] += sum(histogram[d:])

    def reset(self):
        self.drafts = self.draft_tokens = self.accepted = 0
        self.per_pos = [0] * self.k

    def text(self, model, bare, engines=1, bare_too=False):
        """engines: label sets engine="0"… (a later one counts 1000 drafts of its own); bare_too:
        each _total sample also under the bare family name, at twice the value."""
        suffix = "" if bare else "_total"
        labels = 'engine="0",model_name="%s"' % model
        out = ["# HELP process_start_time_seconds Start time of the process since unix epoch.",
               "# TYPE process_start_time_seconds gauge",
               "process_start_time_seconds %r" % self.start_time]
        families = [("vllm:spec_decode_num_drafts", [("", self.drafts)]),
                    ("vllm:spec_decode_num_draft_tokens", [("", self.draft_tokens)]),
                    ("vllm:spec_decode_num_accepted_tokens", [("", self.accepted)]),
                    ("vllm:spec_decode_num_accepted_tokens_per_pos",
                     [(',position="%d"' % i, v) for i, v in enumerate(self.per_pos)])]
        for name, series in families:
            out.append("# TYPE %s%s counter" % (name, suffix))
            for extra, value in series:
                out.append("%s%s{%s%s} %.1f" % (name, suffix, labels, extra, value))
                if bare_too:
                    out.append("%s{%s%s} %.1f" % (name, labels, extra, 2 * value))
                for e in range(1, engines):
                    out.append('%s%s{engine="%d",model_name="%s"%s} %.1f'
                               % (name, suffix, e, model, extra, 1000.0))
            if not bare:
                for extra, _ in series:
                    out.append("%s_created{%s%s} %r" % (name, labels, extra, self.created))
        return "\n".join(out) + "\n"


class StandIn(http.server.BaseHTTPRequestHandler):
    opts = None
    counters = None
    answered = 0  # generations answered, for faults that strike mid-run
    tried = set()  # request ids seen once, for transient-503
    deadline = 0.0

    def log_message(self, *args):
        pass

    # --- plumbing ---
    def send(self, status, body, content_type="application/json"):
        data = body.encode() if isinstance(body, str) else body
        fault = self.opts.fault
        if fault in ("gzip", "bad-gzip"):  # as a compressing proxy does, asked or not
            data = gzip.compress(data) if fault == "gzip" else b"\x1f\x8b not gzip"
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if fault in ("gzip", "bad-gzip"):
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def send_json(self, doc, status=200):
        self.send(status, json.dumps(doc))

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    def served(self, record):
        if self.opts.served_log:
            with open(self.opts.served_log, "a") as f:
                f.write(json.dumps(record) + "\n")

    def model(self):
        return "other/model" if self.opts.fault == "wrong-model" else self.opts.model

    def labelled(self):
        """The name vLLM's counters and answers carry: the first served name."""
        return self.opts.served_first or self.model()

    # --- faults shared by both engines' generation endpoints; True when one answered ---
    def generation_fault(self, request_id):
        fault = self.opts.fault
        if fault == "transient-503" and request_id not in StandIn.tried:
            StandIn.tried.add(request_id)
            self.send_json({"object": "error", "message": "Service Unavailable", "code": 503}, 503)
            return True
        if fault == "overloaded":  # 503 to every try: the retries run out
            self.send_json({"object": "error", "message": "Service Unavailable", "code": 503}, 503)
            return True
        if fault == "invalid-json":
            self.send(200, '{"meta_info": {"id": ')
            return True
        if fault == "huge-body":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(50 << 20))
            self.end_headers()
            try:
                chunk = b" " * (1 << 20)
                for _ in range(50):
                    self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return True
        if fault == "hang":
            self.hang()
            return True
        return False

    def hang(self):
        time.sleep(max(0.0, min(30.0, StandIn.deadline - time.time())))
        self.close_connection = True

    # --- routes ---
    def unauthorized(self):
        """--api-key: as vLLM's and SGLang's middleware, every route but /metrics and /health wants
        "Authorization: Bearer KEY"; True when refused."""
        if not self.opts.api_key or self.path.startswith(("/metrics", "/health")):
            return False
        if self.headers.get("Authorization") == "Bearer " + self.opts.api_key:
            return False
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_json({"error": "Unauthorized"}, 401)
        return True

    def do_GET(self):
        if self.opts.serve_dir:
            return self.serve_file()
        if self.unauthorized():
            return
        routes = {"sglang": {"/get_server_info": self.server_info, "/flush_cache": self.flush},
                  "vllm": {"/v1/models": self.models, "/version": self.version,
                           "/metrics": self.metrics}}[self.opts.engine]
        fault = self.opts.fault
        if fault == "metrics-redirect" and self.path in ("/metrics", "/metrics/"):
            if self.path == "/metrics":  # as an older vLLM's mounted /metrics app answers
                return self.redirect("/metrics/")
            return self.metrics()
        if fault == "redirect-away" and self.path == "/v1/models":
            return self.redirect("http://localhost:%d/v1/models" % self.server.server_port)
        route = routes.get(self.path)
        if route:
            return route()
        self.send_json({"detail": "Not Found"}, 404)

    def redirect(self, location):
        self.send_response(307)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        if self.unauthorized():
            return
        routes = {"sglang": {"/generate": self.generate, "/flush_cache": self.flush},
                  "vllm": {"/v1/completions": self.completion}}[self.opts.engine]
        route = routes.get(self.path)
        if route:
            return route()
        self.send_json({"detail": "Not Found"}, 404)

    def serve_file(self):
        path = os.path.join(self.opts.serve_dir, self.path.lstrip("/"))
        if "/" in self.path.lstrip("/") or not os.path.isfile(path):
            return self.send(404, "not found\n", "text/plain")
        with open(path, "rb") as f:
            self.send(200, f.read(), "text/plain; version=0.0.4")

    # SGLang
    def server_info(self):
        k = self.opts.k
        spec = self.opts.fault != "spec-off"
        self.send_json({
            "model_path": self.model(), "served_model_name": self.labelled(),
            "speculative_algorithm": "DFLASH" if spec else None,
            "speculative_num_steps": k if spec else None,
            "speculative_eagle_topk": 1 if spec else None,
            "speculative_num_draft_tokens": (str(k + 1) if self.opts.fault == "draft-tokens-a-string"
                                             else k + 1) if spec else None,
            "speculative_draft_model_path": "z-lab/drafter" if spec else None,
            "version": self.opts.vintage, "internal_states": [{}]})

    def flush(self):
        self.send(200, "Cache flushed.\n", "text/plain")

    def generate(self):
        req = self.body()
        rid = req["rid"]
        if self.generation_fault(rid):
            return
        k = self.opts.k
        steps, correct, histogram = request_stats(req["input_ids"], k)
        completion = steps + correct + 1  # each step's accepted drafts and bonus; the prefill token
        meta = {"id": "other-request" if self.opts.fault in ("other-id", "batch-answer") else rid,
                "prompt_tokens": len(req["input_ids"]), "completion_tokens": completion,
                "finish_reason": {"type": "length", "length": completion},
                "spec_verify_ct": steps, "spec_accept_length": completion / steps}
        vintage = self.opts.vintage
        proposed = steps * k
        if vintage == "0.5.10":
            meta.update(spec_accept_token_num=correct, spec_draft_token_num=proposed)
        else:
            meta.update(spec_accepted_drafts=correct, spec_proposed_drafts=proposed,
                        spec_accept_histogram=histogram)
            if vintage != "0.5.11":
                meta.update(spec_num_correct_drafts=correct, spec_num_proposed_drafts=proposed,
                            spec_correct_drafts_histogram=histogram)
        meta["spec_accept_rate"] = correct / proposed
        StandIn.answered += 1
        if self.opts.fault == "missing-spec" and StandIn.answered == 2:
            meta = {key: v for key, v in meta.items() if not key.startswith("spec_")}
        self.served({"id": rid, "steps": steps, "correct": correct, "completion_tokens": completion,
                     "histogram": histogram, "input_ids": req["input_ids"]})
        if self.opts.fault == "no-id":
            del meta["id"]
        answer = {"text": "x" * completion, "output_ids": list(range(completion)),
                  "meta_info": meta}
        # a batch's answer: what /generate returns for a list of requests
        self.send_json([answer] if self.opts.fault == "batch-answer" else answer)

    # vLLM
    def models(self):
        names = ([self.opts.served_first] if self.opts.served_first else []) + [self.model()]
        self.send_json({"object": "list", "data": [
            {"id": name, "object": "model", "root": self.model(), "max_model_len": 4096}
            for name in names]})

    def version(self):
        self.send_json({"version": self.opts.vintage})

    def metrics(self):
        fault = self.opts.fault
        if fault == "metrics-hang":
            return self.hang()
        if fault == "metrics-503" and "metrics" not in StandIn.tried:
            StandIn.tried.add("metrics")
            return self.send_json({"object": "error", "message": "Service Unavailable",
                                   "code": 503}, 503)
        if fault == "spec-off":
            return self.send(200, "# TYPE vllm:num_requests_running gauge\n"
                             'vllm:num_requests_running{model_name="%s"} 0.0\n' % self.model(),
                             "text/plain; version=0.0.4")
        if fault == "metrics-cut-off":  # promises more than it sends, then closes
            page = StandIn.counters.text(self.labelled(), False).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(page) + 100))
            self.end_headers()
            self.wfile.write(page)
            self.close_connection = True
            return None
        mid_run = StandIn.answered > 0
        self.send(200, StandIn.counters.text(
            self.labelled(), self.opts.vintage == "metrics-bare",
            engines=2 if fault == "engine-appears" and mid_run else 1,
            bare_too=fault == "bare-and-total"), "text/plain; version=0.0.4")

    def completion(self):
        req = self.body()
        rid = self.headers.get("X-Request-Id", "random")
        if self.generation_fault(rid):
            return
        k = self.opts.k
        steps, accepted, histogram = request_stats(req["prompt"], k)
        StandIn.counters.add(steps, accepted, histogram)
        StandIn.answered += 1
        fault = self.opts.fault
        if fault == "counter-reset" and StandIn.answered == 2:
            StandIn.counters.reset()
        if fault == "other-client" and StandIn.answered == 1:  # drafts of requests not ours
            StandIn.counters.drafts += 1000
            StandIn.counters.draft_tokens += 1000 * k
        if fault == "restart" and StandIn.answered == 2:  # counters go on, the process is new
            StandIn.counters.start_time += 1000
            StandIn.counters.created += 1000
        doc = {"id": "cmpl-other-request" if fault == "other-id" else "cmpl-" + rid,
               "object": "text_completion", "created": int(time.time()), "model": self.labelled(),
               "choices": [{"index": 0, "text": "x" * (steps + accepted),
                            "finish_reason": "length"}],
               "usage": {"prompt_tokens": len(req["prompt"]),
                         "completion_tokens": steps + accepted}}
        per_request = self.opts.vintage == "per-request"
        if per_request and fault not in ("spec-off",) and not (
                fault == "missing-spec" and StandIn.answered == 2):
            doc["metrics"] = {"speculative_decoding": {
                "num_spec_steps": steps, "num_accepted_draft_tokens": accepted,
                "num_draft_tokens": steps * k, "num_spec_tokens": k,
                "mean_acceptance_length": 1 + accepted / steps,
                "draft_acceptance_rate": accepted / (steps * k),
                "acceptance_histogram": histogram}}
        if fault == "no-id":
            del doc["id"]
        self.served({"id": rid, "steps": steps, "accepted": accepted, "histogram": histogram})
        self.send_json(doc)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--engine", choices=["sglang", "vllm"], default="sglang")
    p.add_argument("--vintage", default="0.5.12",
                   help="sglang: 0.5.10 | 0.5.11 | 0.5.12; vllm: per-request | metrics | "
                        "metrics-bare")
    p.add_argument("--fault", choices=FAULTS, default="none")
    p.add_argument("--model", default="Qwen/Qwen3-8B")
    p.add_argument("--served-first", default="",
                   help="vllm: a first served name, which labels the counters and answers; "
                        "sglang: the served_model_name")
    p.add_argument("--k", type=int, default=3)
    p.add_argument("--api-key", default="", help="want this bearer token, as --api-key does")
    p.add_argument("--lifetime", type=float, default=60.0)
    p.add_argument("--served-log", default="")
    p.add_argument("--serve-dir", default="", help="serve the files of DIR on GET instead")
    StandIn.opts = p.parse_args()
    StandIn.counters = Counters(StandIn.opts.k)
    StandIn.deadline = time.time() + StandIn.opts.lifetime
    server = http.server.HTTPServer(("127.0.0.1", 0), StandIn)
    server.timeout = 0.2  # handle_request returns at least this often, so the deadline holds
    print(server.server_port, flush=True)
    try:
        while time.time() < StandIn.deadline:
            server.handle_request()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
